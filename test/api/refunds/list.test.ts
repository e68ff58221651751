import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import type { Insertable } from 'kysely'
import type { RefundsTable } from '../../../src/db/types.ts'
import { onePageMeta } from '../../helpers/assertions.ts'
import { allPages, assertSameRows, getCsv } from '../../helpers/csv.ts'
import { backends, call, paidTransaction, type TestMerchant } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

let keyCounter = 0
const idem = () => `refund-list-${Date.now()}-${keyCounter++}`
const uuids = (page: { data: { uuid: string }[] }) => page.data.map((row) => row.uuid)

for (const backend of backends()) {
  describe(`list refunds (${backend})`, () => {
    const ctx = suiteContext(backend)

    const paid = (merchant: TestMerchant, overrides = {}, mode: 'test' | 'live' = 'test') =>
      paidTransaction(ctx, overrides, { merchant, mode })
    const refund = async (
      merchant: TestMerchant,
      body: Record<string, unknown>,
      mode: 'test' | 'live' = 'test',
    ) => {
      const res = await call(ctx, 'POST', '/integration/refunds', body, {
        as: { merchant, mode },
        auth: 'signature',
        idempotencyKey: idem(),
      })
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }
    const list = async (merchant: TestMerchant, query = '', mode: 'test' | 'live' = 'test') => {
      const res = await call(ctx, 'GET', `/integration/refunds${query}`, undefined, {
        as: { merchant, mode },
      })
      assert.equal(res.statusCode, 200, res.body)
      return res.json()
    }
    /** A refund row written directly, for a status or a date the sandbox does not make. */
    const insertRefund = async (
      merchant: TestMerchant,
      transactionUuid: string,
      overrides: Partial<Insertable<RefundsTable>> & { created_at?: Date },
    ): Promise<string> => {
      const uuid = randomUUID()
      const at = overrides.created_at ?? new Date()
      await ctx.db
        .insertInto('refunds')
        .values({
          uuid,
          merchant_uuid: merchant.uuid,
          mode: 'test',
          transaction_uuid: transactionUuid,
          amount_minor: 1000,
          currency: 'RUB',
          settlement_debit: 0,
          status: 'failed',
          reason: null,
          message: 'Declined by the provider.',
          action_request_id: randomUUID(),
          idempotency_key: null,
          provider_reference: null,
          next_check_at: null,
          succeeded_at: null,
          failed_at: at,
          created_at: at,
          updated_at: at,
          ...overrides,
        })
        .execute()
      return uuid
    }

    it('newest first, each as GET shows it; cursors both ways; every filter; isolation', async () => {
      const m = await ctx.newMerchant()
      await paid(m, { amount: 5_000_000 })
      const txA = await paid(m, { amount: 150000 })
      const txB = await paid(m, { amount: 20000, currency: 'EUR' })
      const old = await insertRefund(m, txA.uuid, { created_at: new Date('2026-10-01T12:00:00Z') })
      const a1 = await refund(m, { transaction_uuid: txA.uuid, amount_minor: 50000, reason: 'one item' })
      const a2 = await refund(m, { transaction_uuid: txA.uuid, amount_minor: 30000 })
      const b1 = await refund(m, { transaction_uuid: txB.uuid })
      // Not listed: another merchant's refund, and this merchant's live one.
      const other = await ctx.newMerchant()
      await paid(other, { amount: 5_000_000 })
      const theirs = await refund(other, { transaction_uuid: (await paid(other)).uuid })
      await ctx.services.merchants.updateMerchant(m.uuid, { settlementHoldSeconds: 0 })
      await paid(m, { amount: 5_000_000 }, 'live')
      const live = await refund(m, { transaction_uuid: (await paid(m, {}, 'live')).uuid }, 'live')

      const all = await list(m)
      assert.deepEqual(uuids(all), [b1.uuid, a2.uuid, a1.uuid, old])
      assert.deepEqual(all.meta, onePageMeta('/integration/refunds'))
      for (const row of all.data) {
        const one = await call(ctx, 'GET', `/integration/refunds/${row.uuid}`, undefined, {
          as: { merchant: m },
        })
        assert.deepEqual(row, one.json())
      }
      // What the payment's refunds add up to is the same on each of its refunds.
      assert.deepEqual(
        all.data
          .filter((r: { transaction_uuid: string }) => r.transaction_uuid === txA.uuid)
          .map((r: { cumulative_refunded_minor: number }) => r.cumulative_refunded_minor),
        [80000, 80000, 80000],
      )
      // Each names its payment by the merchant's own reference, as support is asked about it.
      assert.deepEqual(
        all.data.map((r: { transaction_external_id: string }) => r.transaction_external_id),
        [txB.external_id, txA.external_id, txA.external_id, txA.external_id],
      )
      assert.ok(!uuids(all).includes(theirs.uuid) && !uuids(all).includes(live.uuid))
      assert.deepEqual(uuids(await list(m, '', 'live')), [live.uuid])

      const page1 = await list(m, '?per_page=3')
      assert.deepEqual(uuids(page1), [b1.uuid, a2.uuid, a1.uuid])
      assert.equal(page1.meta.prev_cursor, null)
      const page2 = await list(m, `?per_page=3&cursor=${page1.meta.next_cursor}`)
      assert.deepEqual(uuids(page2), [old])
      assert.equal(page2.meta.next_cursor, null)
      const back = await list(m, `?per_page=3&cursor=${page2.meta.prev_cursor}`)
      assert.deepEqual(uuids(back), uuids(page1))

      assert.deepEqual(uuids(await list(m, '?status=failed')), [old])
      assert.deepEqual(uuids(await list(m, '?status=succeeded,pending')), [b1.uuid, a2.uuid, a1.uuid])
      assert.deepEqual(uuids(await list(m, `?transaction_uuid=${txA.uuid}`)), [a2.uuid, a1.uuid, old])
      assert.deepEqual(uuids(await list(m, '?currency=EUR')), [b1.uuid])
      assert.deepEqual(uuids(await list(m, '?date_to=2026-10-01')), [old])
      assert.deepEqual(uuids(await list(m, '?date_from=2026-10-02')), [b1.uuid, a2.uuid, a1.uuid])
      assert.deepEqual(uuids(await list(m, `?transaction_uuid=${theirs.transaction_uuid}`)), [])

      const filtered = await list(m, `?transaction_uuid=${txA.uuid}&per_page=1`)
      const cursor = filtered.meta.next_cursor
      for (const query of [`?per_page=1&cursor=${cursor}`, `?status=failed&per_page=1&cursor=${cursor}`]) {
        const res = await call(ctx, 'GET', `/integration/refunds${query}`, undefined, { as: { merchant: m } })
        assert.equal(res.statusCode, 422, `${query} ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
      }
      for (const query of [
        '?status=done',
        '?transaction_uuid=nope',
        '?date_from=2026-13-01',
        '?per_page=0',
        '?x=1',
      ]) {
        const res = await call(ctx, 'GET', `/integration/refunds${query}`, undefined, { as: { merchant: m } })
        assert.equal(res.statusCode, 422, query)
        assert.equal(res.json().error.code, 'validation_failed')
      }
      const reversed = await call(
        ctx,
        'GET',
        '/integration/refunds?date_from=2026-11-02&date_to=2026-11-01',
        undefined,
        {
          as: { merchant: m },
        },
      )
      assert.equal(reversed.statusCode, 422)

      // The export: the same rows and filters, as CSV.
      assertSameRows(await getCsv(ctx, '/integration/refunds', { as: { merchant: m } }), all.data)
      assertSameRows(
        await getCsv(ctx, `/integration/refunds?transaction_uuid=${txA.uuid}&status=succeeded`, {
          as: { merchant: m },
        }),
        (await list(m, `?transaction_uuid=${txA.uuid}&status=succeeded`)).data,
      )
    })

    it('exports every refund past a page, hostile reasons escaped', async () => {
      const m = await ctx.newMerchant()
      const tx = await paid(m, { amount: 150000 })
      const hostile = ['=1+1', '+SUM(A1)', '-1', '@cmd', 'fine, "quoted"']
      for (let i = 0; i < 130; i++)
        await insertRefund(m, tx.uuid, {
          created_at: new Date(Date.UTC(2026, 9, 1, 0, 0, Math.floor(i / 2))),
          reason: hostile[i % hostile.length] ?? null,
        })
      const json = await allPages(ctx, '/integration/refunds', { as: { merchant: m } })
      assert.equal(json.length, 130)
      const csv = await getCsv(ctx, '/integration/refunds', { as: { merchant: m } })
      // The columns docs/API.md lists for this export, in its order (new ones only ever at the end).
      assert.equal(
        csv.header.join(','),
        'uuid,transaction_uuid,status,amount_minor,currency,cumulative_refunded_minor,transaction_amount_minor,reason,created_at,succeeded_at,failed_at,action_request_id,message,transaction_external_id',
      )
      assertSameRows(csv, json)
      assert.deepEqual([...new Set(csv.objects.map((row) => row.reason))].sort(), [
        "'+SUM(A1)",
        "'-1",
        "'=1+1",
        "'@cmd",
        'fine, "quoted"',
      ])
    })
  })
}

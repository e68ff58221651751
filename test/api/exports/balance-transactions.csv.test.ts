import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { allPages, expectedCell, getCsv } from '../../helpers/csv.ts'
import { backends, call, paidTransaction, type TestMerchant } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

interface Item {
  uuid: string
  type: string
  amount: number
  currency: string
  balance: string
  source: { type: string; uuid: string }
  created_at: string
}

/** The CSV row an item should be, written from its JSON independently of the service's columns. */
const expectedRow = (item: Item) =>
  [
    item.uuid,
    item.created_at,
    item.type,
    item.balance,
    item.currency,
    item.amount,
    item.source.type,
    item.source.uuid,
  ].map(expectedCell)

let keyCounter = 0

for (const backend of backends()) {
  describe(`balance transactions CSV export (${backend})`, () => {
    const ctx = suiteContext(backend)

    async function activity(merchant: TestMerchant) {
      const as = { merchant }
      const tx = await paidTransaction(ctx, { amount: 1_000_000, currency: 'USD' }, as)
      await paidTransaction(ctx, { amount: 250_000, currency: 'EUR' }, as)
      const refund = await call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: tx.uuid, amount_minor: 30_000 },
        { as, auth: 'signature', idempotencyKey: `bt-csv-${Date.now()}-${keyCounter++}` },
      )
      assert.equal(refund.statusCode, 201, refund.body)
      const payout = await call(
        ctx,
        'POST',
        '/integration/payouts',
        {
          external_id: `bt-csv-${Date.now()}-${keyCounter++}`,
          amount: 5_000,
          currency: 'USD',
          method: 'usdt_wallet',
          destination: { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' },
        },
        { as, auth: 'signature', idempotencyKey: `bt-csv-${Date.now()}-${keyCounter++}` },
      )
      assert.equal(payout.statusCode, 201, payout.body)
      return tx.uuid as string
    }

    it('round-trips against the JSON list, with its filters, and sums to the balances', async () => {
      const merchant = await ctx.newMerchant()
      const txUuid = await activity(merchant)
      const as = { merchant }
      const json = await allPages<Item>(ctx, '/integration/balance-transactions', { as })
      assert.ok(json.length >= 5, `${json.length} items`)
      const csv = await getCsv(ctx, '/integration/balance-transactions', { as })
      assert.deepEqual(csv.header, [
        'uuid',
        'created_at',
        'type',
        'balance',
        'currency',
        'amount',
        'source_type',
        'source_uuid',
      ])
      assert.deepEqual(csv.rows, json.map(expectedRow))
      // Negative amounts stay numbers (no formula escaping): a spreadsheet sums the column.
      assert.ok(csv.objects.some((row) => /^-\d+$/.test(row.amount ?? '')))

      // The finance team's check: the CSV summed per currency and balance is GET /integration/balances.
      const sums = new Map<string, number>()
      for (const row of csv.objects) {
        const key = `${row.currency}/${row.balance}`
        sums.set(key, (sums.get(key) ?? 0) + Number(row.amount))
      }
      const balances = (await call(ctx, 'GET', '/integration/balances', undefined, { as })).json().data
      for (const b of balances as {
        currency: string
        available: number
        pending: number
        reserved: number
      }[])
        for (const kind of ['available', 'pending', 'reserved'] as const)
          assert.equal(sums.get(`${b.currency}/${kind}`) ?? 0, b[kind], `${b.currency} ${kind}`)

      for (const query of [
        'type=refund',
        `source_uuid=${txUuid}`,
        'currency=USDT&type=payout_reserve,refund',
      ]) {
        const filtered = await allPages<Item>(ctx, `/integration/balance-transactions?${query}`, { as })
        assert.ok(filtered.length > 0 && filtered.length < json.length, query)
        const exported = await getCsv(ctx, `/integration/balance-transactions?${query}`, { as })
        assert.deepEqual(exported.rows, filtered.map(expectedRow), query)
      }
    })

    it("never shows another merchant's or the other mode's movements", async () => {
      const merchant = await ctx.newMerchant()
      const other = await ctx.newMerchant()
      await activity(other)
      const tx = await paidTransaction(ctx, {}, { merchant })
      const csv = await getCsv(ctx, '/integration/balance-transactions', { as: { merchant } })
      assert.deepEqual([...new Set(csv.objects.map((row) => row.source_uuid))], [tx.uuid])
      const live = await getCsv(ctx, '/integration/balance-transactions', { as: { merchant, mode: 'live' } })
      assert.equal(live.rows.length, 0)
    })
  })
}

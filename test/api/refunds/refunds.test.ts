import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  backends,
  call,
  eventsOf,
  newTransaction,
  paidTransaction as paidInSandbox,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

let keyCounter = 0
const idem = () => `refund-${Date.now()}-${keyCounter++}`

for (const backend of backends()) {
  describe(`refunds (${backend})`, () => {
    const ctx = suiteContext(backend)

    /** A paid test-mode transaction (its settlement is available at once). */
    const paidTransaction = (merchant: TestMerchant, overrides = {}) =>
      paidInSandbox(ctx, overrides, { merchant })
    /**
     * A merchant with some money already available: a settlement is floored and a refund debit is ceiled
     * (docs/API.md: Transactions, Refunds), so refunding a payment in full costs up to a micro unit more than it
     * brought in.
     */
    const fundedMerchant = async (name: string) => {
      const m = await ctx.newMerchant(name)
      await paidTransaction(m, { amount: 1_000_000 })
      return m
    }
    const refund = (merchant: TestMerchant, body: Record<string, unknown>, key = idem()) =>
      call(ctx, 'POST', '/integration/refunds', body, {
        as: { merchant },
        auth: 'signature',
        idempotencyKey: key,
      })
    const available = async (merchant: TestMerchant) =>
      (await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant } })).json().data[0]
        .available as number

    it('a partial then the rest: statuses, cumulative amounts, events, and the ceil debit of the balance', async () => {
      const m = await fundedMerchant('Refunds')
      const tx = await paidTransaction(m, { amount: 150000 })
      const before = await available(m)

      const first = await refund(m, {
        transaction_uuid: tx.uuid,
        amount_minor: 50000,
        reason: 'Returned one item',
      })
      assert.equal(first.statusCode, 201, first.body)
      const r1 = first.json()
      assert.equal(first.headers.location, `/integration/refunds/${r1.uuid}`)
      assert.deepEqual(
        [
          r1.status,
          r1.amount_minor,
          r1.currency,
          r1.cumulative_refunded_minor,
          r1.transaction_amount_minor,
          r1.reason,
        ],
        ['succeeded', 50000, 'RUB', 50000, 150000, 'Returned one item'],
      )
      assert.ok(r1.succeeded_at)
      assert.equal(r1.transaction_external_id, tx.external_id)
      assert.match(r1.action_request_id, /^[0-9a-f-]{36}$/)
      // ceil(500.00 RUB / 92.15) in micro USDT: 500 / 92.15 = 5.42593597… → 5425936
      assert.equal(await available(m), before - 5425936)
      const afterFirst = (
        await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`, undefined, { as: { merchant: m } })
      ).json()
      assert.deepEqual([afterFirst.status, afterFirst.aggregate_version], ['partially_refunded', 3])

      // Without amount_minor: the whole remaining amount.
      const second = await refund(m, { transaction_uuid: tx.uuid })
      assert.equal(second.statusCode, 201, second.body)
      assert.deepEqual(
        [second.json().amount_minor, second.json().cumulative_refunded_minor],
        [100000, 150000],
      )
      const afterAll = (
        await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`, undefined, { as: { merchant: m } })
      ).json()
      assert.deepEqual([afterAll.status, afterAll.aggregate_version], ['refunded', 4])

      assert.deepEqual(
        (await eventsOf(ctx, tx.uuid)).map((e) => e.event),
        ['transaction.paid', 'transaction.partially_refunded', 'transaction.refunded'],
      )
      const got = await call(ctx, 'GET', `/integration/refunds/${r1.uuid}`, undefined, {
        as: { merchant: m },
      })
      assert.equal(got.statusCode, 200)
      assert.equal(got.json().cumulative_refunded_minor, 150000)
      assert.equal(got.json().transaction_external_id, tx.external_id)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('refuses more than remains (422 refund_exceeds_amount with refundable_minor), and non-paid transactions (409)', async () => {
      const m = await fundedMerchant('Limits')
      const tx = await paidTransaction(m, { amount: 10000 })
      const over = await refund(m, { transaction_uuid: tx.uuid, amount_minor: 10001 })
      assert.equal(over.statusCode, 422)
      assert.equal(over.json().error.code, 'refund_exceeds_amount')
      assert.equal(over.json().error.details.refundable_minor, 10000)
      assert.equal((await refund(m, { transaction_uuid: tx.uuid })).statusCode, 201)
      const done = await refund(m, { transaction_uuid: tx.uuid, amount_minor: 1 })
      assert.equal(done.statusCode, 409, 'a refunded transaction is not paid any more')
      assert.equal(done.json().error.code, 'invalid_state')

      const pending = await call(ctx, 'POST', '/integration/transactions', newTransaction(), {
        as: { merchant: m },
      })
      const notPaid = await refund(m, { transaction_uuid: pending.json().uuid })
      assert.equal(notPaid.statusCode, 409)
      assert.equal(notPaid.json().error.code, 'invalid_state')
    })

    it('needs X-Signature and an Idempotency-Key; another merchant or mode sees 404', async () => {
      const m = await fundedMerchant('Auth')
      const tx = await paidTransaction(m)
      const apiKey = await call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: tx.uuid },
        { as: { merchant: m }, idempotencyKey: idem() },
      )
      assert.equal(apiKey.statusCode, 401)
      assert.equal(apiKey.json().error.code, 'signature_required')
      const noKey = await call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: tx.uuid },
        { as: { merchant: m }, auth: 'signature' },
      )
      assert.equal(noKey.statusCode, 400, noKey.body)
      assert.equal(noKey.json().error.code, 'idempotency_key_required')
      const other = await refund(ctx.other, { transaction_uuid: tx.uuid })
      assert.equal(other.statusCode, 404)
      const live = await call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: tx.uuid },
        { as: { merchant: m, mode: 'live' }, auth: 'signature', idempotencyKey: idem() },
      )
      assert.equal(live.statusCode, 404)
      assert.equal(
        (await call(ctx, 'GET', '/integration/refunds/not-a-uuid', undefined, { as: { merchant: m } }))
          .statusCode,
        404,
      )
    })

    it('a replay with the same key returns the same refund and moves no money again', async () => {
      const m = await fundedMerchant('Replay')
      const tx = await paidTransaction(m, { amount: 20000 })
      const key = idem()
      const first = await refund(m, { transaction_uuid: tx.uuid, amount_minor: 5000 }, key)
      const balance = await available(m)
      const again = await refund(m, { transaction_uuid: tx.uuid, amount_minor: 5000 }, key)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, first.body)
      assert.equal(await available(m), balance)
    })

    it('insufficient available balance: 422 insufficient_balance and nothing is written', async () => {
      const m = await ctx.newMerchant('Live hold')
      const created = await call(ctx, 'POST', '/integration/transactions', newTransaction(), {
        as: { merchant: m, mode: 'live' },
      })
      await call(ctx, 'POST', `/integration/sandbox/transactions/${created.json().uuid}/paid`, undefined, {
        as: { merchant: m, mode: 'live' },
      })
      // Live money is pending for 24 h: nothing is available to refund from yet.
      const res = await call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: created.json().uuid },
        { as: { merchant: m, mode: 'live' }, auth: 'signature', idempotencyKey: idem() },
      )
      assert.equal(res.statusCode, 422, res.body)
      assert.equal(res.json().error.code, 'insufficient_balance')
      assert.equal(
        (
          await ctx.db
            .selectFrom('refunds')
            .select('uuid')
            .where('transaction_uuid', '=', created.json().uuid)
            .execute()
        ).length,
        0,
      )
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('20 refunds at once with distinct keys, summing past the amount: the succeeded ones never exceed it', async () => {
      const m = await fundedMerchant('Concurrent')
      const tx = await paidTransaction(m, { amount: 100000 })
      const results = await Promise.all(
        Array.from({ length: 20 }, () => refund(m, { transaction_uuid: tx.uuid, amount_minor: 7000 })),
      )
      const created = results.filter((r) => r.statusCode === 201)
      const refused = results.filter((r) => r.statusCode !== 201)
      // 14 × 7000 = 98000 fit in 100000; the 15th would exceed it.
      assert.equal(created.length, 14)
      assert.ok(
        refused.every((r) => r.statusCode === 422 && r.json().error.code === 'refund_exceeds_amount'),
        'the rest are refund_exceeds_amount',
      )
      const sum = created.reduce((s, r) => s + r.json().amount_minor, 0)
      assert.ok(sum <= 100000)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })
  })
}

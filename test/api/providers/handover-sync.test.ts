import assert from 'node:assert/strict'
import { beforeEach, describe, it } from 'node:test'
import { suiteAcquirer } from '../../helpers/acquirer.ts'
import { makeOverdue } from '../../helpers/expiry.ts'
import { backends, eventually } from '../../helpers/harness.ts'
import { providerCallbacks } from '../../helpers/rows.ts'
import { FAST_WORKERS, suiteContext, suiteWorkers } from '../../helpers/suite.ts'
import {
  allSent,
  assertCreditedOnce,
  assertPaidOnce,
  callbackLog,
  decide,
  eventNames,
  handedOver,
  handoverOf,
  listeningGateway,
  liveBalance,
  paymentBecomes,
  paymentNow,
  reviewsOf,
  sentAbout,
} from './handover-helpers.ts'

/**
 * Status sync asks a provider 500 ms after it took a payment, then every 200 ms: a test decides the payment at the
 * emulator well before the first ask.
 */
const FIRST_ASK_MS = 500

// Status sync (docs/OPERATIONS.md, Hand-over and status sync): what a provider's callbacks do not say, the worker
// learns by asking the provider, through the same handler as a callback.
for (const backend of backends()) {
  describe(`status sync of handed-over payments (${backend})`, () => {
    const ctx = suiteContext(backend, {
      config: { providerSync: { scheduleMs: [FIRST_ASK_MS, 200], graceMs: 60_000, handoverLeaseMs: 30_000 } },
    })
    const gateway = listeningGateway(ctx)
    const acquirer = suiteAcquirer(ctx, { gateway })
    suiteWorkers(ctx, { ...FAST_WORKERS, payoutIntervalMs: 50 })

    beforeEach(() => acquirer.setFaults({}))

    it('callbacks dropped: the first ask finds the payment paid, once, with its money', async () => {
      await acquirer.setFaults({ drop_callbacks: true })
      const balanceBefore = await liveBalance(ctx, 'USDT')
      const { payment, reference, takenAt } = await handedOver(ctx)
      await decide(acquirer, reference, 'succeeded')
      const paid = await paymentBecomes(ctx, payment.uuid, 'paid')
      assert.equal(paid.aggregate_version, 2)
      // Found at the first ask, one interval after the hand-over: nothing was rescheduled.
      const handover = await handoverOf(ctx, payment.uuid)
      assert.equal(handover?.state, 'final')
      assert.equal(handover?.sync_count, 0)
      assert.equal(handover?.sync_due_at, null)
      assert.ok(new Date(paid.paid_at).getTime() - takenAt.getTime() >= FIRST_ASK_MS, paid.paid_at)
      // No callback was ever sent or received: the provider's answer to the ask is what moved it.
      assert.deepEqual(await allSent(acquirer), [])
      assert.deepEqual(await callbackLog(ctx, reference), [])
      assert.deepEqual(
        (await providerCallbacks(ctx.db, payment.uuid)).map((row) => [
          row.connector,
          row.outcome,
          row.result,
          row.provider_reference,
        ]),
        [['acquirer', 'paid', 'applied', null]],
      )
      await assertPaidOnce(ctx, payment, balanceBefore)
    })

    it('callbacks dropped: a failure is found the same way', async () => {
      await acquirer.setFaults({ drop_callbacks: true })
      const { payment, reference } = await handedOver(ctx)
      await decide(acquirer, reference, 'failed')
      const failed = await paymentBecomes(ctx, payment.uuid, 'failed')
      assert.equal(failed.aggregate_version, 2)
      assert.equal((await handoverOf(ctx, payment.uuid))?.sync_due_at, null)
      assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.failed'])
    })

    it('a payment expired at the gateway and paid at the provider later is found paid, late, with its money', async () => {
      await acquirer.setFaults({ drop_callbacks: true })
      const balanceBefore = await liveBalance(ctx, 'USDT')
      const { payment, reference } = await handedOver(ctx)
      await makeOverdue(ctx.db, payment.uuid)
      await ctx.services.transactions.expireOverdue()
      await paymentBecomes(ctx, payment.uuid, 'expired')
      await decide(acquirer, reference, 'succeeded')
      const paid = await paymentBecomes(ctx, payment.uuid, 'paid')
      assert.equal(paid.aggregate_version, 3)
      assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.expired', 'transaction.paid'])
      assert.deepEqual(
        (await providerCallbacks(ctx.db, payment.uuid)).map((row) => [
          row.connector,
          row.outcome,
          row.result,
        ]),
        [
          ['expiry', 'expired', 'applied'],
          ['acquirer', 'paid', 'applied'],
        ],
      )
      assert.equal((await handoverOf(ctx, payment.uuid))?.sync_due_at, null)
      await assertCreditedOnce(ctx, payment, balanceBefore)
    })

    it('callbacks signed wrongly are refused 401; the status asked from the provider makes the payment paid', async () => {
      await acquirer.setFaults({ wrong_signature: true })
      const { payment, reference } = await handedOver(ctx)
      await decide(acquirer, reference, 'succeeded')
      await paymentBecomes(ctx, payment.uuid, 'paid')
      const [sent] = await sentAbout(acquirer, reference, 1, 4)
      assert.deepEqual(sent?.attempts, [401, 401, 401, 401])
      const log = await callbackLog(ctx, reference)
      assert.equal(log.length, 4)
      assert.ok(log.every((row) => row.verification === 'mismatch' && row.result === 'refused'))
      // The one outcome applied is status sync's (no callback id), not a callback's.
      assert.deepEqual(
        (await providerCallbacks(ctx.db, payment.uuid)).map((row) => [
          row.connector,
          row.result,
          row.provider_reference,
        ]),
        [['acquirer', 'applied', null]],
      )
      const now = await paymentNow(ctx, payment.uuid)
      assert.equal(now.aggregate_version, 2)
      assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])
    })

    it('a status that reports another amount opens a review and leaves the payment unpaid', async () => {
      await acquirer.setFaults({ drop_callbacks: true, amount_delta: 250 })
      const balanceBefore = await liveBalance(ctx, 'USDT')
      const { payment, reference } = await handedOver(ctx)
      await decide(acquirer, reference, 'succeeded')
      const review = await eventually(async () => (await reviewsOf(ctx, payment.uuid))[0])
      assert.equal(review.status, 'open')
      assert.equal(Number(review.reported_amount), payment.amount + 250)
      // Asked again and again, the provider says the same: still one review, still unpaid.
      const asked = (await handoverOf(ctx, payment.uuid))?.sync_count ?? 0
      await eventually(async () => ((await handoverOf(ctx, payment.uuid))?.sync_count ?? 0) >= asked + 2)
      assert.equal((await reviewsOf(ctx, payment.uuid)).length, 1)
      const now = await paymentNow(ctx, payment.uuid)
      assert.equal(now.status, 'pending')
      assert.equal(now.aggregate_version, 1)
      assert.deepEqual(await eventNames(ctx, payment.uuid), [])
      assert.deepEqual(await liveBalance(ctx, 'USDT'), balanceBefore)
    })
  })
}

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { signCallback } from '../../../src/connectors/http-acquirer/signature.ts'
import { AppError } from '../../../src/http/errors.ts'
import { computeFees, convertFloor } from '../../../src/lib/money.ts'
import { suiteAcquirer } from '../../helpers/acquirer.ts'
import { makeOverdue } from '../../helpers/expiry.ts'
import { backends, call, newTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'
import { handoverOf, reviewsOf } from '../providers/handover-helpers.ts'
import { eventRows } from '../webhooks/helpers.ts'

for (const backend of backends()) {
  describe(`payments under review (${backend})`, () => {
    const ctx = suiteContext(backend)
    const acquirer = suiteAcquirer(ctx)
    let sent = 0

    /** A live card payment of `amount` RUB, handed to the acquirer: its JSON and the provider's reference. */
    const handedOver = async (amount = 150000) => {
      const res = await call(ctx, 'POST', '/integration/transactions', newTransaction({ amount }), {
        as: { mode: 'live' },
      })
      assert.equal(res.statusCode, 201, res.body)
      const handover = await ctx.db
        .selectFrom('payment_handovers')
        .selectAll()
        .where('transaction_uuid', '=', res.json().uuid)
        .executeTakeFirstOrThrow()
      assert.equal(handover.state, 'handed_over')
      return { tx: res.json(), reference: handover.provider_reference as string }
    }
    /** The acquirer's signed `payment.succeeded` for `reference`: what the callback log says it did. */
    const reportPaid = async (reference: string, amount: number, currency = 'RUB', id = `evt_${sent++}`) => {
      const body = JSON.stringify({ id, type: 'payment.succeeded', data: { reference, amount, currency } })
      const res = await ctx.app.inject({
        method: 'POST',
        url: `/providers/${acquirer.account.uuid}/callbacks`,
        headers: {
          'content-type': 'application/json',
          ...signCallback([acquirer.secret], `msg_${id}`, new Date(), body),
        },
        payload: body,
      })
      assert.equal(res.statusCode, 200, res.body)
      return res.json().result as string
    }
    /** A payment whose provider reported `reported` RUB (or `currency`) instead: its review is open. */
    const underReview = async (reported: number, currency = 'RUB') => {
      const { tx, reference } = await handedOver()
      assert.equal(await reportPaid(reference, reported, currency), 'review')
      return { tx, reference }
    }
    const payment = (uuid: string) =>
      ctx.db.selectFrom('transactions').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow()
    const entries = (uuid: string) =>
      ctx.db
        .selectFrom('journal_entries as e')
        .innerJoin('journal_lines as l', 'l.entry_uuid', 'e.uuid')
        .select(['e.kind', 'l.amount'])
        .where('e.reference_uuid', '=', uuid)
        .where('l.amount', '>', 0)
        .execute()
    /** The refusal a resolution ends with: its code. */
    const refusal = async (work: Promise<unknown>) => {
      const error = await work.then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      )
      assert.ok(error instanceof AppError, String(error))
      return error.code
    }

    it('a paid for another amount changes nothing until the operator resolves it', async () => {
      const { tx } = await underReview(120000)
      const row = await payment(tx.uuid)
      assert.equal(row.status, 'pending')
      assert.equal(row.aggregate_version, 1)
      assert.deepEqual(await entries(tx.uuid), [])
      assert.deepEqual(await eventRows(ctx, tx.uuid), [])
      const [review] = await reviewsOf(ctx, tx.uuid)
      assert.deepEqual(
        [review?.status, review?.reported_amount, review?.reported_currency],
        ['open', 120000, 'RUB'],
      )
    })

    it('accept: paid for the amount received, fees worked out again, transaction.paid, credited once', async () => {
      const { tx } = await underReview(120000)
      const resolved = await ctx.services.transactions.acceptReview(tx.uuid, 'customer paid less')
      const row = await payment(tx.uuid)
      assert.equal(row.status, 'paid')
      assert.equal(row.amount, 120000)
      const fees = computeFees(120000, row.fee_bps, row.merchant_fee_share_bps)
      assert.equal(row.fee_amount, fees.fee_amount)
      assert.equal(row.gross_amount, fees.gross_amount)
      assert.equal(row.net_amount, fees.net_amount)
      const settlement = convertFloor(fees.net_amount, 'RUB', tx.fx_rate, tx.settlement_currency)
      assert.equal(row.settlement_amount, settlement)
      assert.ok(settlement < tx.settlement_amount, 'less money arrived: less is settled')
      assert.equal(resolved.payment.settlement_amount, settlement)

      const events = await eventRows(ctx, tx.uuid)
      assert.deepEqual(
        events.map((e) => e.event),
        ['transaction.paid'],
      )
      const resource = JSON.parse((events[0] as { body: string }).body).transaction
      assert.equal(resource.amount, 120000)
      assert.equal(resource.settlement_amount, settlement)
      assert.equal(resource.status, 'paid')
      assert.deepEqual(await entries(tx.uuid), [{ kind: 'payment_received', amount: settlement }])

      const [review] = await reviewsOf(ctx, tx.uuid)
      assert.equal(review?.status, 'accepted')
      assert.match(
        review?.resolution ?? '',
        /accepted 1200\.00 RUB instead of 1500\.00 RUB; customer paid less/,
      )
      const handover = await ctx.db
        .selectFrom('payment_handovers')
        .selectAll()
        .where('transaction_uuid', '=', tx.uuid)
        .executeTakeFirstOrThrow()
      assert.deepEqual([handover.state, handover.sync_due_at], ['final', null])

      // Accepted twice: refused, and nothing more is credited or announced.
      assert.equal(await refusal(ctx.services.transactions.acceptReview(tx.uuid)), 'invalid_state')
      assert.equal(await refusal(ctx.services.transactions.refundReview(tx.uuid)), 'invalid_state')
      assert.equal((await entries(tx.uuid)).length, 1)
      assert.equal((await eventRows(ctx, tx.uuid)).length, 1)
      // The provider saying it again changes nothing either.
      assert.equal(
        await reportPaid((await handoverOf(ctx, tx.uuid))?.provider_reference as string, 120000),
        'duplicate',
      )
      assert.equal((await entries(tx.uuid)).length, 1)
      assert.equal((await reviewsOf(ctx, tx.uuid)).length, 1)
    })

    it('two accepts at once: one wins, the other is refused, the money is credited once', async () => {
      const { tx } = await underReview(151000)
      const results = await Promise.allSettled([
        ctx.services.transactions.acceptReview(tx.uuid),
        ctx.services.transactions.acceptReview(tx.uuid),
      ])
      assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected'])
      const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
      assert.equal((rejected.reason as AppError).code, 'invalid_state')
      assert.equal((await entries(tx.uuid)).length, 1)
      assert.deepEqual(
        (await eventRows(ctx, tx.uuid)).map((e) => e.event),
        ['transaction.paid'],
      )
    })

    it('refund: the payment fails, nothing is credited, the review is refunded, a repeat opens none', async () => {
      const { tx, reference } = await underReview(90000)
      const resolved = await ctx.services.transactions.refundReview(tx.uuid)
      assert.equal(resolved.payment.status, 'failed')
      assert.equal(resolved.providerReference, reference)
      assert.equal(resolved.review.account, acquirer.account.name)
      const row = await payment(tx.uuid)
      assert.deepEqual([row.status, row.amount], ['failed', 150000])
      assert.deepEqual(
        (await eventRows(ctx, tx.uuid)).map((e) => e.event),
        ['transaction.failed'],
      )
      assert.deepEqual(await entries(tx.uuid), [])
      const [review] = await reviewsOf(ctx, tx.uuid)
      assert.equal(review?.status, 'refunded')
      assert.match(review?.resolution ?? '', new RegExp(`900\\.00 RUB to be returned.*${reference}`))

      // The provider repeating its report (a lost acknowledgement) neither reopens nor pays it.
      assert.equal(await reportPaid(reference, 90000), 'duplicate')
      assert.equal((await reviewsOf(ctx, tx.uuid)).length, 1)
      assert.equal((await payment(tx.uuid)).status, 'failed')
      assert.equal(await refusal(ctx.services.transactions.refundReview(tx.uuid)), 'invalid_state')
      assert.equal(await refusal(ctx.services.transactions.acceptReview(tx.uuid)), 'invalid_state')
      assert.equal((await eventRows(ctx, tx.uuid)).length, 1)
    })

    it('another currency cannot be accepted, only returned', async () => {
      const { tx } = await underReview(150000, 'KZT')
      assert.equal(await refusal(ctx.services.transactions.acceptReview(tx.uuid)), 'invalid_state')
      assert.equal((await reviewsOf(ctx, tx.uuid))[0]?.status, 'open')
      assert.equal((await payment(tx.uuid)).status, 'pending')
      const resolved = await ctx.services.transactions.refundReview(tx.uuid)
      assert.deepEqual([resolved.review.status, resolved.payment.status], ['refunded', 'failed'])
    })

    it('accepts a review of a payment that expired meanwhile, as a late paid', async () => {
      const { tx } = await underReview(149000)
      await makeOverdue(ctx.db, tx.uuid)
      await ctx.services.transactions.expireOverdue()
      assert.equal((await payment(tx.uuid)).status, 'expired')
      const resolved = await ctx.services.transactions.acceptReview(tx.uuid)
      assert.equal(resolved.payment.status, 'paid')
      assert.deepEqual(
        (await eventRows(ctx, tx.uuid)).map((e) => e.event),
        ['transaction.expired', 'transaction.paid'],
      )
      assert.equal((await entries(tx.uuid)).length, 1)
    })

    it('a payment without a review, an unknown one and a malformed id: not_found', async () => {
      const { tx } = await handedOver()
      for (const uuid of [tx.uuid, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
        assert.equal(await refusal(ctx.services.transactions.acceptReview(uuid)), 'not_found', uuid)
        assert.equal(await refusal(ctx.services.transactions.refundReview(uuid)), 'not_found', uuid)
      }
    })

    it('lists reviews newest first, the open ones alone with open', async () => {
      const { tx: open } = await underReview(100000)
      const { tx: accepted } = await underReview(110000)
      await ctx.services.transactions.acceptReview(accepted.uuid)
      const all = await ctx.services.transactions.reviews()
      const openOnly = await ctx.services.transactions.reviews({ open: true })
      assert.ok(openOnly.every((r) => r.status === 'open' && r.resolved_at === null))
      assert.ok(openOnly.some((r) => r.payment_uuid === open.uuid))
      assert.ok(!openOnly.some((r) => r.payment_uuid === accepted.uuid))
      const shown = all.find((r) => r.payment_uuid === accepted.uuid)
      assert.deepEqual(
        [shown?.status, shown?.amount, shown?.reported_amount, shown?.account, shown?.payment_status],
        ['accepted', 110000, 110000, acquirer.account.name, 'paid'],
      )
      assert.ok(shown?.resolved_at instanceof Date)
      const times = all.map((r) => r.opened_at.getTime())
      assert.deepEqual(
        times,
        [...times].sort((a, b) => b - a),
      )
      assert.equal((await ctx.services.transactions.reviews({ limit: 1 })).length, 1)
    })
  })
}

import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { before, beforeEach, describe, it } from 'node:test'
import { suiteAcquirer } from '../../helpers/acquirer.ts'
import { assertError } from '../../helpers/errors.ts'
import { makeOverdue } from '../../helpers/expiry.ts'
import { backends, call, eventually, newTransaction, type TestMerchant } from '../../helpers/harness.ts'
import { providerCallbacks, rowCounts } from '../../helpers/rows.ts'
import { suiteContext } from '../../helpers/suite.ts'
import {
  allSent,
  assertCreditedOnce,
  assertPaidOnce,
  attemptsOf,
  callbackLog,
  decide,
  emulatorPaymentsFor,
  eventNames,
  handedOver,
  handoverOf,
  listeningGateway,
  liveBalance,
  livePayment,
  paymentBecomes,
  paymentNow,
  postSignedCallback,
  reviewsOf,
  sentAbout,
} from './handover-helpers.ts'

// Live payments handed to the accounts of their route (docs/API.md, Live payments), each account an emulator on a
// local port posting its signed callbacks to the gateway listening on another. No worker runs here: only the
// callbacks move a payment (status sync is in handover-sync.test.ts).
for (const backend of backends()) {
  describe(`live payments handed to routed accounts (${backend})`, () => {
    const ctx = suiteContext(backend)
    const gateway = listeningGateway(ctx)
    // The operator's default route for live card payments.
    const acquirer = suiteAcquirer(ctx, { gateway })
    // An account that fails on purpose, first on the fallback merchant's own route; its time-out is short.
    const flaky = suiteAcquirer(ctx, { name: 'flaky', gateway, methods: [], timeoutMs: 300 })
    let fallbackShop: TestMerchant

    before(async () => {
      fallbackShop = await ctx.newMerchant('Fallback Shop')
      await ctx.services.providers.routes.set(
        { merchantUuid: fallbackShop.uuid, mode: 'live', subject: 'payment', method: 'card' },
        ['flaky', 'acquirer'],
      )
    })
    beforeEach(async () => {
      await acquirer.setFaults({})
      await flaky.setFaults({})
    })

    it('a live card payment is handed over; the signed callback of its success makes it paid, once', async () => {
      const balanceBefore = await liveBalance(ctx, 'USDT')
      const payment = await livePayment(ctx)
      assert.equal(payment.status, 'pending')
      assert.equal(payment.aggregate_version, 1)

      const handover = await handoverOf(ctx, payment.uuid)
      assert.ok(handover)
      assert.equal(handover.account_uuid, acquirer.account.uuid)
      assert.equal(handover.state, 'handed_over')
      assert.match(handover.provider_reference ?? '', /^pay_/)
      assert.equal(handover.redirect_url, `http://emulator.test/pay/${handover.provider_reference}`)
      assert.deepEqual(await attemptsOf(ctx, payment.uuid), [
        {
          position: 0,
          account_uuid: acquirer.account.uuid,
          result: 'accepted',
          provider_reference: handover.provider_reference,
        },
      ])
      // The emulator holds it under the payment's uuid, for its amount.
      const held = await fetch(`${acquirer.base}/v1/payments/${handover.provider_reference}`, {
        headers: { authorization: 'Bearer sk_acquirer' },
      })
      const heldPayment = await held.json()
      assert.equal(heldPayment.order_id, payment.uuid)
      assert.equal(heldPayment.amount, payment.amount)
      assert.equal(heldPayment.currency, payment.currency)
      assert.equal(heldPayment.status, 'pending')

      const reference = handover.provider_reference as string
      await decide(acquirer, reference, 'succeeded')
      const paid = await paymentBecomes(ctx, payment.uuid, 'paid')
      assert.equal(paid.aggregate_version, 2)
      assert.ok(paid.paid_at)
      const [sent] = await sentAbout(acquirer, reference, 1)
      assert.deepEqual(sent?.attempts, [200])
      assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])
      assert.deepEqual(
        (await callbackLog(ctx, reference)).map((row) => [row.verification, row.result, row.event_type]),
        [['verified', 'applied', 'payment.succeeded']],
      )
      // The money arrived: the merchant's, pending for the live hold.
      await assertCreditedOnce(ctx, payment, balanceBefore)
      // Its hand-over is over: status sync will not ask about it.
      assert.equal((await handoverOf(ctx, payment.uuid))?.sync_due_at, null)
    })

    it('a callback sent five times: applied once, then duplicates; one event, the money credited once', async () => {
      await acquirer.setFaults({ duplicate_callbacks: 4 })
      const balanceBefore = await liveBalance(ctx, 'USDT')
      const { payment, reference } = await handedOver(ctx)
      await decide(acquirer, reference, 'succeeded')
      const sent = await sentAbout(acquirer, reference, 5)
      assert.deepEqual(
        sent.map((c) => c.attempts),
        [[200], [200], [200], [200], [200]],
      )
      assert.deepEqual(
        (await callbackLog(ctx, reference)).map((row) => row.result),
        ['applied', 'duplicate', 'duplicate', 'duplicate', 'duplicate'],
      )
      // The operator finds them by the payment (connectors callbacks --about); by another uuid, none.
      const about = await ctx.services.providers.callbacks.list({ about: payment.uuid, limit: 10 })
      assert.deepEqual(about.map((row) => `${row.provider_reference} ${row.result}`).sort(), [
        `${reference} applied`,
        `${reference} duplicate`,
        `${reference} duplicate`,
        `${reference} duplicate`,
        `${reference} duplicate`,
      ])
      assert.deepEqual(await ctx.services.providers.callbacks.list({ about: randomUUID(), limit: 10 }), [])
      const now = await paymentNow(ctx, payment.uuid)
      assert.equal(now.status, 'paid')
      assert.equal(now.aggregate_version, 2)
      await assertPaidOnce(ctx, payment, balanceBefore)
    })

    it('the same callback posted five times at once: applied once, the others duplicates', async () => {
      await acquirer.setFaults({ drop_callbacks: true })
      const { payment, reference } = await handedOver(ctx)
      await decide(acquirer, reference, 'succeeded')
      const answers = await Promise.all(
        Array.from({ length: 5 }, () =>
          postSignedCallback(
            gateway(),
            acquirer,
            'payment.succeeded',
            { reference, amount: payment.amount, currency: payment.currency },
            `evt_${payment.uuid}`,
          ),
        ),
      )
      assert.deepEqual(
        answers.map((res) => res.status),
        [200, 200, 200, 200, 200],
      )
      const results = await Promise.all(answers.map(async (res) => (await res.json()).result))
      assert.deepEqual(results.sort(), ['applied', 'duplicate', 'duplicate', 'duplicate', 'duplicate'])
      const now = await paymentNow(ctx, payment.uuid)
      assert.equal(now.status, 'paid')
      assert.equal(now.aggregate_version, 2)
      assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('callbacks out of order follow the state table: a success after the expiry is paid late, a late failure is stale', async () => {
      // Held back until two wait, then sent newest first.
      await acquirer.setFaults({ reorder_callbacks: 2 })
      const late = await handedOver(ctx)
      const other = await handedOver(ctx)
      await decide(acquirer, late.reference, 'succeeded')
      // While its success is held back, the payment passes its expiry at the gateway.
      await makeOverdue(ctx.db, late.payment.uuid)
      assert.ok((await ctx.services.transactions.expireOverdue()) >= 1)
      assert.equal((await paymentNow(ctx, late.payment.uuid)).status, 'expired')
      await decide(acquirer, other.reference, 'failed')

      const sent = await eventually(async () => {
        const both = (await allSent(acquirer)).filter((c) =>
          [late.reference, other.reference].includes(c.reference),
        )
        return both.length === 2 && both.every((c) => c.attempts.length > 0) ? both : null
      })
      assert.deepEqual(
        sent.map((c) => c.reference),
        [other.reference, late.reference],
      )
      // pending → failed; expired → paid (late), its money credited as any payment's.
      const failed = await paymentBecomes(ctx, other.payment.uuid, 'failed')
      assert.equal(failed.aggregate_version, 2)
      const paid = await paymentBecomes(ctx, late.payment.uuid, 'paid')
      assert.equal(paid.aggregate_version, 3)
      assert.deepEqual(await eventNames(ctx, late.payment.uuid), ['transaction.expired', 'transaction.paid'])
      assert.deepEqual(await eventNames(ctx, other.payment.uuid), ['transaction.failed'])

      // A failure the provider reports after the payment: recorded, not applied.
      const stale = await postSignedCallback(gateway(), acquirer, 'payment.failed', {
        reference: late.reference,
      })
      assert.equal(stale.status, 200)
      assert.equal((await stale.json()).result, 'stale')
      // A payment after the failure: paid, late.
      const afterFailure = await postSignedCallback(gateway(), acquirer, 'payment.succeeded', {
        reference: other.reference,
        amount: other.payment.amount,
        currency: other.payment.currency,
      })
      assert.equal((await afterFailure.json()).result, 'applied')
      const nowPaid = await paymentNow(ctx, other.payment.uuid)
      assert.equal(nowPaid.status, 'paid')
      assert.equal(nowPaid.aggregate_version, 3)
      assert.deepEqual(await eventNames(ctx, other.payment.uuid), ['transaction.failed', 'transaction.paid'])
      const lateNow = await paymentNow(ctx, late.payment.uuid)
      assert.equal(lateNow.status, 'paid')
      assert.equal(lateNow.aggregate_version, 3)
      assert.deepEqual(
        (await callbackLog(ctx, late.reference)).map((row) => row.result),
        ['applied', 'stale'],
      )
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('a callback signed wrongly is refused 401 on every attempt and changes nothing; it makes the status due', async () => {
      await acquirer.setFaults({ wrong_signature: true })
      const { payment, reference } = await handedOver(ctx)
      const before = await handoverOf(ctx, payment.uuid)
      await decide(acquirer, reference, 'succeeded')
      const [sent] = await sentAbout(acquirer, reference, 1, 4)
      assert.deepEqual(sent?.attempts, [401, 401, 401, 401])
      const log = await callbackLog(ctx, reference)
      assert.equal(log.length, 4)
      assert.ok(
        log.every((row) => row.verification === 'mismatch' && row.result === 'refused'),
        JSON.stringify(log),
      )
      const now = await paymentNow(ctx, payment.uuid)
      assert.equal(now.status, 'pending')
      assert.equal(now.aggregate_version, 1)
      assert.deepEqual(await eventNames(ctx, payment.uuid), [])
      assert.deepEqual(await providerCallbacks(ctx.db, payment.uuid), [])
      // The refusal is a hint: status sync is due to ask the provider now, not at its schedule.
      const after = await handoverOf(ctx, payment.uuid)
      assert.ok(before?.sync_due_at && after?.sync_due_at)
      assert.ok(
        after.sync_due_at < before.sync_due_at,
        `${after.sync_due_at.toISOString()} ${before.sync_due_at.toISOString()}`,
      )
      assert.ok(after.sync_due_at.getTime() <= Date.now(), after.sync_due_at.toISOString())
      // One round of status sync asks, and the provider's answer is what makes it paid.
      assert.ok((await ctx.services.transactions.syncHandedOver()) >= 1)
      const paid = await paymentNow(ctx, payment.uuid)
      assert.equal(paid.status, 'paid')
      assert.equal(paid.aggregate_version, 2)
      assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])
      assert.deepEqual(
        (await providerCallbacks(ctx.db, payment.uuid)).map((row) => [row.connector, row.provider_reference]),
        [['acquirer', null]],
      )
    })

    it('a success reported for another amount is not applied: a review opens with the reported amount', async () => {
      await acquirer.setFaults({ amount_delta: -100 })
      const balanceBefore = await liveBalance(ctx, 'USDT')
      const { payment, reference } = await handedOver(ctx)
      await decide(acquirer, reference, 'succeeded')
      const [sent] = await sentAbout(acquirer, reference, 1)
      assert.deepEqual(sent?.attempts, [200])
      const log = await callbackLog(ctx, reference)
      assert.deepEqual(
        log.map((row) => [row.verification, row.result]),
        [['verified', 'review']],
      )
      assert.match(log[0]?.detail ?? '', new RegExp(`reports ${payment.amount - 100} ${payment.currency}`))
      const reviews = await reviewsOf(ctx, payment.uuid)
      assert.equal(reviews.length, 1)
      assert.equal(reviews[0]?.status, 'open')
      assert.equal(reviews[0]?.account_uuid, acquirer.account.uuid)
      assert.equal(Number(reviews[0]?.reported_amount), payment.amount - 100)
      assert.equal(reviews[0]?.reported_currency, payment.currency)
      const now = await paymentNow(ctx, payment.uuid)
      assert.equal(now.status, 'pending')
      assert.equal(now.aggregate_version, 1)
      assert.deepEqual(await eventNames(ctx, payment.uuid), [])
      assert.deepEqual(await liveBalance(ctx, 'USDT'), balanceBefore)
      // The provider saying so again adds nothing: still one open review, the payment still unpaid.
      const again = await postSignedCallback(gateway(), acquirer, 'payment.succeeded', {
        reference,
        amount: payment.amount - 100,
        currency: payment.currency,
      })
      assert.equal((await again.json()).result, 'review')
      assert.equal((await reviewsOf(ctx, payment.uuid)).length, 1)
      assert.equal((await paymentNow(ctx, payment.uuid)).status, 'pending')
    })

    it("a host-to-host payment handed over shows the requisites its provider gave, not the pool's", async () => {
      const key = { merchantUuid: null, mode: 'live', subject: 'payment', method: 'p2p_card' } as const
      await ctx.services.providers.routes.set(key, ['acquirer'])
      try {
        const payment = await livePayment(ctx, { payment_method: 'p2p_card' })
        assert.equal(payment.status, 'pending')
        assert.deepEqual(payment.requisites, {
          card_number: '2200700199990001',
          bank_name: 'Emulator Bank',
          holder_name: 'EMULATOR',
        })
        assert.equal(payment.h2h_url, `http://gateway.test/integration/transactions/${payment.uuid}/h2h`)
        const h2h = await call(ctx, 'GET', `/integration/transactions/${payment.uuid}/h2h`, undefined, {
          as: { mode: 'live' },
        })
        assert.equal(h2h.statusCode, 200, h2h.body)
        assert.deepEqual(h2h.json().requisites, payment.requisites)
        const handover = await handoverOf(ctx, payment.uuid)
        assert.equal(handover?.state, 'handed_over')
        assert.equal(handover?.redirect_url, null)
        const pool = await ctx.db.selectFrom('requisites').select('assigned_count').execute()
        assert.ok(pool.every((row) => Number(row.assigned_count) === 0))
      } finally {
        await ctx.services.providers.routes.clear(key)
      }
    })

    describe('fallback along the route', () => {
      /** A live card payment of the fallback merchant, whose route is flaky, then acquirer. */
      const fallbackPayment = () => livePayment(ctx, {}, fallbackShop)

      const assertTakenBySecond = async (payment: { uuid: string; status: string; amount: number }) => {
        assert.equal(payment.status, 'pending')
        const handover = await handoverOf(ctx, payment.uuid)
        assert.ok(handover)
        assert.equal(handover.state, 'handed_over')
        assert.equal(handover.account_uuid, acquirer.account.uuid)
        const reference = handover.provider_reference as string
        assert.deepEqual(await attemptsOf(ctx, payment.uuid), [
          { position: 0, account_uuid: flaky.account.uuid, result: 'no_answer', provider_reference: null },
          {
            position: 1,
            account_uuid: acquirer.account.uuid,
            result: 'accepted',
            provider_reference: reference,
          },
        ])
        // The page the customer is sent to is the taking account's.
        assert.equal(handover.redirect_url, `http://emulator.test/pay/${reference}`)
        const atSecond = await fetch(`${acquirer.base}/v1/payments/${reference}`, {
          headers: { authorization: 'Bearer sk_acquirer' },
        })
        assert.equal((await atSecond.json()).order_id, payment.uuid)
        // The first account holds nothing the customer could pay, and never had a page to give out.
        assert.deepEqual(await emulatorPaymentsFor(flaky, payment.uuid), [])
        await flaky.setFaults({})
        const atFirst = await fetch(`${flaky.base}/v1/payments/${reference}`, {
          headers: { authorization: 'Bearer sk_flaky' },
        })
        assert.equal(atFirst.status, 404)
        assert.deepEqual(
          (await emulatorPaymentsFor(acquirer, payment.uuid)).map((p) => [p.reference, p.amount]),
          [[reference, payment.amount]],
        )
        // Its outcome comes from the account that took it, as for any payment.
        await decide(acquirer, reference, 'succeeded')
        await paymentBecomes(ctx, payment.uuid, 'paid', fallbackShop)
        assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])
        assert.deepEqual(await allSent(flaky), [])
      }

      it('the first account answers 503: the second takes the payment', async () => {
        await flaky.setFaults({ error_rate: 1 })
        await assertTakenBySecond(await fallbackPayment())
      })

      it('the first account never answers: past its time-out, the second takes the payment', async () => {
        await flaky.setFaults({ timeout_rate: 1 })
        const started = Date.now()
        const payment = await fallbackPayment()
        // The first try waited for its time-out (300 ms), not longer.
        assert.ok(Date.now() - started >= 300)
        await assertTakenBySecond(payment)
      })

      it('the first account answers after its time-out: the second takes the payment, the first page is never given out', async () => {
        await flaky.setFaults({ latency_ms: 600 })
        const payment = await fallbackPayment()
        const handover = await handoverOf(ctx, payment.uuid)
        assert.equal(handover?.account_uuid, acquirer.account.uuid)
        const reference = handover?.provider_reference as string
        assert.deepEqual(
          (await attemptsOf(ctx, payment.uuid)).map((a) => [a.account_uuid, a.result, a.provider_reference]),
          [
            [flaky.account.uuid, 'no_answer', null],
            [acquirer.account.uuid, 'accepted', reference],
          ],
        )
        assert.equal(handover?.redirect_url, `http://emulator.test/pay/${reference}`)
        // The first account made the payment once the gateway had stopped waiting: nobody was given its page.
        const [stranded] = await eventually(async () => {
          const held = await emulatorPaymentsFor(flaky, payment.uuid)
          return held.length ? held : null
        })
        assert.equal(stranded?.status, 'pending')
        assert.notEqual(stranded?.reference, reference)
        assert.ok(!(handover?.redirect_url ?? '').endsWith(stranded?.reference ?? '-'))
        // The hosted page the customer opens sends them to the account that took it, never to the first one's.
        const page = await ctx.app.inject({ method: 'GET', url: new URL(payment.payment_url).pathname })
        assert.equal(page.statusCode, 303)
        assert.equal(page.headers.location, handover?.redirect_url)
        const back = await ctx.app.inject({
          method: 'GET',
          url: `${new URL(payment.payment_url).pathname}?returned=1`,
        })
        assert.equal(back.statusCode, 200)
        assert.ok(!back.body.includes(stranded?.reference ?? '-'))
        await decide(acquirer, reference, 'succeeded')
        await paymentBecomes(ctx, payment.uuid, 'paid', fallbackShop)
        assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])
      })

      it('no account takes the payment: it fails, with its event, and nothing is left to sync', async () => {
        await flaky.setFaults({ timeout_rate: 1 })
        await acquirer.setFaults({ error_rate: 1 })
        const balanceBefore = await liveBalance(ctx, 'USDT', fallbackShop)
        const payment = await fallbackPayment()
        assert.equal(payment.status, 'failed')
        assert.equal(payment.aggregate_version, 2)
        assert.deepEqual(
          (await attemptsOf(ctx, payment.uuid)).map((a) => [a.account_uuid, a.result]),
          [
            [flaky.account.uuid, 'no_answer'],
            [acquirer.account.uuid, 'no_answer'],
          ],
        )
        const handover = await handoverOf(ctx, payment.uuid)
        assert.equal(handover?.state, 'failed')
        assert.equal(handover?.sync_due_at, null)
        assert.equal(handover?.redirect_url, null)
        assert.equal((await paymentNow(ctx, payment.uuid, fallbackShop)).status, 'failed')
        assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.failed'])
        assert.deepEqual(await liveBalance(ctx, 'USDT', fallbackShop), balanceBefore)
        assert.deepEqual(await emulatorPaymentsFor(flaky, payment.uuid), [])
        assert.deepEqual(await emulatorPaymentsFor(acquirer, payment.uuid), [])
      })
    })

    it('outside production, a live payment without a route goes to the simulator', async () => {
      const key = { merchantUuid: null, mode: 'live', subject: 'payment', method: 'card' } as const
      assert.equal(await ctx.services.providers.routes.clear(key), true)
      try {
        const payment = await livePayment(ctx)
        assert.equal(payment.status, 'pending')
        assert.equal(await handoverOf(ctx, payment.uuid), undefined)
        assert.deepEqual(await attemptsOf(ctx, payment.uuid), [])
      } finally {
        await ctx.services.providers.routes.set(key, ['acquirer'])
      }
      // The route back: the next one is handed over again.
      const next = await livePayment(ctx)
      assert.equal((await handoverOf(ctx, next.uuid))?.state, 'handed_over')
    })
  })

  describe(`live payments without a route in production (${backend})`, () => {
    const ctx = suiteContext(backend, { config: { appEnv: 'production' } })

    const rowsOf = async (externalId: string) =>
      ctx.db.selectFrom('transactions').select('uuid').where('external_id', '=', externalId).execute()

    it('a live payment is refused 422 unsupported_payment_method (no_route), and nothing is written', async () => {
      for (const payment_method of ['card', 'p2p_card', 'bank_transfer']) {
        const body = newTransaction({ payment_method })
        const res = await call(ctx, 'POST', '/integration/transactions', body, { as: { mode: 'live' } })
        const error = assertError(res, 422, 'unsupported_payment_method')
        assert.equal(error.details.reason, 'no_route', res.body)
        assert.deepEqual(await rowsOf(body.external_id), [])
      }
      const counts = await rowCounts(ctx.db, [
        'transactions',
        'payment_attempts',
        'payment_handovers',
        'events',
      ])
      assert.deepEqual(counts, [0, 0, 0, 0])
      // The requisites a host-to-host payment would have taken were never handed out.
      const assigned = await ctx.db.selectFrom('requisites').select('assigned_count').execute()
      assert.ok(assigned.every((row) => Number(row.assigned_count) === 0))
    })

    it('a route whose accounts are all disabled is no route', async () => {
      await ctx.services.providers.accounts.add({
        name: 'dormant',
        kind: 'http-acquirer',
        mode: 'live',
        settings: { base_url: 'http://127.0.0.1:9/v1' },
        secrets: { api_key: 'sk_dormant' },
      })
      ctx.secrets.push('sk_dormant')
      await ctx.services.providers.routes.set(
        { merchantUuid: ctx.merchant.uuid, mode: 'live', subject: 'payment', method: 'card' },
        ['dormant'],
      )
      await ctx.services.providers.accounts.setStatus('dormant', 'disabled')
      const body = newTransaction()
      const res = await call(ctx, 'POST', '/integration/transactions', body, { as: { mode: 'live' } })
      assert.equal(assertError(res, 422, 'unsupported_payment_method').details.reason, 'no_route')
      assert.deepEqual(await rowsOf(body.external_id), [])
    })

    it('a test payment still goes to the simulator', async () => {
      const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(), {
        as: { mode: 'test' },
      })
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().status, 'pending')
      assert.equal(await handoverOf(ctx, res.json().uuid), undefined)
    })
  })
}

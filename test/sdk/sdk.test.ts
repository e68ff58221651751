import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import {
  ApiError,
  ConnectionError,
  MerchantGateway,
  MerchantGatewayError,
  TimeoutError,
  type Transaction,
  WebhookVerificationError,
  webhooks,
} from '../../sdk/src/index.ts'
import type { NewTransaction } from '../../src/db/types.ts'
import { WAKE_CHANNEL } from '../../src/modules/webhooks/service.ts'
import { startDispatcher } from '../../src/workers/dispatcher.ts'
import {
  backends,
  createTestContext,
  eventually,
  extId,
  startReceiver,
  type TestContext,
  type TestMerchant,
  transactionRow,
} from '../helpers/harness.ts'
import { closedPort, recordRequests, type Seen, startBlackhole, startCuttingProxy } from './helpers.ts'

/** Fast retries: the tests wait for what the service tells them to wait (Retry-After), not for backoff. */
const RETRY_BASE_MS = 20
const WHSEC = /^whsec_[A-Za-z0-9+/]{43}=$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A card payment body, 1500.00 RUB, with a fresh external_id. */
const payment = (overrides: Partial<Parameters<MerchantGateway['transactions']['create']>[0]> = {}) => ({
  amount: 150000,
  currency: 'RUB',
  payment_method: 'card' as const,
  external_id: extId('sdk'),
  description: 'SDK order',
  ...overrides,
})

const cardPayout = (overrides: Record<string, unknown> = {}) => ({
  external_id: extId('po'),
  amount: 100,
  currency: 'USD',
  method: 'card' as const,
  destination: { card_number: '4111 1111 1111 1111', holder_name: 'A. Smith' },
  ...overrides,
})

/** The error a promise rejects with (fails when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  assert.fail('expected a rejection')
}

/** The ApiError a promise rejects with, checked to be one. */
async function apiError(promise: Promise<unknown>): Promise<ApiError> {
  const error = await rejection(promise)
  assert.ok(error instanceof ApiError, `not an ApiError: ${String(error)}`)
  return error
}

const usdt = async (mg: MerchantGateway) => {
  const { data } = await mg.balances.list()
  const row = data.find((b) => b.currency === 'USDT')
  assert.ok(row, `no USDT balance in ${JSON.stringify(data)}`)
  return row
}

for (const backend of backends()) {
  describe(`SDK against the running service (${backend})`, () => {
    let ctx: TestContext
    let baseUrl: string
    let port: number
    let seen: Seen[]
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let dispatcher: ReturnType<typeof startDispatcher>
    let mg: MerchantGateway

    /** A client for `merchant`'s test key, signed operations included. */
    const clientFor = (merchant: TestMerchant, url = baseUrl, options: { keyId?: boolean } = {}) =>
      new MerchantGateway({
        apiKey: merchant.keys.test.secret,
        ...(options.keyId === false ? {} : { keyId: merchant.keys.test.key_id }),
        baseUrl: url,
        retryBaseMs: RETRY_BASE_MS,
      })

    /** The live-mode client of a merchant. */
    const clientForLive = (merchant: TestMerchant) =>
      new MerchantGateway({ apiKey: merchant.keys.live.secret, baseUrl, retryBaseMs: RETRY_BASE_MS })

    /** A paid card payment of `client`'s merchant (test mode: its money is available at once). */
    const paidPayment = async (client: MerchantGateway, overrides = {}) => {
      const created = await client.transactions.create(payment(overrides))
      const paid = await client.sandbox.transactions.paid(created.uuid)
      assert.equal(paid.status, 'paid')
      return paid
    }

    /** What the service received since `from` (an index into `seen`) for `method` and a path prefix. */
    const received = (from: number, method: string, pathPrefix: string) =>
      seen.slice(from).filter((s) => s.method === method && s.url.startsWith(pathPrefix))

    before(async () => {
      // Webhook retries within a fraction of a second, with the jitter pinned.
      ctx = await createTestContext(backend, {}, { dispatch: { schedule: [0.05, 0.05], random: () => 0.5 } })
      baseUrl = await ctx.app.listen({ port: 0, host: '127.0.0.1' })
      port = Number(new URL(baseUrl).port)
      seen = recordRequests(ctx.app.server)
      receiver = await startReceiver()
      // Only the outbox dispatcher runs (no payout job: a payout stays `processing` until the sandbox says).
      dispatcher = startDispatcher({
        db: ctx.db,
        webhooks: ctx.services.webhooks,
        log: ctx.app.log,
        listen: (onNotify) => ctx.handle.listen(WAKE_CHANNEL, onNotify),
        options: { leaseMs: ctx.services.webhooks.leaseMs, pollMs: 50 },
      })
      mg = clientFor(ctx.merchant)
    })
    after(async () => {
      await dispatcher.stop()
      await receiver.close()
      await ctx.close()
    })

    it('transactions: create, get, getByExternalId, requisites and list answer the service’s resources', async () => {
      const from = seen.length
      const body = payment({ metadata: { order: 'A-1' } })
      const tx = await mg.transactions.create(body)
      assert.match(tx.uuid, UUID)
      assert.equal(tx.status, 'pending')
      assert.equal(tx.amount, body.amount)
      assert.equal(tx.currency, 'RUB')
      assert.equal(tx.external_id, body.external_id)
      assert.deepEqual(tx.metadata, { order: 'A-1' })
      assert.equal(tx.mode, 'test')
      assert.equal(tx.aggregate_version, 1)
      // The POST went with X-Api-Key and a generated Idempotency-Key.
      const [post] = received(from, 'POST', '/integration/transactions')
      assert.equal(post?.auth, 'apiKey')
      assert.match(post?.idempotencyKey ?? '', UUID)
      assert.equal(post?.status, 201)

      assert.deepEqual(await mg.transactions.get(tx.uuid), tx)
      assert.deepEqual(await mg.transactions.getByExternalId(body.external_id), tx)
      // The path is encoded: an external_id with characters a URL path treats specially reads back too.
      const odd = await mg.transactions.create(
        payment({ external_id: `odd:${randomUUID().slice(0, 8)}.x_y-z` }),
      )
      assert.equal((await mg.transactions.getByExternalId(odd.external_id)).uuid, odd.uuid)

      // A host-to-host payment: requisites from the pool, and their own view.
      const h2h = await mg.transactions.create(payment({ payment_method: 'p2p_card' }))
      assert.equal(h2h.payment_method, 'p2p_card')
      const requisites = await mg.transactions.requisites(h2h.uuid)
      assert.equal(requisites.uuid, h2h.uuid)
      assert.equal(requisites.status, 'pending')
      assert.equal(requisites.gross_amount, h2h.gross_amount)
      assert.equal(requisites.requisites.card_number, '2200700112345678')
      assert.deepEqual(requisites.requisites, h2h.requisites)
      // A card payment has no requisites view.
      const none = await apiError(mg.transactions.requisites(tx.uuid))
      assert.equal(none.status, 404)
      assert.equal(none.code, 'not_found')

      // Awaited, a list is its first page, with the filters sent.
      const page = await mg.transactions.list({ search: body.external_id })
      assert.deepEqual(
        page.data.map((t) => t.uuid),
        [tx.uuid],
      )
      assert.equal(page.meta.next_cursor, null)
      const h2hOnly = await mg.transactions.list({ payment_method: 'p2p_card', per_page: 100 })
      assert.ok(h2hOnly.data.some((t) => t.uuid === h2h.uuid))
      assert.ok(h2hOnly.data.every((t) => t.payment_method === 'p2p_card'))
    })

    it('sandbox: paid, failed, expired and failedThenPaid move payments as the provider would', async () => {
      const [a, b, c, d] = (await Promise.all([1, 2, 3, 4].map(() => mg.transactions.create(payment())))) as [
        Transaction,
        Transaction,
        Transaction,
        Transaction,
      ]
      const paid = await mg.sandbox.transactions.paid(a.uuid)
      assert.equal(paid.status, 'paid')
      assert.equal(paid.aggregate_version, 2)
      assert.ok(paid.paid_at)
      const failed = await mg.sandbox.transactions.failed(b.uuid)
      assert.equal(failed.status, 'failed')
      assert.equal(failed.aggregate_version, 2)
      const expired = await mg.sandbox.transactions.expired(c.uuid)
      assert.equal(expired.status, 'expired')
      const late = await mg.sandbox.transactions.failedThenPaid(d.uuid)
      assert.equal(late.status, 'paid')
      assert.equal(late.aggregate_version, 3)
      // A stale outcome changes nothing.
      const stale = await mg.sandbox.transactions.failed(a.uuid)
      assert.equal(stale.status, 'paid')
      assert.equal(stale.aggregate_version, 2)
      assert.equal((await mg.transactions.get(d.uuid)).status, 'paid')
    })

    it('refunds (signed): create, get, list; balances and balance transactions show the debit', async () => {
      const tx = await paidPayment(mg)
      const before = await usdt(mg)
      const from = seen.length
      const refund = await mg.refunds.create({
        transaction_uuid: tx.uuid,
        amount_minor: 50000,
        reason: 'one item back',
      })
      assert.equal(refund.transaction_uuid, tx.uuid)
      assert.equal(refund.amount_minor, 50000)
      assert.equal(refund.status, 'succeeded')
      assert.equal(refund.cumulative_refunded_minor, 50000)
      assert.equal(refund.transaction_amount_minor, 150000)
      assert.equal(refund.reason, 'one item back')
      // Signed with X-Signature (not X-Api-Key), with an Idempotency-Key.
      const [post] = received(from, 'POST', '/integration/refunds')
      assert.equal(post?.auth, 'signature')
      assert.match(post?.idempotencyKey ?? '', UUID)

      assert.deepEqual(await mg.refunds.get(refund.uuid), refund)
      const listed = await mg.refunds.list({ transaction_uuid: tx.uuid })
      assert.deepEqual(listed.data, [refund])
      assert.equal((await mg.transactions.get(tx.uuid)).status, 'partially_refunded')

      // The debit: one `refund` movement on `available`, and the balance down by exactly its amount.
      const moves = await mg.balanceTransactions.list({ source_uuid: refund.uuid })
      assert.equal(moves.data.length, 1)
      const [move] = moves.data
      assert.ok(move)
      assert.equal(move.type, 'refund')
      assert.equal(move.balance, 'available')
      assert.equal(move.currency, 'USDT')
      assert.ok(move.amount < 0)
      assert.deepEqual(move.source, { type: 'refund', uuid: refund.uuid })
      assert.deepEqual(await mg.balanceTransactions.get(move.uuid), move)
      assert.equal((await usdt(mg)).available, before.available + move.amount)
      // The payment's own movements: payment, then settlement (two items).
      const own = await mg.balanceTransactions.list({ source_uuid: tx.uuid }).toArray()
      assert.deepEqual(own.map((m) => m.type).sort(), ['payment', 'settlement', 'settlement'])

      // The summary of the period since the refund: the refund's debit, on the balance it ends at.
      const summary = await mg.balances.summary({ from: move.created_at })
      assert.equal(summary.from, move.created_at)
      const [row] = summary.data.filter((r) => r.currency === 'USDT')
      assert.ok(row)
      assert.equal(row.refunds, move.amount)
      assert.equal(row.closing_balance, (await usdt(mg)).total)
      const [get] = received(from, 'GET', '/integration/balances/summary')
      assert.equal(get?.auth, 'apiKey')
    })

    it('payouts (signed): quote, create, get, list, sandbox completed and failed, and the USDT balance', async () => {
      await paidPayment(mg)
      const quote = await mg.payouts.quote({ amount: 100, currency: 'USD', method: 'card' })
      assert.match(quote.quote_id, UUID)
      assert.equal(quote.amount, 100)
      assert.equal(quote.currency, 'USD')
      assert.equal(quote.amount_usdt_micro, 1_000_000)
      assert.equal(quote.payout_usdt_amount_micro, quote.amount_usdt_micro + quote.fee_usdt_micro)

      const before = await usdt(mg)
      const from = seen.length
      const payout = await mg.payouts.create(cardPayout({ quote_id: quote.quote_id }))
      assert.equal(received(from, 'POST', '/integration/payouts')[0]?.auth, 'signature')
      assert.equal(payout.status, 'processing')
      assert.equal(payout.quote_id, quote.quote_id)
      assert.equal(payout.payout_usdt_amount_micro, quote.payout_usdt_amount_micro)
      assert.deepEqual(payout.destination, { card_number: '411111******1111', holder_name: 'A. Smith' })
      const reserved = await usdt(mg)
      assert.equal(reserved.available, before.available - quote.payout_usdt_amount_micro)
      assert.equal(reserved.reserved, before.reserved + quote.payout_usdt_amount_micro)
      assert.deepEqual(await mg.payouts.get(payout.uuid), payout)
      const listed = await mg.payouts.list({ method: 'card', per_page: 100 })
      assert.ok(listed.data.some((p) => p.uuid === payout.uuid))

      const completed = await mg.sandbox.payouts.completed(payout.uuid)
      assert.equal(completed.status, 'completed')
      assert.ok(completed.completed_at)
      assert.equal((await mg.payouts.get(payout.uuid)).status, 'completed')
      const done = await usdt(mg)
      assert.equal(done.reserved, before.reserved)
      assert.equal(done.available, before.available - quote.payout_usdt_amount_micro)

      // A refused payout gives its whole total back.
      const second = await mg.payouts.create(cardPayout())
      assert.equal(second.status, 'processing')
      const failed = await mg.sandbox.payouts.failed(second.uuid)
      assert.equal(failed.status, 'failed')
      assert.match(failed.failure_reason ?? '', /sandbox/i)
      assert.deepEqual(await usdt(mg).then((b) => [b.available, b.reserved]), [done.available, done.reserved])
      const kinds = await mg.balanceTransactions.list({ source_uuid: second.uuid }).toArray()
      assert.deepEqual(kinds.map((m) => m.type).sort(), [
        'payout_release',
        'payout_release',
        'payout_reserve',
        'payout_reserve',
      ])
    })

    it('rates: the market rates set for the test, as pay-in and payout rates', async () => {
      const rates = await mg.rates.list()
      const rub = rates.data.find((r) => r.currency === 'RUB')
      assert.ok(rub, JSON.stringify(rates))
      assert.equal(Number(rub.pay_in_rate), 92.15)
      assert.equal(Number(rub.payout_rate), 92.15)
      assert.equal(rates.settlement_currency, 'USDT')
      assert.deepEqual(
        ['EUR', 'JPY', 'KWD', 'RUB', 'USD'].filter((c) => rates.data.some((r) => r.currency === c)),
        ['EUR', 'JPY', 'KWD', 'RUB', 'USD'],
      )
    })

    it('webhook: update, get, test; events list and get; deliveries list, get and redeliver', async () => {
      const config = await mg.webhook.update({ url: `${receiver.url}/hooks`, enabled: true })
      ctx.secrets.push(config.secret)
      assert.equal(config.url, `${receiver.url}/hooks`)
      assert.equal(config.enabled, true)
      assert.match(config.secret, WHSEC)
      assert.deepEqual(await mg.webhook.get(), config)

      const test = await mg.webhook.test()
      assert.equal(test.status, 'succeeded')
      assert.equal(test.is_test, true)
      assert.equal(test.event, 'webhook.test')
      assert.equal(test.response_status, 200)
      const testReceived = receiver.received.filter((r) => r.headers['webhook-id'] === test.event_id)
      assert.equal(testReceived.length, 1)
      assert.equal(
        webhooks.verify(testReceived[0]?.body ?? '', testReceived[0]?.headers ?? {}, config.secret).event,
        'webhook.test',
      )
      // A test delivery cannot be redelivered: a 409 the SDK does not retry.
      const from = seen.length
      const refused = await apiError(mg.webhook.deliveries.redeliver(test.uuid))
      assert.equal(refused.status, 409)
      assert.equal(refused.code, 'invalid_state')
      assert.equal(received(from, 'POST', '/integration/webhook/deliveries').length, 1)

      // A real event: the payment becomes paid, the dispatcher delivers transaction.paid.
      const tx = await paidPayment(mg)
      const events = await mg.events.list({ object_uuid: tx.uuid })
      assert.equal(events.data.length, 1)
      const [event] = events.data
      assert.ok(event)
      assert.equal(event.event, 'transaction.paid')
      assert.equal('transaction' in event && event.transaction.uuid, tx.uuid)
      const one = await mg.events.get(event.event_id)
      assert.equal(one.event_id, event.event_id)
      assert.equal(one.event, 'transaction.paid')
      const typed = await mg.events.list({ type: 'transaction.paid', per_page: 100 })
      assert.ok(typed.data.some((e) => e.event_id === event.event_id))
      assert.ok(typed.data.every((e) => e.event === 'transaction.paid'))

      const [first] = await eventually(async () => {
        const got = receiver.received.filter((r) => r.headers['webhook-id'] === event.event_id)
        return got.length ? got : null
      })
      assert.ok(first)
      const delivered = webhooks.verify(first.body, first.headers, config.secret)
      assert.equal(delivered.event, 'transaction.paid')
      const deliveries = await mg.webhook.deliveries.list({ event_id: event.event_id })
      assert.equal(deliveries.data.length, 1)
      const [delivery] = deliveries.data
      assert.ok(delivery)
      assert.equal(delivery.url, `${receiver.url}/hooks`)
      const succeeded = await eventually(async () => {
        const d = await mg.webhook.deliveries.get(delivery.uuid)
        return d.status === 'succeeded' ? d : null
      })
      assert.equal(succeeded.attempts, 1)
      assert.equal(succeeded.is_test, false)
      const testsOnly = await mg.webhook.deliveries.list({ event: 'webhook.test' })
      assert.deepEqual(
        testsOnly.data.map((d) => d.uuid),
        [test.uuid],
      )

      const queued = await mg.webhook.deliveries.redeliver(delivery.uuid)
      assert.equal(queued.uuid, delivery.uuid)
      assert.equal(queued.status, 'pending')
      const [, again] = await eventually(async () => {
        const got = receiver.received.filter((r) => r.headers['webhook-id'] === event.event_id)
        return got.length === 2 ? got : null
      })
      assert.ok(again)
      assert.equal(again.body, first.body)
      assert.equal(webhooks.verify(again.body, again.headers, config.secret).event, 'transaction.paid')
      const twice = await eventually(async () => {
        const d = await mg.webhook.deliveries.get(delivery.uuid)
        return d.status === 'succeeded' && d.attempts === 2 ? d : null
      })
      assert.equal(twice.response_status, 200)
    })

    it('rotation: verify() accepts real deliveries signed with the old and the new secret, and refuses forgeries', async () => {
      const merchant = await ctx.newMerchant('Rotating Shop')
      const client = clientFor(merchant)
      const { secret: old } = await client.webhook.update({ url: `${receiver.url}/rotating`, enabled: true })
      const rotated = await client.webhook.rotateSecret({ overlap_seconds: 3600 })
      ctx.secrets.push(old, rotated.secret)
      const fresh = rotated.secret
      assert.match(fresh, WHSEC)
      assert.notEqual(fresh, old)
      const expiresIn = new Date(rotated.previous_secret_expires_at ?? 0).getTime() - Date.now()
      assert.ok(Math.abs(expiresIn - 3600_000) < 60_000, String(rotated.previous_secret_expires_at))
      assert.deepEqual(await client.webhook.get(), rotated)

      // Two real deliveries during the overlap: a test, and transaction.paid through the dispatcher.
      const test = await client.webhook.test()
      assert.equal(test.status, 'succeeded')
      const tx = await paidPayment(client)
      const [event] = (await client.events.list({ object_uuid: tx.uuid })).data
      assert.ok(event)
      const deliveries = await eventually(async () => {
        const byId = (id: string) => receiver.received.find((r) => r.headers['webhook-id'] === id)
        const a = byId(test.event_id)
        const b = byId(event.event_id)
        return a && b ? [a, b] : null
      })

      const stranger = webhooks.generateSecret()
      assert.match(stranger, WHSEC)
      for (const delivery of deliveries) {
        const { body, headers } = delivery
        const id = String(headers['webhook-id'])
        const timestamp = Number(headers['webhook-timestamp'])
        const signatures = String(headers['webhook-signature']).split(' ')
        assert.equal(signatures.length, 2, 'signed with both secrets during the overlap')
        const expected = JSON.parse(body)

        // Accepted with the old secret, the new one, both, and with fetch Headers or a byte body.
        for (const secrets of [[old], [fresh], [old, fresh], [stranger, old], old, fresh])
          assert.deepEqual(webhooks.verify(body, headers, secrets), expected)
        assert.deepEqual(
          webhooks.verify(Buffer.from(body), new Headers(headers as Record<string, string>), fresh),
          expected,
        )
        // Each secret's signature verifies alone.
        for (const [secret, signature] of [
          [fresh, signatures[0]],
          [old, signatures[1]],
        ] as const)
          assert.deepEqual(
            webhooks.verify(body, { ...headers, 'webhook-signature': signature }, secret),
            expected,
          )
        // Inside the tolerance it still verifies (so the stale refusals below are about time alone).
        assert.doesNotThrow(() =>
          webhooks.verify(body, headers, [old], { now: new Date((timestamp + 299) * 1000) }),
        )

        /** verify() throws WebhookVerificationError, for the reason given (`forged`, `stale`, `missing`…). */
        const refuses = (
          what: string,
          reason: RegExp,
          rawBody: string,
          hdrs: Record<string, string | string[] | undefined>,
          secrets: string | string[] = [old, fresh],
          options: { now?: Date } = {},
        ) =>
          assert.throws(
            () => webhooks.verify(rawBody, hdrs, secrets, options),
            (error: unknown) => error instanceof WebhookVerificationError && reason.test(error.message),
            what,
          )
        const forged = /no signature matches/
        const stale = /webhook-timestamp is -?\d+ s from now/
        // Tampering: the body, the id, the timestamp.
        refuses('a changed body', forged, body.replace('"event":"', '"event":"x'), headers)
        refuses('one byte more', forged, `${body} `, headers)
        refuses('another webhook-id', forged, body, { ...headers, 'webhook-id': `${id}x` })
        refuses('another timestamp', forged, body, { ...headers, 'webhook-timestamp': String(timestamp + 1) })
        // Wrong secrets; and a secret given as an empty list.
        refuses('a stranger’s secret', forged, body, headers, [stranger])
        refuses('no secret', /no secret/, body, headers, [])
        const live = await clientForLive(merchant).webhook.get()
        ctx.secrets.push(live.secret)
        refuses('the live secret', forged, body, headers, [live.secret])
        // Stale: the same delivery 10 minutes later, or 10 minutes early.
        refuses('10 minutes later', stale, body, headers, [old, fresh], {
          now: new Date((timestamp + 600) * 1000),
        })
        refuses('10 minutes early', stale, body, headers, [old, fresh], {
          now: new Date((timestamp - 600) * 1000),
        })
        // A replay re-signed with a real secret but an old timestamp.
        const resigned = webhooks.signHeaders(body, {
          id,
          secrets: [fresh, old],
          timestamp: new Date(Date.now() - 600_000),
        })
        refuses('re-signed 10 minutes ago', stale, body, resigned)
        assert.deepEqual(
          webhooks.verify(body, webhooks.signHeaders(body, { id, secrets: [old] }), old),
          expected,
          'the same signing, now, verifies',
        )
        // Missing headers, one at a time, and a signature with no v1 entry.
        for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
          const { [name]: _gone, ...rest } = headers
          refuses(`without ${name}`, /missing/, body, rest)
        }
        refuses('no v1 signature', forged, body, {
          ...headers,
          'webhook-signature': signatures.map((s) => s.replace(/^v1,/, 'v2,')).join(' '),
        })
        refuses('not unix seconds', /unix seconds/, body, {
          ...headers,
          'webhook-timestamp': `${timestamp}.0`,
        })

        // The standardwebhooks package agrees: both secrets verify, a stranger and a changed body do not.
        const plain = headers as Record<string, string>
        assert.deepEqual(new Webhook(old).verify(body, plain), expected)
        assert.deepEqual(new Webhook(fresh).verify(body, plain), expected)
        assert.throws(() => new Webhook(stranger).verify(body, plain))
        assert.throws(() => new Webhook(fresh).verify(`${body} `, plain))
        // …and each side verifies what the other signs.
        const at = new Date()
        const theirs = new Webhook(fresh).sign(id, at, body)
        assert.deepEqual(
          webhooks.verify(
            body,
            {
              'webhook-id': id,
              'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
              'webhook-signature': theirs,
            },
            fresh,
          ),
          expected,
        )
        assert.deepEqual(
          new Webhook(old).verify(body, webhooks.signHeaders(body, { id, secrets: [fresh, old] })),
          expected,
        )
      }
    })

    it('errors: 404 and 422 are typed and not retried; a signed operation without keyId is never sent', async () => {
      let from = seen.length
      const missing = randomUUID()
      const notFound = await apiError(mg.transactions.get(missing))
      assert.equal(notFound.status, 404)
      assert.equal(notFound.code, 'not_found')
      assert.match(notFound.requestId ?? '', /\S/)
      const gets = received(from, 'GET', `/integration/transactions/${missing}`)
      assert.equal(gets.length, 1, 'a 404 is not retried')
      assert.equal(notFound.requestId, gets[0]?.requestId)
      assert.equal(notFound.errors, null)

      from = seen.length
      const invalid = await apiError(
        mg.transactions.create({
          amount: 0,
          currency: 'RUB',
          payment_method: 'card',
          external_id: 'bad id!',
        }),
      )
      assert.equal(invalid.status, 422)
      assert.equal(invalid.code, 'validation_failed')
      assert.ok(invalid.errors, 'errors per field')
      assert.ok(
        Array.isArray(invalid.errors.amount) && invalid.errors.amount.length > 0,
        JSON.stringify(invalid.errors),
      )
      assert.ok(Array.isArray(invalid.errors.external_id) && invalid.errors.external_id.length > 0)
      assert.equal(received(from, 'POST', '/integration/transactions').length, 1, 'a 422 is not retried')

      // A 409 conflict (a duplicate external_id) is not retried either: it needs a changed request.
      const tx = await mg.transactions.create(payment())
      from = seen.length
      const conflict = await apiError(mg.transactions.create(payment({ external_id: tx.external_id })))
      assert.equal(conflict.status, 409)
      assert.equal(conflict.code, 'conflict')
      assert.deepEqual(conflict.details, { external_id: tx.external_id })
      assert.equal(
        received(from, 'POST', '/integration/transactions').length,
        1,
        'a 409 conflict is not retried',
      )

      // A 401 is not retried.
      from = seen.length
      const stranger = new MerchantGateway({ apiKey: 'sk_test_nobody', baseUrl, retryBaseMs: RETRY_BASE_MS })
      const unauthorized = await apiError(stranger.balances.list())
      assert.equal(unauthorized.status, 401)
      assert.equal(unauthorized.code, 'unauthorized')
      assert.equal(received(from, 'GET', '/integration/balances').length, 1)

      // A signed operation without keyId throws before anything is sent.
      from = seen.length
      const unsigned = clientFor(ctx.merchant, baseUrl, { keyId: false })
      for (const attempt of [
        unsigned.refunds.create({ transaction_uuid: tx.uuid }),
        unsigned.payouts.create(cardPayout()),
      ]) {
        const error = await rejection(attempt)
        assert.ok(error instanceof MerchantGatewayError && !(error instanceof ApiError), String(error))
        assert.match(error.message, /keyId/)
      }
      // The same client reads fine (X-Api-Key needs no key id).
      assert.equal((await unsigned.transactions.get(tx.uuid)).uuid, tx.uuid)
      assert.deepEqual(
        seen.slice(from).map((s) => `${s.method} ${s.url}`),
        [`GET /integration/transactions/${tx.uuid}`],
      )
      // A secret that is not one is refused at construction.
      assert.throws(
        () => new MerchantGateway({ apiKey: ctx.merchant.keys.test.key_id }),
        MerchantGatewayError,
      )
    })

    it('network: no server is a ConnectionError after the retries; a silent one times out, retried with the same key', async () => {
      const dead = new MerchantGateway({
        apiKey: ctx.merchant.keys.test.secret,
        baseUrl: `http://127.0.0.1:${await closedPort()}`,
        maxRetries: 2,
        retryBaseMs: 1,
      })
      const refused = await rejection(dead.balances.list())
      assert.ok(refused instanceof ConnectionError && !(refused instanceof TimeoutError), String(refused))

      const hole = await startBlackhole()
      try {
        const silent = new MerchantGateway({
          apiKey: ctx.merchant.keys.test.secret,
          baseUrl: hole.url,
          maxRetries: 2,
          timeoutMs: 150,
          retryBaseMs: 1,
        })
        const started = Date.now()
        const timedOut = await rejection(silent.transactions.create(payment()))
        assert.ok(timedOut instanceof TimeoutError, String(timedOut))
        assert.ok(Date.now() - started >= 3 * 150)
        assert.equal(hole.requests.length, 3, 'the first attempt and two retries')
        const keys = hole.requests.map((r) => hole.header(r, 'idempotency-key'))
        assert.match(keys[0] ?? '', UUID)
        assert.deepEqual(keys, [keys[0], keys[0], keys[0]])
      } finally {
        await hole.close()
      }
    })

    it('a connection killed mid-POST is retried with the same Idempotency-Key: one refund, one payout, one payment', async () => {
      const proxied = (path: string) => {
        let left = 1
        return startCuttingProxy(port, (line) => line === `POST ${path}` && left-- > 0)
      }
      /** The service's requests for one POST: two, with one key; the first did the work, the second replayed it. */
      const assertOneKeyTwoRequests = (from: number, path: string) => {
        const posts = received(from, 'POST', path)
        assert.equal(posts.length, 2, JSON.stringify(posts))
        const [first, second] = posts as [Seen, Seen]
        assert.match(first.idempotencyKey ?? '', UUID)
        assert.equal(second.idempotencyKey, first.idempotencyKey)
        assert.equal(first.status, 201)
        assert.equal(first.replayed, undefined)
        assert.equal(second.status, 201)
        assert.equal(second.replayed, 'true')
      }

      // A refund.
      const tx = await paidPayment(mg)
      const before = await usdt(mg)
      let proxy = await proxied('/integration/refunds')
      try {
        const from = seen.length
        const refund = await clientFor(ctx.merchant, proxy.url).refunds.create({
          transaction_uuid: tx.uuid,
          amount_minor: 40000,
        })
        assert.deepEqual(proxy.cuts, ['POST /integration/refunds'])
        assertOneKeyTwoRequests(from, '/integration/refunds')
        assert.equal(refund.amount_minor, 40000)
        assert.equal(refund.cumulative_refunded_minor, 40000)
        const all = await mg.refunds.list({ transaction_uuid: tx.uuid })
        assert.deepEqual(
          all.data.map((r) => r.uuid),
          [refund.uuid],
        )
        const debits = await mg.balanceTransactions.list({ source_uuid: refund.uuid })
        assert.equal(debits.data.length, 1)
        assert.equal((await usdt(mg)).available, before.available + (debits.data[0]?.amount ?? 0))
      } finally {
        await proxy.close()
      }

      // A payout.
      proxy = await proxied('/integration/payouts')
      try {
        const beforePayout = await usdt(mg)
        const from = seen.length
        const body = cardPayout()
        const payout = await clientFor(ctx.merchant, proxy.url).payouts.create(body)
        assert.deepEqual(proxy.cuts, ['POST /integration/payouts'])
        assertOneKeyTwoRequests(from, '/integration/payouts')
        assert.equal(payout.external_id, body.external_id)
        const mine = (await mg.payouts.list({ per_page: 100 }).toArray()).filter(
          (p) => p.external_id === body.external_id,
        )
        assert.deepEqual(
          mine.map((p) => p.uuid),
          [payout.uuid],
        )
        const after = await usdt(mg)
        assert.equal(after.reserved, beforePayout.reserved + payout.payout_usdt_amount_micro)
        assert.equal(after.available, beforePayout.available - payout.payout_usdt_amount_micro)
      } finally {
        await proxy.close()
      }

      // A payment.
      proxy = await proxied('/integration/transactions')
      try {
        const from = seen.length
        const body = payment()
        const created = await clientFor(ctx.merchant, proxy.url).transactions.create(body)
        assert.deepEqual(proxy.cuts, ['POST /integration/transactions'])
        assertOneKeyTwoRequests(from, '/integration/transactions')
        const found = await mg.transactions.list({ search: body.external_id })
        assert.deepEqual(
          found.data.map((t) => t.uuid),
          [created.uuid],
        )
      } finally {
        await proxy.close()
      }
    })

    it('lists: for await yields all 250 payments once, in order, a page of 100 at a time; awaited, the first page', async () => {
      const merchant = await ctx.newMerchant('Busy Shop')
      const client = clientFor(merchant)
      const base = Date.parse('2026-03-01T00:00:00.000Z')
      // Some share a millisecond, so pages also break inside runs ordered by uuid alone.
      const rows: NewTransaction[] = Array.from({ length: 250 }, (_, i) =>
        transactionRow(merchant.uuid, {
          created_at: new Date(base + Math.floor(i / 3) * 1000),
          status: i % 5 === 0 ? 'paid' : 'pending',
        }),
      )
      // Noise that must not appear: another merchant's payments and this merchant's live ones.
      const noise = [
        ...Array.from({ length: 20 }, () => transactionRow(ctx.other.uuid)),
        ...Array.from({ length: 20 }, () => transactionRow(merchant.uuid, { mode: 'live' })),
      ]
      await ctx.db
        .insertInto('transactions')
        .values([...rows, ...noise])
        .execute()
      const newestFirst = [...rows].sort((a, b) => {
        const byTime = new Date(b.created_at).getTime() - new Date(a.created_at).getTime()
        return byTime !== 0 ? byTime : a.uuid < b.uuid ? 1 : a.uuid > b.uuid ? -1 : 0
      })
      const expected = newestFirst.map((r) => r.uuid)

      const from = seen.length
      const uuids: string[] = []
      for await (const t of client.transactions.list({ per_page: 100 })) uuids.push(t.uuid)
      assert.equal(uuids.length, 250)
      assert.equal(new Set(uuids).size, 250)
      assert.deepEqual(uuids, expected)
      // Three pages, each one request, the cursor sent with the same filters.
      const pages = received(from, 'GET', '/integration/transactions')
      assert.equal(pages.length, 3)
      assert.ok(pages.every((p) => new URL(p.url, baseUrl).searchParams.get('per_page') === '100'))
      assert.equal(new URL(pages[0]?.url ?? '', baseUrl).searchParams.get('cursor'), null)
      assert.ok(pages.slice(1).every((p) => new URL(p.url, baseUrl).searchParams.get('cursor')))

      const first = await client.transactions.list()
      assert.deepEqual(
        first.data.map((t) => t.uuid),
        expected.slice(0, 25),
      )
      assert.equal(first.meta.per_page, 25)
      assert.ok(first.meta.next_cursor)

      const sizes: number[] = []
      for await (const page of client.transactions.list({ per_page: 100 }).pages())
        sizes.push(page.data.length)
      assert.deepEqual(sizes, [100, 100, 50])
      assert.deepEqual(
        (await client.transactions.list({ per_page: 40 }).toArray(250)).map((t) => t.uuid),
        expected,
      )
      // One more than the limit is refused, not dropped: a shortened list would look complete.
      await assert.rejects(client.transactions.list({ per_page: 40 }).toArray(249), /more than 249 items/)
      // A filter holds on every page.
      const paid = newestFirst.filter((r) => r.status === 'paid').map((r) => r.uuid)
      assert.equal(paid.length, 50)
      const paidSeen: string[] = []
      for await (const t of client.transactions.list({ status: 'paid', per_page: 15 })) paidSeen.push(t.uuid)
      assert.deepEqual(paidSeen, paid)
    })
  })

  describe(`SDK and the rate limit (${backend})`, () => {
    const limits = { perSecond: 1, burst: 2 }
    let ctx: TestContext
    let seen: Seen[]
    let mg: MerchantGateway
    before(async () => {
      ctx = await createTestContext(backend, { rateLimit: limits })
      const baseUrl = await ctx.app.listen({ port: 0, host: '127.0.0.1' })
      seen = recordRequests(ctx.app.server)
      mg = new MerchantGateway({
        apiKey: ctx.merchant.keys.test.secret,
        keyId: ctx.merchant.keys.test.key_id,
        baseUrl,
        retryBaseMs: RETRY_BASE_MS,
      })
    })
    after(() => ctx.close())

    it('a 429 is waited out for Retry-After, then the same request (same key) succeeds once', async () => {
      // The burst: two requests pass; the bucket is then empty, and refills one token a second.
      for (let i = 0; i < limits.burst; i++) assert.equal((await mg.balances.list()).data.length, 1)
      // Without retries the 429 surfaces, typed; it took no token.
      const from = seen.length
      const limited = await apiError(mg.balances.list({ maxRetries: 0 }))
      assert.equal(limited.status, 429)
      assert.equal(limited.code, 'rate_limited')
      assert.deepEqual(limited.details, { limit_per_second: limits.perSecond, burst: limits.burst })
      assert.equal(receivedSince(seen, from, 'GET').length, 1)

      const body = payment()
      const started = Date.now()
      const tx = await mg.transactions.create(body)
      const elapsed = Date.now() - started
      assert.equal(tx.external_id, body.external_id)
      const posts = receivedSince(seen, from, 'POST')
      assert.deepEqual(
        posts.map((p) => p.status),
        [429, 201],
      )
      const [refused, accepted] = posts as [Seen, Seen]
      const retryAfter = Number(refused.retryAfter)
      assert.ok(retryAfter >= 1, `Retry-After: ${refused.retryAfter}`)
      assert.ok(elapsed >= retryAfter * 1000, `waited ${elapsed} ms for Retry-After ${retryAfter} s`)
      // The service's own clock: the retry came no sooner than Retry-After after the 429 was sent.
      assert.ok(
        accepted.at - (refused.doneAt ?? 0) >= retryAfter * 1000 - 5,
        `${accepted.at - (refused.doneAt ?? 0)} ms`,
      )
      assert.equal(accepted.idempotencyKey, refused.idempotencyKey)
      assert.equal(accepted.replayed, undefined)
      // One payment was made (read from the database: another API call would meet the limit again).
      const rows = await ctx.db
        .selectFrom('transactions')
        .select('uuid')
        .where('external_id', '=', body.external_id)
        .execute()
      assert.deepEqual(
        rows.map((r) => r.uuid),
        [tx.uuid],
      )
    })
  })
}

/** What the service received since `from` with `method`, under /integration. */
function receivedSince(seen: Seen[], from: number, method: string): Seen[] {
  return seen.slice(from).filter((s) => s.method === method && s.url.startsWith('/integration/'))
}

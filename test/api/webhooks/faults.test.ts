import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Selectable } from 'kysely'
import { Webhook } from 'standardwebhooks'
import type { WebhookAttemptsTable, WebhookDelivery } from '../../../src/db/types.ts'
import { createSender } from '../../../src/modules/webhooks/delivery.ts'
import { startWorkers } from '../../../src/workers/index.ts'
import { assertFields } from '../../helpers/assertions.ts'
import {
  backends,
  call,
  createTestContext,
  eventually,
  newTransaction,
  type Received,
  startReceiver,
  type TestContext,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { seededRandom } from '../../helpers/random.ts'

type Receiver = Awaited<ReturnType<typeof startReceiver>>
type Attempt = Selectable<WebhookAttemptsTable>

/** What every fault suite needs: deliveries and attempts read straight from the tables. */
function tools(get: () => TestContext) {
  const receivers: Receiver[] = []
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args)
    receivers.push(r)
    return r
  }
  /** A transaction of `merchant` whose events go to `callbackUrl`, paid through the sandbox. */
  const paidTransaction = async (callbackUrl: string | null, merchant?: TestMerchant) => {
    const ctx = get()
    const as = { merchant }
    const created = await call(
      ctx,
      'POST',
      '/integration/transactions',
      newTransaction(callbackUrl ? { callback_url: callbackUrl } : {}),
      { as },
    )
    assert.equal(created.statusCode, 201, created.body)
    const tx = created.json()
    const paid = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`, undefined, {
      as,
    })
    assert.equal(paid.statusCode, 200, paid.body)
    return tx as { uuid: string }
  }
  /** The deliveries of a transaction's events. */
  const deliveriesOf = (txUuid: string) =>
    get()
      .db.selectFrom('webhook_deliveries')
      .innerJoin('events', 'events.uuid', 'webhook_deliveries.event_id')
      .selectAll('webhook_deliveries')
      .select('events.body as event_body')
      .where('events.aggregate_uuid', '=', txUuid)
      .execute() as Promise<(WebhookDelivery & { event_body: string })[]>
  /** Waits for the one delivery of a transaction to reach `status`. */
  const settled = (txUuid: string, status: 'succeeded' | 'failed', timeoutMs = 5000) =>
    eventually(async () => {
      const rows = await deliveriesOf(txUuid)
      assert.ok(rows.length <= 1, `one delivery per event, got ${rows.length}`)
      return rows[0]?.status === status ? rows[0] : null
    }, timeoutMs)
  const attemptsOf = (deliveryUuid: string) =>
    get()
      .db.selectFrom('webhook_attempts')
      .selectAll()
      .where('delivery_uuid', '=', deliveryUuid)
      .orderBy('attempt')
      .execute() as Promise<Attempt[]>
  const secretOf = async (merchant?: TestMerchant) =>
    (await call(get(), 'GET', '/integration/webhook', undefined, { as: { merchant } })).json()
      .secret as string

  /**
   * Every attempt carries the event's webhook-id and the event's stored body byte for byte (the delivery keeps
   * no copy of it), and signs a fresh timestamp: its own start time, not the first attempt's.
   */
  function assertSameEventFreshTimestamps(
    delivery: WebhookDelivery & { event_body: string },
    received: Received[],
    attempts: Attempt[],
    secret: string,
  ) {
    assert.equal(received.length, attempts.length, 'one request per recorded attempt')
    assert.equal(delivery.body, null, "an event's delivery reads the event's body")
    received.forEach((request, i) => {
      const attempt = attempts[i]
      assert.ok(attempt, `attempt ${i + 1} is recorded`)
      assert.equal(request.headers['webhook-id'], delivery.event_id)
      assert.equal(request.body, delivery.event_body)
      assert.equal(JSON.parse(request.body).event_id, delivery.event_id)
      assert.equal(
        request.headers['webhook-timestamp'],
        String(Math.floor(attempt.started_at.getTime() / 1000)),
        `attempt ${i + 1} signs its own start time`,
      )
      // …and that is the time it was sent (whole seconds), not a time remembered from an earlier attempt.
      const sentAt = Number(request.headers['webhook-timestamp'])
      assert.ok(
        Math.abs(sentAt - request.at / 1000) <= 1.5,
        `attempt ${i + 1}: timestamp ${sentAt}, received ${request.at}`,
      )
      assert.doesNotThrow(() =>
        new Webhook(secret).verify(request.body, request.headers as Record<string, string>),
      )
    })
  }

  return {
    receiver,
    paidTransaction,
    deliveriesOf,
    settled,
    attemptsOf,
    secretOf,
    assertSameEventFreshTimestamps,
    closeReceivers: () => Promise.all(receivers.map((r) => r.close())),
  }
}

for (const backend of backends()) {
  describe(`webhook faults: failures, timeouts and retries (${backend})`, () => {
    let ctx: TestContext
    let workers: ReturnType<typeof startWorkers>
    const t = tools(() => ctx)
    // Three retries 200 ms (±20 %) apart: 4 attempts in all. Attempts time out after 1.5 s: long enough that
    // a receiver that answers at once is never timed out on a loaded machine.
    const schedule = [0.2, 0.2, 0.2]
    before(async () => {
      ctx = await createTestContext(
        backend,
        {},
        {
          sender: createSender({ allowPrivateNetworks: true, timeoutMs: 1500 }),
          dispatch: { schedule, random: seededRandom(7) },
        },
      )
      workers = startWorkers(ctx.handle, ctx.services, ctx.app.log, { dispatcher: { pollMs: 50 } })
    })
    after(async () => {
      // Receivers first: a hanging request ends at once, so the workers have nothing to wait for.
      await t.closeReceivers()
      await workers?.stop()
      await ctx?.close()
    })

    it('a 500 then a 200: delivered on the retry, and both attempts are in the log', async () => {
      const receiver = await t.receiver((_req, i) =>
        i === 0 ? { status: 500, body: 'database is down' } : { status: 200, body: 'ok' },
      )
      const tx = await t.paidTransaction(`${receiver.url}/callbacks`)
      const delivery = await t.settled(tx.uuid, 'succeeded')

      const view = (await call(ctx, 'GET', `/integration/webhook/deliveries/${delivery.uuid}`)).json()
      assertFields(view, {
        status: 'succeeded',
        attempts: 2,
        response_status: 200,
        response_body: 'ok',
        error: null,
        next_attempt_at: null,
      })

      const attempts = await t.attemptsOf(delivery.uuid)
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.response_status, a.response_body, a.error]),
        [
          [1, 500, 'database is down', 'HTTP 500'],
          [2, 200, 'ok', null],
        ],
      )
      assert.equal(new Set(attempts.map((a) => a.uuid)).size, 2)
      // The retry waited for its (jittered) delay: at least 80 % of 200 ms after the first reply.
      const [first, second] = receiver.received
      assert.ok(first && second, 'two requests')
      assert.ok(second.at - first.at >= 160, `retried after ${second.at - first.at} ms`)
      t.assertSameEventFreshTimestamps(delivery, receiver.received, attempts, await t.secretOf())
    })

    it('a hanging endpoint: the attempt times out, is recorded as such, and the retry succeeds', async () => {
      const receiver = await t.receiver((_req, i) => (i === 0 ? 'hang' : { status: 200 }))
      const tx = await t.paidTransaction(`${receiver.url}/slow`)
      const delivery = await t.settled(tx.uuid, 'succeeded', 15_000)
      assert.equal(delivery.attempts, 2)

      const attempts = await t.attemptsOf(delivery.uuid)
      const [timedOut, retried] = attempts
      assert.ok(attempts.length === 2 && timedOut && retried, `${attempts.length} attempts`)
      assert.equal(timedOut.response_status, null)
      assert.equal(timedOut.response_body, null)
      assert.match(timedOut.error ?? '', /timed out after 1500 ms/)
      assert.ok(timedOut.duration_ms >= 1400, `gave up after ${timedOut.duration_ms} ms`)
      assert.ok(timedOut.duration_ms < 10_000, `gave up after ${timedOut.duration_ms} ms`)
      assert.equal(retried.response_status, 200)
      assert.equal(retried.error, null)
      t.assertSameEventFreshTimestamps(delivery, receiver.received, attempts, await t.secretOf())
    })

    it('after the last scheduled attempt the delivery is failed, and no further attempt is made', async () => {
      const receiver = await t.receiver(() => ({ status: 500 }))
      const tx = await t.paidTransaction(`${receiver.url}/broken`)
      const delivery = await t.settled(tx.uuid, 'failed')
      assert.equal(delivery.attempts, schedule.length + 1)
      assert.equal(receiver.received.length, schedule.length + 1)

      const view = (await call(ctx, 'GET', `/integration/webhook/deliveries/${delivery.uuid}`)).json()
      assert.equal(view.status, 'failed')
      assert.equal(view.attempts, 4)
      assert.equal(view.next_attempt_at, null)
      assert.equal(view.error, 'HTTP 500')

      const attempts = await t.attemptsOf(delivery.uuid)
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.response_status]),
        [
          [1, 500],
          [2, 500],
          [3, 500],
          [4, 500],
        ],
      )
      t.assertSameEventFreshTimestamps(delivery, receiver.received, attempts, await t.secretOf())

      // A later event reaching the same endpoint proves the dispatcher moved on without a fifth attempt.
      const marker = await t.paidTransaction(`${receiver.url}/broken`)
      await eventually(async () => (await t.deliveriesOf(marker.uuid))[0]?.attempts === 1)
      assert.equal((await t.attemptsOf(delivery.uuid)).length, 4)
    })

    it('a timeout on every attempt also ends failed, each attempt timed out', async () => {
      const receiver = await t.receiver(() => 'hang')
      const tx = await t.paidTransaction(`${receiver.url}/never`)
      const delivery = await t.settled(tx.uuid, 'failed', 30_000)
      const attempts = await t.attemptsOf(delivery.uuid)
      assert.equal(attempts.length, 4)
      for (const a of attempts) assert.match(a.error ?? '', /timed out after 1500 ms/)
      assert.match(delivery.error ?? '', /timed out/)
      t.assertSameEventFreshTimestamps(delivery, receiver.received, attempts, await t.secretOf())
    })

    it('a delivery sends its own body when it has one; without one and without its event it fails at once, unsent', async () => {
      const receiver = await t.receiver(() => ({ status: 200, body: 'ok' }))
      const at = new Date()
      const uuid = '01a22600-0000-7000-8000-0000000000aa'
      const queue = (row: { uuid: string; event_id: string; body: string | null }) =>
        ctx.handle.db
          .insertInto('webhook_deliveries')
          .values({
            ...row,
            merchant_uuid: ctx.merchant.uuid,
            mode: 'test',
            event: 'transaction.paid',
            url: `${receiver.url}/callbacks`,
            target: new URL(receiver.url).host,
            status: 'pending',
            attempts: 0,
            next_attempt_at: at,
            is_test: false,
            created_at: at,
            updated_at: at,
          })
          .execute()
      // A row written before migration 0015 keeps its copy, and that is what goes out.
      const copied = '{"event":"transaction.paid","event_id":"01a22600-0000-7000-8000-0000000000bb"}'
      await queue({
        uuid: '01a22600-0000-7000-8000-0000000000ba',
        event_id: '01a22600-0000-7000-8000-0000000000bb',
        body: copied,
      })
      await eventually(async () => receiver.received.length === 1 || null)
      assert.equal(receiver.received[0]?.body, copied)
      // An event's delivery keeps no body; with its event gone (nothing deletes one while it is pending) it has none.
      await queue({ uuid, event_id: '01a22600-0000-7000-8000-0000000000ab', body: null })
      const delivery = await eventually(async () => {
        const row = await ctx.handle.db
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('uuid', '=', uuid)
          .executeTakeFirstOrThrow()
        return row.status === 'pending' ? null : row
      })
      assert.equal(delivery.status, 'failed')
      assert.equal(delivery.attempts, 1)
      assert.equal(delivery.error, 'not sent: the event of this delivery no longer exists')
      assert.equal(delivery.next_attempt_at, null)
      assert.deepEqual(
        (await t.attemptsOf(uuid)).map((a) => [a.attempt, a.response_status, a.error]),
        [[1, null, 'not sent: the event of this delivery no longer exists']],
      )
      assert.equal(receiver.received.length, 1, 'only the delivery with a body was sent')
    })

    it('nothing is delivered to a target other than the intended one', async () => {
      const configured = await t.receiver()
      const own = await t.receiver()
      const otherMerchants = await t.receiver()
      const put = await call(ctx, 'PUT', '/integration/webhook', { url: `${configured.url}/hooks` })
      assert.equal(put.statusCode, 200, put.body)
      const putOther = await call(
        ctx,
        'PUT',
        '/integration/webhook',
        { url: `${otherMerchants.url}/hooks` },
        { as: { merchant: ctx.other } },
      )
      assert.equal(putOther.statusCode, 200, putOther.body)

      // The callback_url takes precedence over the configured URL; each merchant has its own configuration.
      const viaConfig = await t.paidTransaction(null)
      const viaCallback = await t.paidTransaction(`${own.url}/own`)
      const ofOther = await t.paidTransaction(null, ctx.other)
      const deliveries = await Promise.all(
        [viaConfig, viaCallback, ofOther].map((tx) => t.settled(tx.uuid, 'succeeded')),
      )
      assert.deepEqual(
        deliveries.map((d) => d.url),
        [`${configured.url}/hooks`, `${own.url}/own`, `${otherMerchants.url}/hooks`],
      )
      // At least once: on a loaded machine an attempt can time out after the receiver got it, and the
      // retry brings the same event again. What matters here is where events go, not how often.
      const received = (r: Receiver) => [...new Set(r.events().map((e) => e.transaction.uuid))]
      assert.deepEqual(received(configured), [viaConfig.uuid])
      assert.deepEqual(received(own), [viaCallback.uuid])
      assert.deepEqual(received(otherMerchants), [ofOther.uuid])
      // Signed with the secret of the merchant it belongs to, and no other.
      const [otherRequest] = otherMerchants.received
      assert.ok(otherRequest, 'the other merchant got its event')
      const headers = otherRequest.headers as Record<string, string>
      assert.doesNotThrow(() => new Webhook(putOther.json().secret).verify(otherRequest.body, headers))
      assert.throws(() => new Webhook(put.json().secret).verify(otherRequest.body, headers))

      // Leave the configuration as the other tests expect it: no URL.
      await call(ctx, 'PUT', '/integration/webhook', { url: null })
      await call(ctx, 'PUT', '/integration/webhook', { url: null }, { as: { merchant: ctx.other } })
    })

    it('redirects are not followed: a 3xx is a failed attempt and its Location gets nothing', async () => {
      const elsewhere = await t.receiver()
      const receiver = await t.receiver(() => ({
        status: 307,
        headers: { location: `${elsewhere.url}/stolen` },
      }))
      const tx = await t.paidTransaction(`${receiver.url}/moved`)
      const delivery = await t.settled(tx.uuid, 'failed')
      const attempts = await t.attemptsOf(delivery.uuid)
      assert.deepEqual(
        attempts.map((a) => [a.response_status, a.error]),
        Array.from({ length: 4 }, () => [307, 'HTTP 307']),
      )
      assert.equal(receiver.received.length, 4)
      assert.equal(elsewhere.received.length, 0)
    })
  })

  describe(`webhook faults: Retry-After and per-target isolation (${backend})`, () => {
    let ctx: TestContext
    let workers: ReturnType<typeof startWorkers>
    const t = tools(() => ctx)
    // The first retry is due 3 s after a failure, so a Retry-After of 3…6 s is honoured as sent.
    const schedule = [3, 3]
    before(async () => {
      ctx = await createTestContext(
        backend,
        {},
        {
          sender: createSender({ allowPrivateNetworks: true, timeoutMs: 10_000 }),
          dispatch: { schedule, random: seededRandom(11) },
        },
      )
      workers = startWorkers(ctx.handle, ctx.services, ctx.app.log, {
        dispatcher: { pollMs: 50, concurrency: 4, perTargetCap: 2 },
      })
    })
    after(async () => {
      await t.closeReceivers()
      await workers?.stop()
      await ctx?.close()
    })

    it('Retry-After is honoured within [delay, 2 × delay]', async () => {
      const inFiveSeconds = () => new Date(Date.now() + 5000).toUTCString()
      const cases = [
        { retryAfter: () => '1', min: 3000, max: 3000 },
        { retryAfter: () => '4', min: 4000, max: 4000 },
        { retryAfter: () => '3600', min: 6000, max: 6000 },
        // An HTTP date: whole seconds from now, so 4 or 5 s.
        { retryAfter: inFiveSeconds, min: 4000, max: 5000 },
      ]
      const started = await Promise.all(
        cases.map(async (c) => {
          const receiver = await t.receiver((_req, i) =>
            i === 0 ? { status: 503, headers: { 'retry-after': c.retryAfter() } } : { status: 200 },
          )
          const tx = await t.paidTransaction(`${receiver.url}/busy`)
          return { ...c, receiver, tx }
        }),
      )
      for (const { tx, min, max } of started) {
        const delivery = await eventually(async () => {
          const [row] = await t.deliveriesOf(tx.uuid)
          return row?.attempts === 1 ? row : null
        })
        assert.equal(delivery.status, 'pending')
        assert.equal(delivery.response_status, 503)
        const [attempt] = await t.attemptsOf(delivery.uuid)
        assert.ok(attempt, 'the first attempt is recorded')
        // The delay counts from the end of the attempt.
        const ended = attempt.started_at.getTime() + attempt.duration_ms
        const delay = (delivery.next_attempt_at as Date).getTime() - ended
        assert.ok(delay >= min - 5 && delay <= max + 1000, `waits ${delay} ms, expected ${min}…${max}`)
        const view = (await call(ctx, 'GET', `/integration/webhook/deliveries/${delivery.uuid}`)).json()
        assert.equal(view.next_attempt_at, (delivery.next_attempt_at as Date).toISOString())
      }

      // The one that asked for 4 s is retried no earlier, with the same event and a new timestamp.
      const asked4s = started[1]
      assert.ok(asked4s, 'the Retry-After: 4 case')
      const { tx, receiver } = asked4s
      const delivery = await t.settled(tx.uuid, 'succeeded', 10_000)
      const [first, second] = receiver.received
      assert.ok(first && second, `${receiver.received.length} requests`)
      assert.ok(second.at - first.at >= 4000 - 5, `retried after ${second.at - first.at} ms`)
      const attempts = await t.attemptsOf(delivery.uuid)
      t.assertSameEventFreshTimestamps(delivery, receiver.received, attempts, await t.secretOf())
      assert.ok(
        Number(second.headers['webhook-timestamp']) > Number(first.headers['webhook-timestamp']),
        'the retry signs a later timestamp',
      )
    })

    it("one merchant's hanging endpoint does not delay another merchant's deliveries", async () => {
      const slow = await t.receiver(() => 'hang')
      const fast = await t.receiver()
      // More deliveries to the hanging host than the dispatcher has slots (4): without a per-target cap
      // they would take every slot for the 10 s timeout.
      const stuck = []
      for (let i = 0; i < 6; i++) stuck.push(await t.paidTransaction(`${slow.url}/hang`))
      await eventually(async () => slow.received.length >= 2)

      const startedAt = Date.now()
      const tx = await t.paidTransaction(`${fast.url}/hooks`, ctx.other)
      const delivery = await t.settled(tx.uuid, 'succeeded', 5000)
      const took = Date.now() - startedAt
      assert.ok(took < 5000, `delivered after ${took} ms`)
      assert.equal(delivery.attempts, 1)
      assert.deepEqual(
        fast.events().map((e) => e.transaction.uuid),
        [tx.uuid],
      )

      // The cap held: two requests in flight to the hanging host, the other four waiting unattempted.
      assert.equal(slow.received.length, 2)
      const rows = (await Promise.all(stuck.map((s) => t.deliveriesOf(s.uuid)))).flat()
      assert.equal(rows.length, 6)
      assert.equal(rows.filter((r) => r.locked_by !== null && r.attempts === 0).length >= 2, true)
      assert.ok(
        rows.every((r) => r.status === 'pending' && r.attempts === 0),
        'no attempt to the hanging host has finished',
      )
      const received = new Set(slow.received.map((r) => r.headers['webhook-id']))
      assert.equal(received.size, 2)
      for (const id of received)
        assert.ok(
          rows.some((r) => r.event_id === id),
          `${id} is one of the six`,
        )
    })
  })
}

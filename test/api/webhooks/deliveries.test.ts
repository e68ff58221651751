import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { assertFields } from '../../helpers/assertions.ts'
import {
  backends,
  call,
  eventually,
  type Received,
  startReceiver,
  type TestContext,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { suiteContext, suiteReceiver, suiteWorkers } from '../../helpers/suite.ts'
import {
  attemptRows,
  createTx,
  deliveryRows,
  eventRows,
  FAST_DISPATCH,
  putConfig,
  type Receiver,
  receivedAbout,
  receivedFor,
  simulate,
  verify,
} from './helpers.ts'

const DELIVERIES = '/integration/webhook/deliveries'
const PATH = `http://gateway.test${DELIVERIES}`
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const DELIVERY_KEYS = [
  'attempts',
  'created_at',
  'duration_ms',
  'error',
  'event',
  'event_id',
  'is_test',
  'last_attempt_at',
  'next_attempt_at',
  'response_body',
  'response_status',
  'status',
  'url',
  'uuid',
]

async function sendTest(ctx: TestContext, merchant: TestMerchant) {
  const res = await call(ctx, 'POST', '/integration/webhook/test', undefined, { as: { merchant } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

async function getDelivery(ctx: TestContext, uuid: string, merchant: TestMerchant) {
  const res = await call(ctx, 'GET', `${DELIVERIES}/${uuid}`, undefined, { as: { merchant } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

async function list(ctx: TestContext, merchant: TestMerchant, query: Record<string, string> = {}) {
  const qs = new URLSearchParams(query).toString()
  const res = await call(ctx, 'GET', `${DELIVERIES}${qs ? `?${qs}` : ''}`, undefined, { as: { merchant } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

/** A server that answers 200 and then streams its body without end, until the client hangs up. */
async function startEndlessServer() {
  let closed = false
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      const chunk = 'y'.repeat(1024)
      const timer = setInterval(() => res.write(chunk), 1)
      res.on('close', () => {
        clearInterval(timer)
        closed = true
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    closed: () => closed,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

for (const backend of backends()) {
  describe(`POST /integration/webhook/test and the delivery log (${backend})`, () => {
    /** What the receiver answers next. */
    let answer: { status: number; body?: string } = { status: 200, body: 'ok' }
    const ctx = suiteContext(backend, { services: FAST_DISPATCH })
    const receiver = suiteReceiver(ctx, () => answer)
    const answering = async <T>(reply: typeof answer, run: () => Promise<T>): Promise<T> => {
      answer = reply
      try {
        return await run()
      } finally {
        answer = { status: 200, body: 'ok' }
      }
    }

    it('422 when no URL is configured, also after the URL was removed', async () => {
      const merchant = await ctx.newMerchant()
      for (const step of ['never set', 'removed']) {
        const res = await call(ctx, 'POST', '/integration/webhook/test', undefined, { as: { merchant } })
        assert.equal(res.statusCode, 422, `${step}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
        assert.ok(res.json().error.errors.url)
        await putConfig(ctx, { url: `${receiver.url}/h` }, { merchant })
        await putConfig(ctx, { url: null }, { merchant })
      }
      assert.deepEqual((await list(ctx, merchant)).data, [])
    })

    it('200 with the delivery after its one attempt; the receiver got a verifiable webhook.test', async () => {
      const merchant = await ctx.newMerchant()
      const { secret } = await putConfig(ctx, { url: `${receiver.url}/hooks?via=test` }, { merchant })
      ctx.secrets.push(secret)
      const before = Date.now()
      const delivery = await sendTest(ctx, merchant)
      assert.deepEqual(Object.keys(delivery).sort(), DELIVERY_KEYS)
      assertFields(delivery, {
        event: 'webhook.test',
        url: `${receiver.url}/hooks?via=test`,
        status: 'succeeded',
        attempts: 1,
        response_status: 200,
        response_body: 'ok',
        error: null,
        is_test: true,
        next_attempt_at: null,
      })
      assert.match(delivery.last_attempt_at, TIMESTAMP)
      assert.match(delivery.created_at, TIMESTAMP)
      assert.ok(Number.isInteger(delivery.duration_ms) && delivery.duration_ms >= 0)

      const [received, ...more] = receivedFor(receiver, delivery.event_id)
      assert.ok(received)
      assert.equal(more.length, 0)
      assert.match(String(received.headers['content-type']), /^application\/json/)
      assert.ok(Math.abs(Number(received.headers['webhook-timestamp']) * 1000 - before) < 10_000)
      assert.doesNotThrow(() => verify(secret, received))
      const body = JSON.parse(received.body)
      assert.equal(body.event, 'webhook.test')
      assert.equal(body.event_id, delivery.event_id)
      assert.equal(body.schema_version, '1')
      assert.match(body.occurred_at, TIMESTAMP)
      // It is in the log like any delivery.
      assert.deepEqual(await getDelivery(ctx, delivery.uuid, merchant), delivery)
      assert.deepEqual((await list(ctx, merchant)).data, [delivery])
    })

    it('a receiver answering 500: status failed after one attempt, nothing scheduled', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
      const delivery = await answering({ status: 500, body: 'boom' }, () => sendTest(ctx, merchant))
      assert.equal(delivery.status, 'failed')
      assert.equal(delivery.attempts, 1)
      assert.equal(delivery.response_status, 500)
      assert.equal(delivery.response_body, 'boom')
      assert.equal(typeof delivery.error, 'string')
      assert.equal(delivery.next_attempt_at, null)
      const row = await ctx.db
        .selectFrom('webhook_deliveries')
        .select(['status', 'next_attempt_at'])
        .where('uuid', '=', delivery.uuid)
        .executeTakeFirstOrThrow()
      assert.deepEqual(row, { status: 'failed', next_attempt_at: null })
      assert.equal((await attemptRows(ctx, delivery.uuid)).length, 1)
    })

    it('an unreachable endpoint: failed, no response status, the error says why', async () => {
      const merchant = await ctx.newMerchant()
      const gone = await startReceiver()
      const url = `${gone.url}/hooks`
      await gone.close()
      await putConfig(ctx, { url }, { merchant })
      const delivery = await sendTest(ctx, merchant)
      assert.equal(delivery.status, 'failed')
      assert.equal(delivery.attempts, 1)
      assert.equal(delivery.response_status, null)
      assert.equal(delivery.response_body, null)
      assert.ok(delivery.error && delivery.error.length > 0)
    })

    it('response_body keeps the first 4 KiB of a longer reply, without splitting a character', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
      const ascii = await answering({ status: 200, body: `${'x'.repeat(4096)}${'z'.repeat(12000)}` }, () =>
        sendTest(ctx, merchant),
      )
      assert.equal(ascii.status, 'succeeded')
      assert.equal(ascii.response_body, 'x'.repeat(4096))

      // 'é' is two bytes in UTF-8: 2048 of them fill 4 KiB exactly; an odd offset must not leave half of one.
      const wide = await answering({ status: 200, body: `a${'é'.repeat(3000)}` }, () =>
        sendTest(ctx, merchant),
      )
      const kept = wide.response_body as string
      assert.ok(Buffer.byteLength(kept) <= 4096, `${Buffer.byteLength(kept)} bytes kept`)
      assert.ok(Buffer.byteLength(kept) >= 4094)
      assert.equal(kept, `a${'é'.repeat((Buffer.byteLength(kept) - 1) / 2)}`)
      assert.ok(!kept.includes('\uFFFD'))

      const failed = await answering({ status: 502, body: 'e'.repeat(20000) }, () => sendTest(ctx, merchant))
      assert.equal(failed.response_body, 'e'.repeat(4096))
    })

    it('a reply that never ends is cut off after the first 16 KiB: the attempt completes', async () => {
      const merchant = await ctx.newMerchant()
      const endless = await startEndlessServer()
      try {
        await putConfig(ctx, { url: `${endless.url}/hooks` }, { merchant })
        const started = Date.now()
        const delivery = await sendTest(ctx, merchant)
        assert.equal(delivery.status, 'succeeded', JSON.stringify(delivery))
        assert.equal(delivery.response_status, 200)
        assert.equal(delivery.response_body, 'y'.repeat(4096))
        // Well inside the 15 s delivery timeout: it stopped reading, it did not wait for the end.
        assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`)
        await eventually(async () => endless.closed())
      } finally {
        await endless.close()
      }
    })

    it('GET /deliveries/{uuid}: 404 for an unknown or malformed uuid, another merchant, the other mode', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
      const mine = await sendTest(ctx, merchant)
      const other = await ctx.newMerchant()
      await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant: other })
      const theirs = await sendTest(ctx, other)

      const cases: [string, TestMerchant, 'test' | 'live'][] = [
        ['01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10', merchant, 'test'],
        ['not-a-uuid', merchant, 'test'],
        [`${mine.uuid}0`, merchant, 'test'],
        [mine.uuid.slice(0, -1), merchant, 'test'],
        [theirs.uuid, merchant, 'test'],
        [theirs.uuid, merchant, 'live'],
        [mine.uuid, other, 'test'],
        [mine.uuid, merchant, 'live'],
      ]
      for (const [uuid, as, mode] of cases) {
        const res = await call(ctx, 'GET', `${DELIVERIES}/${uuid}`, undefined, { as: { merchant: as, mode } })
        assert.equal(res.statusCode, 404, `${uuid} as ${mode}: ${res.body}`)
        assert.equal(res.json().error.code, 'not_found')
      }
      assert.equal((await getDelivery(ctx, mine.uuid, merchant)).uuid, mine.uuid)
      assert.equal((await getDelivery(ctx, theirs.uuid, other)).uuid, theirs.uuid)
    })

    it('the list: newest first, cursor pagination both ways, meta.path', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
      const sent = []
      for (let i = 0; i < 5; i++) sent.push(await sendTest(ctx, merchant))
      const newest = [...sent].reverse().map((d) => d.uuid)

      const all = await list(ctx, merchant)
      assert.deepEqual(
        all.data.map((d: { uuid: string }) => d.uuid),
        newest,
      )
      assert.deepEqual(all.meta, { per_page: 25, next_cursor: null, prev_cursor: null, path: PATH })

      const page1 = await list(ctx, merchant, { per_page: '2' })
      assert.deepEqual(
        page1.data.map((d: { uuid: string }) => d.uuid),
        newest.slice(0, 2),
      )
      assert.equal(page1.meta.prev_cursor, null)
      assert.equal(page1.meta.per_page, 2)
      assert.equal(page1.meta.path, PATH)
      assert.equal(typeof page1.meta.next_cursor, 'string')
      const page2 = await list(ctx, merchant, { per_page: '2', cursor: page1.meta.next_cursor })
      assert.deepEqual(
        page2.data.map((d: { uuid: string }) => d.uuid),
        newest.slice(2, 4),
      )
      assert.equal(typeof page2.meta.prev_cursor, 'string')
      const page3 = await list(ctx, merchant, { per_page: '2', cursor: page2.meta.next_cursor })
      assert.deepEqual(
        page3.data.map((d: { uuid: string }) => d.uuid),
        newest.slice(4),
      )
      assert.equal(page3.meta.next_cursor, null)

      const back2 = await list(ctx, merchant, { per_page: '2', cursor: page3.meta.prev_cursor })
      assert.deepEqual(back2, page2)
      const back1 = await list(ctx, merchant, { per_page: '2', cursor: back2.meta.prev_cursor })
      assert.deepEqual(back1, page1)
    })

    it('filters status and event, with pagination inside a filter', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
      const ok1 = await sendTest(ctx, merchant)
      const bad = await answering({ status: 500 }, () => sendTest(ctx, merchant))
      const ok2 = await sendTest(ctx, merchant)
      // No worker runs in this suite: these two stay pending.
      const paidTx = await createTx(ctx, {}, { merchant })
      await simulate(ctx, paidTx.uuid, 'paid', { merchant })
      const failedTx = await createTx(ctx, {}, { merchant })
      await simulate(ctx, failedTx.uuid, 'failed', { merchant })
      const [paid] = await deliveryRows(ctx, paidTx.uuid)
      const [failed] = await deliveryRows(ctx, failedTx.uuid)
      assert.ok(paid && failed)

      const uuids = async (query: Record<string, string>) =>
        (await list(ctx, merchant, query)).data.map((d: { uuid: string }) => d.uuid)
      assert.deepEqual(await uuids({ status: 'succeeded' }), [ok2.uuid, ok1.uuid])
      assert.deepEqual(await uuids({ status: 'failed' }), [bad.uuid])
      assert.deepEqual(await uuids({ status: 'pending' }), [failed.uuid, paid.uuid])
      assert.deepEqual(await uuids({ event: 'webhook.test' }), [ok2.uuid, bad.uuid, ok1.uuid])
      assert.deepEqual(await uuids({ event: 'transaction.paid' }), [paid.uuid])
      assert.deepEqual(await uuids({ event: 'transaction.failed', status: 'pending' }), [failed.uuid])
      assert.deepEqual(await uuids({ event: 'transaction.failed', status: 'succeeded' }), [])
      assert.deepEqual(await uuids({ event: 'payout.completed' }), [])
      // One event's deliveries (the dashboard's payment page asks this way).
      assert.deepEqual(await uuids({ event_id: paid.event_id }), [paid.uuid])
      assert.deepEqual(await uuids({ event_id: paid.event_id, status: 'succeeded' }), [])
      assert.deepEqual(await uuids({ event_id: ok1.event_id }), [ok1.uuid])
      const pending = (await list(ctx, merchant, { status: 'pending' })).data[0]
      assert.equal(pending.attempts, 0)
      assert.equal(pending.last_attempt_at, null)
      assert.match(pending.next_attempt_at, TIMESTAMP)
      assert.equal(pending.is_test, false)

      const first = await list(ctx, merchant, { event: 'webhook.test', per_page: '2' })
      assert.deepEqual(
        first.data.map((d: { uuid: string }) => d.uuid),
        [ok2.uuid, bad.uuid],
      )
      const second = await list(ctx, merchant, {
        event: 'webhook.test',
        per_page: '2',
        cursor: first.meta.next_cursor,
      })
      assert.deepEqual(
        second.data.map((d: { uuid: string }) => d.uuid),
        [ok1.uuid],
      )
      assert.equal(second.meta.next_cursor, null)

      // A cursor must be followed with the filters it was issued under.
      const queries: Record<string, string>[] = [
        { per_page: '2', cursor: first.meta.next_cursor },
        { event: 'transaction.paid', per_page: '2', cursor: first.meta.next_cursor },
        { event: 'webhook.test', status: 'failed', per_page: '2', cursor: first.meta.next_cursor },
      ]
      for (const query of queries) {
        const res = await call(ctx, 'GET', `${DELIVERIES}?${new URLSearchParams(query)}`, undefined, {
          as: { merchant },
        })
        assert.equal(res.statusCode, 422, res.body)
        assert.ok(res.json().error.errors.cursor, res.body)
      }
    })

    it('invalid query values are 422 naming the parameter', async () => {
      const merchant = await ctx.newMerchant()
      const cases: [string, string][] = [
        ['status=done', 'status'],
        ['status=SUCCEEDED', 'status'],
        ['status=', 'status'],
        ['event=transaction.unknown', 'event'],
        ['event=transaction', 'event'],
        ['event_id=not-a-uuid', 'event_id'],
        ['per_page=0', 'per_page'],
        ['per_page=101', 'per_page'],
        ['per_page=abc', 'per_page'],
        ['cursor=not-a-cursor', 'cursor'],
        [`cursor=${Buffer.from('["n","2026-01-01T00:00:00.000Z","x","y"]').toString('base64url')}`, 'cursor'],
      ]
      for (const [query, field] of cases) {
        const res = await call(ctx, 'GET', `${DELIVERIES}?${query}`, undefined, { as: { merchant } })
        assert.equal(res.statusCode, 422, `${query}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
        assert.ok(res.json().error.errors[field], `${query}: ${res.body}`)
      }
    })

    it('the list shows only the caller merchant and mode', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: `${receiver.url}/t` }, { merchant })
      await putConfig(ctx, { url: `${receiver.url}/l` }, { merchant, mode: 'live' })
      const test = await sendTest(ctx, merchant)
      const res = await call(ctx, 'POST', '/integration/webhook/test', undefined, {
        as: { merchant, mode: 'live' },
      })
      assert.equal(res.statusCode, 200, res.body)
      const live = res.json()
      assert.equal(live.url, `${receiver.url}/l`)
      assert.deepEqual(
        (await list(ctx, merchant)).data.map((d: { uuid: string }) => d.uuid),
        [test.uuid],
      )
      const liveList = await call(ctx, 'GET', DELIVERIES, undefined, { as: { merchant, mode: 'live' } })
      assert.deepEqual(
        liveList.json().data.map((d: { uuid: string }) => d.uuid),
        [live.uuid],
      )
      assert.deepEqual((await list(ctx, await ctx.newMerchant())).data, [])
    })
  })

  describe(`redelivery, no retries for tests, and 410 Gone (${backend})`, () => {
    const ctx = suiteContext(backend, { services: FAST_DISPATCH })
    suiteWorkers(ctx)

    /** Runs `body` with a receiver of its own, closed afterwards. */
    async function withReceiver<T>(
      respond: Parameters<typeof startReceiver>[0],
      body: (receiver: Receiver) => Promise<T>,
    ): Promise<T> {
      const receiver = await startReceiver(respond)
      try {
        return await body(receiver)
      } finally {
        await receiver.close()
      }
    }

    const deliveryOf = async (txUuid: string) => {
      const [row, ...more] = await deliveryRows(ctx, txUuid)
      assert.ok(row)
      assert.equal(more.length, 0)
      return row
    }
    /** A new transaction of `merchant` (`overrides` on its body), reported paid, and its one delivery row. */
    const paidDelivery = async (merchant: TestMerchant, overrides: Record<string, unknown> = {}) => {
      const tx = await createTx(ctx, overrides, { merchant })
      await simulate(ctx, tx.uuid, 'paid', { merchant })
      return { tx, row: await deliveryOf(tx.uuid) }
    }
    /** The delivery as the API shows it, once it has `status` (and passes `also`). */
    const deliveryWhen = (
      uuid: string,
      merchant: TestMerchant,
      status: string,
      // biome-ignore lint/suspicious/noExplicitAny: the delivery is read as the API's JSON.
      also: (delivery: any) => boolean = () => true,
    ) =>
      eventually(async () => {
        const d = await getDelivery(ctx, uuid, merchant)
        return d.status === status && also(d) ? d : null
      })

    it('a test delivery answered 500 is not retried', async () => {
      const merchant = await ctx.newMerchant()
      await withReceiver(
        (req) => ({ status: JSON.parse(req.body).event === 'webhook.test' ? 500 : 200 }),
        async (receiver) => {
          await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
          const delivery = await sendTest(ctx, merchant)
          assert.equal(delivery.status, 'failed')
          assert.equal(delivery.attempts, 1)
          assert.equal(delivery.next_attempt_at, null)
          // An event sent after it goes through the running dispatcher; once it has arrived, the test
          // delivery has had every chance to be retried (the retry schedule here is 50 ms).
          const marker = await createTx(ctx, {}, { merchant })
          await simulate(ctx, marker.uuid, 'paid', { merchant })
          await eventually(async () => receivedAbout(receiver, marker.uuid).length === 1)
          await eventually(async () => (await deliveryOf(marker.uuid)).status === 'succeeded')
          assert.equal(receivedFor(receiver, delivery.event_id).length, 1)
          const after = await getDelivery(ctx, delivery.uuid, merchant)
          assert.equal(after.status, 'failed')
          assert.equal(after.attempts, 1)
          assert.equal((await attemptRows(ctx, delivery.uuid)).length, 1)
        },
      )
    })

    it('redeliver: 202, then a fresh attempt with the same webhook-id and body', async () => {
      const merchant = await ctx.newMerchant()
      await withReceiver(undefined, async (receiver) => {
        const { secret } = await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
        ctx.secrets.push(secret)
        const { tx, row } = await paidDelivery(merchant)
        const done = await deliveryWhen(row.uuid, merchant, 'succeeded')
        assert.equal(done.attempts, 1)
        const [first] = receivedFor(receiver, row.event_id) as [Received]

        const res = await call(ctx, 'POST', `${DELIVERIES}/${row.uuid}/redeliver`, undefined, {
          as: { merchant },
        })
        assert.equal(res.statusCode, 202, res.body)
        assert.equal(res.json().uuid, row.uuid)
        assert.equal(res.json().event_id, row.event_id)
        assert.equal(res.json().status, 'pending')

        const [, again] = await eventually(async () => {
          const got = receivedFor(receiver, row.event_id)
          return got.length === 2 ? got : null
        })
        assert.ok(again)
        assert.equal(again.body, first.body)
        assert.equal(again.headers['webhook-id'], first.headers['webhook-id'])
        assert.doesNotThrow(() => verify(secret, again))
        const after = await deliveryWhen(row.uuid, merchant, 'succeeded', (d) => d.attempts === 2)
        assert.equal(after.response_status, 200)
        assert.equal((await attemptRows(ctx, row.uuid)).length, 2)
        // Still one delivery: redeliver makes an attempt, not a copy.
        assert.equal((await deliveryRows(ctx, tx.uuid)).length, 1)
      })
    })

    it('redeliver a delivery that failed for good: it succeeds once the endpoint is back', async () => {
      const merchant = await ctx.newMerchant()
      let up = false
      await withReceiver(
        () => ({ status: up ? 200 : 500 }),
        async (receiver) => {
          await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
          const { row } = await paidDelivery(merchant)
          // The fast schedule has three retries: four attempts in all, then failed.
          const failed = await deliveryWhen(row.uuid, merchant, 'failed')
          assertFields(failed, { attempts: 4, response_status: 500, next_attempt_at: null })
          assert.equal(receivedFor(receiver, row.event_id).length, 4)

          up = true
          const res = await call(ctx, 'POST', `${DELIVERIES}/${row.uuid}/redeliver`, undefined, {
            as: { merchant },
          })
          assert.equal(res.statusCode, 202, res.body)
          const after = await deliveryWhen(row.uuid, merchant, 'succeeded')
          assert.equal(after.attempts, 5)
          assert.equal(after.response_status, 200)
          assert.equal(after.error, null)
          const bodies = new Set(receivedFor(receiver, row.event_id).map((r) => r.body))
          assert.equal(bodies.size, 1, 'every attempt sends the same body')
        },
      )
    })

    it('redeliver: 404 for unknown, malformed, another merchant or the other mode; 409 for a test delivery', async () => {
      const merchant = await ctx.newMerchant()
      const other = await ctx.newMerchant()
      await withReceiver(undefined, async (receiver) => {
        await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
        const { row } = await paidDelivery(merchant)
        await deliveryWhen(row.uuid, merchant, 'succeeded')

        const cases: [string, TestMerchant, 'test' | 'live'][] = [
          ['01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10', merchant, 'test'],
          ['nope', merchant, 'test'],
          [row.uuid, other, 'test'],
          [row.uuid, merchant, 'live'],
        ]
        for (const [uuid, as, mode] of cases) {
          const res = await call(ctx, 'POST', `${DELIVERIES}/${uuid}/redeliver`, undefined, {
            as: { merchant: as, mode },
          })
          assert.equal(res.statusCode, 404, `${uuid} as ${mode}: ${res.body}`)
          assert.equal(res.json().error.code, 'not_found')
        }
        assert.equal((await getDelivery(ctx, row.uuid, merchant)).attempts, 1)

        const test = await sendTest(ctx, merchant)
        const res = await call(ctx, 'POST', `${DELIVERIES}/${test.uuid}/redeliver`, undefined, {
          as: { merchant },
        })
        assert.equal(res.statusCode, 409, res.body)
        assert.equal(res.json().error.code, 'invalid_state')
      })
    })

    it('410 from the configured URL: the configuration is switched off with a reason, the delivery fails without retries', async () => {
      const merchant = await ctx.newMerchant()
      await withReceiver(
        () => ({ status: 410, body: 'gone' }),
        async (receiver) => {
          await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
          const { row } = await paidDelivery(merchant)
          const failed = await deliveryWhen(row.uuid, merchant, 'failed')
          assertFields(failed, { attempts: 1, response_status: 410, next_attempt_at: null })

          const config = (
            await call(ctx, 'GET', '/integration/webhook', undefined, { as: { merchant } })
          ).json()
          assert.equal(config.enabled, false)
          assert.equal(config.url, `${receiver.url}/hooks`)
          assert.equal(typeof config.disabled_reason, 'string')
          assert.match(config.disabled_reason, /410/)

          // Switched off: the next event is recorded and not delivered.
          const next = await createTx(ctx, {}, { merchant })
          await simulate(ctx, next.uuid, 'paid', { merchant })
          assert.equal((await eventRows(ctx, next.uuid)).length, 1)
          assert.deepEqual(await deliveryRows(ctx, next.uuid), [])
          assert.equal(receiver.received.length, 1)
          assert.equal((await attemptRows(ctx, row.uuid)).length, 1)

          // A PUT switches it on again and clears the reason.
          const again = await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
          assert.equal(again.enabled, true)
          assert.equal(again.disabled_reason, null)
        },
      )
    })

    it("410 from a transaction's callback_url fails that delivery and leaves the configuration on", async () => {
      const merchant = await ctx.newMerchant()
      await withReceiver(
        () => ({ status: 410 }),
        async (receiver) => {
          await putConfig(ctx, { url: 'https://shop.example/hooks' }, { merchant })
          const { row } = await paidDelivery(merchant, { callback_url: `${receiver.url}/cb` })
          const failed = await deliveryWhen(row.uuid, merchant, 'failed')
          assert.equal(failed.attempts, 1)
          const config = (
            await call(ctx, 'GET', '/integration/webhook', undefined, { as: { merchant } })
          ).json()
          assert.equal(config.enabled, true)
          assert.equal(config.disabled_reason, null)
        },
      )
    })
  })
}

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Agent, fetch as undiciFetch } from 'undici'
import { MerchantGateway, type StreamMessage } from '../../../sdk/src/index.ts'
import { STREAM_LIMIT } from '../../../src/modules/webhooks/stream.ts'
import {
  backends,
  call,
  createTestContext,
  newTransaction,
  paidTransaction,
  type TestContext,
  type TestMerchant,
} from '../../helpers/harness.ts'

/** How long a test waits for the next message of a stream before it fails. */
const NEXT_MS = 5_000

type Stream = AsyncGenerator<StreamMessage>

/** The stream's next message, or a failure after NEXT_MS. */
async function next(stream: Stream): Promise<StreamMessage> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no message within ${NEXT_MS} ms`)), NEXT_MS)
  })
  try {
    const result = await Promise.race([stream.next(), late])
    assert.ok(!result.done, 'the stream ended')
    return result.value
  } finally {
    clearTimeout(timer)
  }
}

/** The stream's next message, which must be an event. */
async function nextEvent(stream: Stream) {
  const message = await next(stream)
  assert.equal(message.type, 'event')
  return message as Extract<StreamMessage, { type: 'event' }>
}

for (const backend of backends()) {
  describe(`the test-mode event stream, GET /integration/events/stream (${backend})`, () => {
    let ctx: TestContext
    let base: string
    const stops: AbortController[] = []
    // The suite's own connection pool, closed at its end: no keep-alive socket outlives the suite.
    const agent = new Agent()
    const fetch = ((url: string, init?: RequestInit) =>
      undiciFetch(url, { ...(init as object), dispatcher: agent })) as unknown as typeof globalThis.fetch

    before(async () => {
      ctx = await createTestContext(backend)
      await ctx.app.listen({ port: 0, host: '127.0.0.1' })
      const address = ctx.app.server.address()
      assert.ok(address && typeof address === 'object')
      base = `http://127.0.0.1:${address.port}`
    })
    after(async () => {
      for (const stop of stops) stop.abort()
      await ctx.close()
      await agent.destroy()
    })

    const sdk = (merchant: TestMerchant = ctx.merchant, mode: 'test' | 'live' = 'test') =>
      new MerchantGateway({ apiKey: merchant.keys[mode].secret, baseUrl: base, maxRetries: 0, fetch })

    /** An open stream, past its `ready` message. */
    async function open(options: { events?: string[]; lastEventId?: string; merchant?: TestMerchant } = {}) {
      const stop = new AbortController()
      stops.push(stop)
      const stream = sdk(options.merchant).events.stream({ ...options, signal: stop.signal })
      const ready = await next(stream)
      assert.deepEqual(ready, {
        type: 'ready',
        mode: 'test',
        merchant_uuid: (options.merchant ?? ctx.merchant).uuid,
      })
      return { stream, stop }
    }

    it("sends the merchant's test events as they happen, each the body its webhook carries, and none from before", async () => {
      const before = await paidTransaction(ctx)
      const { stream, stop } = await open()
      // Another merchant's event, and this merchant's live event, are not on the stream.
      await paidTransaction(ctx, {}, { merchant: ctx.other })
      await paidTransaction(ctx, {}, { mode: 'live' })
      const paid = await paidTransaction(ctx)
      const message = await nextEvent(stream)
      assert.equal(message.event, 'transaction.paid')
      assert.equal(message.data.event, 'transaction.paid')
      assert.equal((message.data as { transaction: { uuid: string } }).transaction.uuid, paid.uuid)
      assert.notEqual((message.data as { transaction: { uuid: string } }).transaction.uuid, before.uuid)
      assert.equal(message.id, message.data.event_id)
      const stored = await call(ctx, 'GET', `/integration/events/${message.id}`)
      const { webhook_status: _status, ...body } = stored.json()
      assert.deepEqual(JSON.parse(message.body), body)
      stop.abort()
    })

    it('sends only the events asked for (?type=)', async () => {
      const { stream, stop } = await open({ events: ['transaction.failed'] })
      await paidTransaction(ctx)
      const failed = await paidTransaction(ctx, {}, undefined, 'failed')
      const message = await nextEvent(stream)
      assert.equal(message.event, 'transaction.failed')
      assert.equal((message.data as { transaction: { uuid: string } }).transaction.uuid, failed.uuid)
      stop.abort()
      const unknown = await fetch(`${base}/integration/events/stream?type=transaction.nope`, {
        headers: { 'x-api-key': ctx.merchant.keys.test.secret },
      })
      assert.equal(unknown.status, 422)
      assert.equal((await unknown.json()).error.code, 'validation_failed')
      // Only `type` filters a stream: the list's other parameters are refused, not ignored.
      const other = await fetch(`${base}/integration/events/stream?per_page=5`, {
        headers: { 'x-api-key': ctx.merchant.keys.test.secret },
      })
      assert.equal(other.status, 422)
      assert.ok((await other.json()).error.errors.per_page)
    })

    it('resumes after Last-Event-ID: what happened while away, in order, and nothing already received', async () => {
      const first = await open()
      await paidTransaction(ctx)
      const seen = await nextEvent(first.stream)
      first.stop.abort()
      const created = await call(ctx, 'POST', '/integration/transactions', newTransaction())
      const uuid = created.json().uuid
      assert.equal(
        (await call(ctx, 'POST', `/integration/sandbox/transactions/${uuid}/failed-then-paid`)).statusCode,
        200,
      )
      const again = await open({ lastEventId: seen.id })
      const one = await nextEvent(again.stream)
      const two = await nextEvent(again.stream)
      assert.deepEqual(
        [one.event, two.event],
        ['transaction.failed', 'transaction.paid'],
        'the two events made while away, in order',
      )
      assert.notEqual(one.id, seen.id)
      again.stop.abort()
    })

    it('refuses a live key (403 forbidden) and a request without one (401)', async () => {
      const live = await fetch(`${base}/integration/events/stream`, {
        headers: { 'x-api-key': ctx.merchant.keys.live.secret },
      })
      assert.equal(live.status, 403)
      const { error } = await live.json()
      assert.equal(error.code, 'forbidden')
      assert.match(error.message, /test mode/)
      const none = await fetch(`${base}/integration/events/stream`)
      assert.equal(none.status, 401)
    })

    it(`allows ${STREAM_LIMIT} open streams per merchant: one more is 429 with Retry-After until one closes`, async () => {
      const merchant = await ctx.newMerchant('Stream Limit Shop')
      const streams = []
      for (let i = 0; i < STREAM_LIMIT; i++) streams.push(await open({ merchant }))
      const refused = await fetch(`${base}/integration/events/stream`, {
        headers: { 'x-api-key': merchant.keys.test.secret },
      })
      assert.equal(refused.status, 429)
      assert.equal((await refused.json()).error.code, 'rate_limited')
      assert.ok(Number(refused.headers.get('retry-after')) > 0)
      // Another merchant is not limited by this one.
      const other = await open()
      other.stop.abort()
      streams[0]?.stop.abort()
      // The closed stream's place is free once the server has seen it go.
      let reopened: Awaited<ReturnType<typeof open>> | null = null
      for (const deadline = Date.now() + NEXT_MS; !reopened && Date.now() < deadline; )
        reopened = await open({ merchant }).catch(() => null)
      assert.ok(reopened, 'a stream opens again after one closed')
      for (const s of [...streams, reopened]) s.stop.abort()
    })

    it('ends its open streams when the server shuts down, so that the shutdown does not wait for them', async () => {
      const own = await createTestContext(backend)
      await own.app.listen({ port: 0, host: '127.0.0.1' })
      const address = own.app.server.address()
      assert.ok(address && typeof address === 'object')
      const stream = new MerchantGateway({
        apiKey: own.merchant.keys.test.secret,
        baseUrl: `http://127.0.0.1:${address.port}`,
        fetch,
      }).events.stream()
      assert.equal((await next(stream)).type, 'ready')
      const merchant = await own.services.merchants.getMerchant(own.merchant.uuid)
      assert.ok(merchant)
      const closing = own.close()
      const end = await Promise.race([
        stream.next(),
        new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), NEXT_MS)),
      ])
      assert.notEqual(end, 'late', 'the stream ended')
      assert.equal((end as IteratorResult<StreamMessage>).done, true)
      await closing
      // A stream asked for once the server is closing is refused (503), not left open.
      await assert.rejects(
        own.services.webhooks.streamEvents(
          { keyId: own.merchant.keys.test.key_id, mode: 'test', merchant },
          {},
          undefined,
        ),
        (error: { code?: string }) => error.code === 'unavailable',
      )
    })
  })
}

import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { backends, call, eventually, type Received, type TestMerchant } from '../../helpers/harness.ts'
import { suiteContext, suiteReceiver, suiteWorkers } from '../../helpers/suite.ts'
import {
  createTx,
  FAST_DISPATCH,
  getConfig,
  putConfig,
  receivedAbout,
  receivedFor,
  rotate,
  signaturesOf,
  simulate,
  strangerSecret,
  verify,
  WHSEC,
} from './helpers.ts'

const ROTATE = '/integration/webhook/secret/rotate'

/** Asserts `at` is `seconds` from now, give or take the few seconds the test itself takes. */
function assertExpiresIn(at: string, seconds: number) {
  const delta = new Date(at).getTime() - (Date.now() + seconds * 1000)
  assert.ok(Math.abs(delta) < 10_000, `${at} is not about ${seconds} s from now`)
}

for (const backend of backends()) {
  describe(`webhook secret rotation (${backend})`, () => {
    const ctx = suiteContext(backend, { services: FAST_DISPATCH })
    const receiver = suiteReceiver(ctx)
    suiteWorkers(ctx)

    /** A merchant of its own, with the receiver as its webhook URL: each test starts from one secret. */
    async function freshMerchant(): Promise<{ merchant: TestMerchant; secret: string }> {
      const merchant = await ctx.newMerchant()
      const { secret } = await putConfig(ctx, { url: `${receiver.url}/hooks` }, { merchant })
      ctx.secrets.push(secret)
      return { merchant, secret }
    }

    /** A transaction.paid event through the outbox and the dispatcher, as the receiver got it. */
    async function eventDelivery(merchant: TestMerchant): Promise<Received> {
      const tx = await createTx(ctx, {}, { merchant })
      await simulate(ctx, tx.uuid, 'paid', { merchant })
      const [received] = await eventually(async () => {
        const list = receivedAbout(receiver, tx.uuid)
        return list.length ? list : null
      })
      return received as Received
    }

    /** A webhook.test delivery, as the receiver got it. */
    async function testDelivery(merchant: TestMerchant): Promise<Received> {
      const res = await call(ctx, 'POST', '/integration/webhook/test', undefined, { as: { merchant } })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().status, 'succeeded', res.body)
      const [received] = receivedFor(receiver, res.json().event_id)
      assert.ok(received)
      return received
    }

    const bothKinds = async (merchant: TestMerchant) => [
      await eventDelivery(merchant),
      await testDelivery(merchant),
    ]
    /** Each kind of delivery carries one signature, which `current` verifies and `old` no longer does. */
    const assertSignedOnlyBy = async (merchant: TestMerchant, current: string, old: string) => {
      for (const received of await bothKinds(merchant)) {
        assert.equal(signaturesOf(received).length, 1)
        assert.doesNotThrow(() => verify(current, received))
        assert.throws(() => verify(old, received))
      }
    }

    it('every delivery carries one signature that verifies with the current secret, and only with it', async () => {
      const { merchant, secret } = await freshMerchant()
      for (const received of await bothKinds(merchant)) {
        assert.equal(signaturesOf(received).length, 1)
        assert.match(signaturesOf(received)[0] ?? '', /^v1,[A-Za-z0-9+/]+=*$/)
        assert.doesNotThrow(() => verify(secret, received))
        assert.throws(() => verify(strangerSecret(), received))
        // Another merchant's secret, and the same merchant's live secret, do not verify it.
        const live = await getConfig(ctx, { merchant, mode: 'live' })
        ctx.secrets.push(live.secret)
        assert.throws(() => verify(live.secret, received))
        // A tampered body does not verify.
        assert.throws(() =>
          verify(secret, {
            ...received,
            body: received.body.replace('"paid"', '"failed"').replace('test', 'tset'),
          }),
        )
      }
    })

    it('rotate (default overlap 86400 s): a new secret, and deliveries verify with the new or the old alone', async () => {
      const { merchant, secret: old } = await freshMerchant()
      const rotated = await rotate(ctx, undefined, { merchant })
      ctx.secrets.push(rotated.secret)
      assert.match(rotated.secret, WHSEC)
      assert.notEqual(rotated.secret, old)
      assert.equal(rotated.url, `${receiver.url}/hooks`)
      assertExpiresIn(rotated.previous_secret_expires_at, 86400)
      assert.deepEqual(await getConfig(ctx, { merchant }), rotated)

      for (const received of await bothKinds(merchant)) {
        const entries = signaturesOf(received)
        assert.equal(entries.length, 2, 'two space-separated signatures')
        for (const entry of entries) assert.match(entry, /^v1,/)
        assert.doesNotThrow(() => verify(rotated.secret, received))
        assert.doesNotThrow(() => verify(old, received))
        assert.throws(() => verify(strangerSecret(), received))
        // The new secret's signature comes first, then the old one's.
        assert.doesNotThrow(() =>
          verify(rotated.secret, {
            ...received,
            headers: { ...received.headers, 'webhook-signature': entries[0] },
          }),
        )
        assert.doesNotThrow(() =>
          verify(old, { ...received, headers: { ...received.headers, 'webhook-signature': entries[1] } }),
        )
      }
    })

    it('overlap_seconds sets the window; 0 drops the old secret at once', async () => {
      for (const seconds of [1, 3600, 604800]) {
        const { merchant } = await freshMerchant()
        const rotated = await rotate(ctx, { overlap_seconds: seconds }, { merchant })
        ctx.secrets.push(rotated.secret)
        assertExpiresIn(rotated.previous_secret_expires_at, seconds)
      }

      const { merchant, secret: old } = await freshMerchant()
      const rotated = await rotate(ctx, { overlap_seconds: 0 }, { merchant })
      ctx.secrets.push(rotated.secret)
      assert.notEqual(rotated.secret, old)
      assert.equal(rotated.previous_secret_expires_at, null)
      await assertSignedOnlyBy(merchant, rotated.secret, old)
    })

    it('overlap_seconds outside 0..604800, not an integer, or an unknown field: 422, and the secret stays', async () => {
      const { merchant, secret } = await freshMerchant()
      const invalid: unknown[] = [
        { overlap_seconds: -1 },
        { overlap_seconds: 604801 },
        { overlap_seconds: 1.5 },
        { overlap_seconds: '60' },
        { overlap_seconds: null },
        { overlap: 60 },
        [],
      ]
      for (const body of invalid) {
        const res = await call(ctx, 'POST', ROTATE, body, { as: { merchant } })
        assert.equal(res.statusCode, 422, `${JSON.stringify(body)}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
      }
      const config = await getConfig(ctx, { merchant })
      assert.equal(config.secret, secret)
      assert.equal(config.previous_secret_expires_at, null)
      // An empty object takes the default.
      const rotated = await rotate(ctx, {}, { merchant })
      ctx.secrets.push(rotated.secret)
      assertExpiresIn(rotated.previous_secret_expires_at, 86400)
    })

    it('after the window the old secret no longer verifies', async () => {
      const { merchant, secret: old } = await freshMerchant()
      const rotated = await rotate(ctx, { overlap_seconds: 3600 }, { merchant })
      ctx.secrets.push(rotated.secret)
      // The hour passes.
      await ctx.db
        .updateTable('webhook_configs')
        .set({ previous_secret_expires_at: new Date(Date.now() - 1000) })
        .where('merchant_uuid', '=', merchant.uuid)
        .where('mode', '=', 'test')
        .execute()
      const config = await getConfig(ctx, { merchant })
      assert.equal(config.secret, rotated.secret)
      assert.equal(config.previous_secret_expires_at, null)
      await assertSignedOnlyBy(merchant, rotated.secret, old)
    })

    it('a rotation inside a running window replaces the old secret by the current one: at most two are valid', async () => {
      const { merchant, secret: first } = await freshMerchant()
      const second = await rotate(ctx, { overlap_seconds: 3600 }, { merchant })
      const third = await rotate(ctx, { overlap_seconds: 7200 }, { merchant })
      ctx.secrets.push(second.secret, third.secret)
      assert.equal(new Set([first, second.secret, third.secret]).size, 3)
      assertExpiresIn(third.previous_secret_expires_at, 7200)
      for (const received of await bothKinds(merchant)) {
        assert.equal(signaturesOf(received).length, 2)
        assert.doesNotThrow(() => verify(third.secret, received))
        assert.doesNotThrow(() => verify(second.secret, received))
        assert.throws(() => verify(first, received), 'the oldest secret no longer verifies')
      }
    })

    it('a rotation with overlap 0 inside a running window leaves only the new secret', async () => {
      const { merchant, secret: first } = await freshMerchant()
      const second = await rotate(ctx, {}, { merchant })
      const third = await rotate(ctx, { overlap_seconds: 0 }, { merchant })
      ctx.secrets.push(second.secret, third.secret)
      assert.equal(third.previous_secret_expires_at, null)
      const received = await testDelivery(merchant)
      assert.equal(signaturesOf(received).length, 1)
      assert.doesNotThrow(() => verify(third.secret, received))
      assert.throws(() => verify(second.secret, received))
      assert.throws(() => verify(first, received))
    })

    it('rotating the test secret leaves the live secret, and other merchants, alone', async () => {
      const { merchant } = await freshMerchant()
      const other = await ctx.newMerchant()
      const live = await getConfig(ctx, { merchant, mode: 'live' })
      const theirs = await getConfig(ctx, { merchant: other })
      ctx.secrets.push(live.secret, theirs.secret)
      const rotated = await rotate(ctx, {}, { merchant })
      ctx.secrets.push(rotated.secret)
      assert.deepEqual(await getConfig(ctx, { merchant, mode: 'live' }), live)
      assert.deepEqual(await getConfig(ctx, { merchant: other }), theirs)
      const liveRotated = await rotate(ctx, { overlap_seconds: 0 }, { merchant, mode: 'live' })
      ctx.secrets.push(liveRotated.secret)
      assert.equal((await getConfig(ctx, { merchant })).secret, rotated.secret)
    })

    it('an Idempotency-Key makes a repeated rotation a replay, not a second rotation', async () => {
      const { merchant, secret: old } = await freshMerchant()
      const key = `rotate-${merchant.uuid}`
      // The same request, sent twice.
      const send = () =>
        call(ctx, 'POST', ROTATE, { overlap_seconds: 600 }, { as: { merchant }, idempotencyKey: key })
      const first = await send()
      assert.equal(first.statusCode, 200, first.body)
      const again = await send()
      assert.equal(again.statusCode, 200, again.body)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, first.body)
      const config = await getConfig(ctx, { merchant })
      ctx.secrets.push(config.secret)
      assert.equal(config.secret, first.json().secret)
      // Still inside the first rotation's window: the original secret verifies.
      const received = await testDelivery(merchant)
      assert.doesNotThrow(() => verify(old, received))
    })

    it('a retry is signed with the secrets valid at its attempt, not those of the first one', async () => {
      const { merchant, secret: old } = await freshMerchant()
      const received: Received[] = []
      let rotated: { secret: string } | undefined
      // The endpoint rotates the secret (overlap 0) while it holds the first attempt, then answers 503.
      const server = createServer((req, res) => {
        const chunks: Buffer[] = []
        req.on('data', (c: Buffer) => chunks.push(c))
        req.on('end', async () => {
          received.push({
            headers: req.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            at: Date.now(),
          })
          if (received.length === 1) {
            const next = await rotate(ctx, { overlap_seconds: 0 }, { merchant })
            ctx.secrets.push(next.secret)
            rotated = next
            res.writeHead(503).end()
          } else res.writeHead(200).end()
        })
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      try {
        const { port } = server.address() as AddressInfo
        await putConfig(ctx, { url: `http://127.0.0.1:${port}/hooks` }, { merchant })
        const tx = await createTx(ctx, {}, { merchant })
        await simulate(ctx, tx.uuid, 'paid', { merchant })
        await eventually(async () => received.length >= 2)
      } finally {
        server.closeAllConnections()
        await new Promise<void>((resolve) => server.close(() => resolve()))
      }
      const [firstTry, retry] = received as [Received, Received]
      assert.ok(rotated)
      assert.equal(retry.headers['webhook-id'], firstTry.headers['webhook-id'])
      assert.equal(retry.body, firstTry.body)
      assert.doesNotThrow(() => verify(old, firstTry))
      assert.doesNotThrow(() => verify(rotated?.secret as string, retry))
      assert.throws(() => verify(old, retry))
    })
  })
}

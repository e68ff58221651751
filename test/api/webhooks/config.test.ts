import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { backends, call, eventually } from '../../helpers/harness.ts'
import { suiteContext, suiteReceiver, suiteWorkers } from '../../helpers/suite.ts'
import {
  ALL_EVENTS,
  createTx,
  deliveryRows,
  eventRows,
  FAST_DISPATCH,
  getConfig,
  putConfig,
  receivedAbout,
  simulate,
  verifies,
  WHSEC,
} from './helpers.ts'

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

for (const backend of backends()) {
  describe(`GET and PUT /integration/webhook (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('before any PUT: url null, enabled, every event, and a whsec_ secret that stays the same', async () => {
      const merchant = await ctx.newMerchant()
      const first = await getConfig(ctx, { merchant })
      assert.deepEqual(Object.keys(first).sort(), [
        'disabled_reason',
        'enabled',
        'events',
        'previous_secret_expires_at',
        'secret',
        'updated_at',
        'url',
      ])
      assert.equal(first.url, null)
      assert.equal(first.enabled, true)
      assert.deepEqual([...first.events].sort(), ALL_EVENTS)
      assert.equal(first.previous_secret_expires_at, null)
      assert.equal(first.disabled_reason, null)
      assert.match(first.updated_at, TIMESTAMP)
      assert.match(first.secret, WHSEC)
      assert.equal(Buffer.from(first.secret.slice('whsec_'.length), 'base64').length, 32)
      for (let i = 0; i < 3; i++) assert.equal((await getConfig(ctx, { merchant })).secret, first.secret)
      ctx.secrets.push(first.secret)
    })

    it('per merchant and mode: test and live keys see their own configuration, another merchant its own', async () => {
      const merchant = await ctx.newMerchant()
      const other = await ctx.newMerchant()
      const test = await getConfig(ctx, { merchant, mode: 'test' })
      const live = await getConfig(ctx, { merchant, mode: 'live' })
      const theirs = await getConfig(ctx, { merchant: other, mode: 'test' })
      const secrets = new Set([test.secret, live.secret, theirs.secret])
      assert.equal(secrets.size, 3, 'every merchant and mode has a secret of its own')
      ctx.secrets.push(...secrets)

      await putConfig(ctx, { url: 'https://shop.example/test-hooks' }, { merchant, mode: 'test' })
      await putConfig(
        ctx,
        { url: 'https://shop.example/live-hooks', events: ['transaction.paid'] },
        {
          merchant,
          mode: 'live',
        },
      )
      const testAfter = await getConfig(ctx, { merchant, mode: 'test' })
      const liveAfter = await getConfig(ctx, { merchant, mode: 'live' })
      assert.equal(testAfter.url, 'https://shop.example/test-hooks')
      assert.deepEqual([...testAfter.events].sort(), ALL_EVENTS)
      assert.equal(testAfter.secret, test.secret)
      assert.equal(liveAfter.url, 'https://shop.example/live-hooks')
      assert.deepEqual(liveAfter.events, ['transaction.paid'])
      assert.equal(liveAfter.secret, live.secret)
      const theirsAfter = await getConfig(ctx, { merchant: other, mode: 'test' })
      assert.equal(theirsAfter.url, null)
      assert.equal(theirsAfter.secret, theirs.secret)
      assert.equal((await getConfig(ctx, { merchant: other, mode: 'live' })).url, null)
    })

    it('PUT sets url, enabled and events, keeps the secret; the GET that follows shows the same', async () => {
      const merchant = await ctx.newMerchant()
      const before = await getConfig(ctx, { merchant })
      const put = await putConfig(
        ctx,
        {
          url: 'http://shop.example:8080/hooks?src=gw',
          enabled: false,
          events: ['transaction.failed', 'payout.failed'],
        },
        { merchant },
      )
      assert.equal(put.url, 'http://shop.example:8080/hooks?src=gw')
      assert.equal(put.enabled, false)
      assert.deepEqual([...put.events].sort(), ['payout.failed', 'transaction.failed'])
      assert.equal(put.secret, before.secret)
      assert.equal(put.disabled_reason, null)
      assert.match(put.updated_at, TIMESTAMP)
      assert.deepEqual(await getConfig(ctx, { merchant }), put)

      // Omitted enabled and events go back to their defaults: PUT replaces the configuration.
      const again = await putConfig(ctx, { url: 'https://shop.example/hooks' }, { merchant })
      assert.equal(again.enabled, true)
      assert.deepEqual([...again.events].sort(), ALL_EVENTS)

      const empty = await putConfig(ctx, { url: 'https://shop.example/hooks', events: [] }, { merchant })
      assert.deepEqual(empty.events, [])

      const removed = await putConfig(ctx, { url: null }, { merchant })
      assert.equal(removed.url, null)
      assert.equal(removed.secret, before.secret)
      assert.equal((await getConfig(ctx, { merchant })).url, null)
      ctx.secrets.push(before.secret)
    })

    it('url: an absolute http(s) URL of at most 2048 characters, else 422 with errors.url', async () => {
      const merchant = await ctx.newMerchant()
      const base = 'https://shop.example/'
      const longest = base + 'a'.repeat(2048 - base.length)
      assert.equal((await putConfig(ctx, { url: longest }, { merchant })).url, longest)

      const invalid: unknown[] = [
        base + 'a'.repeat(2049 - base.length),
        'ftp://shop.example/hooks',
        'javascript:alert(1)',
        'file:///etc/passwd',
        '/relative/hooks',
        'shop.example/hooks',
        'not a url',
        '',
        'https://',
        42,
        true,
        { href: 'https://shop.example' },
      ]
      for (const url of invalid) {
        const res = await call(ctx, 'PUT', '/integration/webhook', { url }, { as: { merchant } })
        assert.equal(res.statusCode, 422, `${JSON.stringify(url)}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
        assert.ok(res.json().error.errors.url, `${JSON.stringify(url)}: ${res.body}`)
      }
      // A refused PUT changes nothing.
      assert.equal((await getConfig(ctx, { merchant })).url, longest)
    })

    it('events: a subset of the event names; an unknown event, a duplicate or a non-list is 422', async () => {
      const merchant = await ctx.newMerchant()
      const all = await putConfig(ctx, { url: 'https://shop.example/h', events: ALL_EVENTS }, { merchant })
      assert.deepEqual([...all.events].sort(), ALL_EVENTS)
      const invalid: unknown[] = [
        ['transaction.paid', 'transaction.unknown'],
        ['Transaction.Paid'],
        ['*'],
        ['transaction.paid', 'transaction.paid'],
        'transaction.paid',
        [1],
        [null],
        null,
      ]
      for (const events of invalid) {
        const res = await call(
          ctx,
          'PUT',
          '/integration/webhook',
          { url: 'https://shop.example/h', events },
          { as: { merchant } },
        )
        assert.equal(res.statusCode, 422, `${JSON.stringify(events)}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
        assert.ok(
          Object.keys(res.json().error.errors).some((k) => k.startsWith('events')),
          `${JSON.stringify(events)}: ${res.body}`,
        )
      }
      assert.deepEqual([...(await getConfig(ctx, { merchant })).events].sort(), ALL_EVENTS)
    })

    it('unknown fields, a non-boolean enabled, and read-only fields are 422', async () => {
      const merchant = await ctx.newMerchant()
      const cases: [Record<string, unknown>, string][] = [
        [{ url: 'https://shop.example/h', urls: 'https://shop.example/h' }, 'urls'],
        [{ url: 'https://shop.example/h', enable: false }, 'enable'],
        [{ url: 'https://shop.example/h', secret: 'whsec_AAAA' }, 'secret'],
        [{ url: 'https://shop.example/h', disabled_reason: null }, 'disabled_reason'],
        [{ url: 'https://shop.example/h', enabled: 'false' }, 'enabled'],
        [{ url: 'https://shop.example/h', enabled: 0 }, 'enabled'],
      ]
      for (const [body, field] of cases) {
        const res = await call(ctx, 'PUT', '/integration/webhook', body, { as: { merchant } })
        assert.equal(res.statusCode, 422, `${JSON.stringify(body)}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
        assert.ok(
          JSON.stringify(res.json().error.errors).includes(field),
          `${JSON.stringify(body)} names ${field}: ${res.body}`,
        )
      }
      for (const rawBody of ['[]', '"https://shop.example/h"', 'null']) {
        const res = await call(ctx, 'PUT', '/integration/webhook', undefined, {
          as: { merchant },
          rawBody,
          headers: { 'content-type': 'application/json' },
        })
        assert.ok([400, 422].includes(res.statusCode), `${rawBody}: ${res.statusCode} ${res.body}`)
      }
      assert.equal((await getConfig(ctx, { merchant })).url, null)
    })

    it('enabled false: the event is recorded, and no delivery is made to the configured URL', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: 'https://shop.example/h', enabled: false }, { merchant })
      const tx = await createTx(ctx, {}, { merchant })
      await simulate(ctx, tx.uuid, 'paid', { merchant })
      const events = await eventRows(ctx, tx.uuid)
      assert.deepEqual(
        events.map((e) => [e.event, e.aggregate_version, e.merchant_uuid, e.mode]),
        [['transaction.paid', 2, merchant.uuid, 'test']],
      )
      assert.deepEqual(await deliveryRows(ctx, tx.uuid), [])

      // Switched on again, the next event has its delivery.
      await putConfig(ctx, { url: 'https://shop.example/h', enabled: true }, { merchant })
      const next = await createTx(ctx, {}, { merchant })
      await simulate(ctx, next.uuid, 'failed', { merchant })
      const [delivery, ...more] = await deliveryRows(ctx, next.uuid)
      assert.equal(more.length, 0)
      assert.equal(delivery?.url, 'https://shop.example/h')
      assert.equal(delivery?.event, 'transaction.failed')
    })

    it('events: only subscribed events get a delivery; the others are recorded all the same', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: 'https://shop.example/h', events: ['transaction.failed'] }, { merchant })
      const paid = await createTx(ctx, {}, { merchant })
      await simulate(ctx, paid.uuid, 'paid', { merchant })
      const failed = await createTx(ctx, {}, { merchant })
      await simulate(ctx, failed.uuid, 'failed', { merchant })
      const expired = await createTx(ctx, {}, { merchant })
      await simulate(ctx, expired.uuid, 'expired', { merchant })

      for (const tx of [paid, failed, expired]) assert.equal((await eventRows(ctx, tx.uuid)).length, 1)
      assert.deepEqual(await deliveryRows(ctx, paid.uuid), [])
      assert.deepEqual(await deliveryRows(ctx, expired.uuid), [])
      const deliveries = await deliveryRows(ctx, failed.uuid)
      assert.deepEqual(
        deliveries.map((d) => [d.event, d.url]),
        [['transaction.failed', 'https://shop.example/h']],
      )

      // An empty subscription delivers nothing.
      await putConfig(ctx, { url: 'https://shop.example/h', events: [] }, { merchant })
      const none = await createTx(ctx, {}, { merchant })
      await simulate(ctx, none.uuid, 'failed', { merchant })
      assert.equal((await eventRows(ctx, none.uuid)).length, 1)
      assert.deepEqual(await deliveryRows(ctx, none.uuid), [])
    })

    it('a live-mode event follows the live configuration, not the test one', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: 'https://shop.example/test' }, { merchant, mode: 'test' })
      const tx = await createTx(ctx, {}, { merchant, mode: 'live' })
      await simulate(ctx, tx.uuid, 'paid', { merchant, mode: 'live' })
      assert.equal((await eventRows(ctx, tx.uuid)).length, 1)
      assert.deepEqual(await deliveryRows(ctx, tx.uuid), [])
      await putConfig(ctx, { url: 'https://shop.example/live' }, { merchant, mode: 'live' })
      const next = await createTx(ctx, {}, { merchant, mode: 'live' })
      await simulate(ctx, next.uuid, 'paid', { merchant, mode: 'live' })
      assert.deepEqual(
        (await deliveryRows(ctx, next.uuid)).map((d) => [d.url, d.mode]),
        [['https://shop.example/live', 'live']],
      )
    })

    it("a delivery's target is its URL's host, changed with the configured URL; it keeps no copy of the event's body", async () => {
      const merchant = await ctx.newMerchant()
      const deliveredTo = async (overrides: Record<string, unknown> = {}) => {
        const tx = await createTx(ctx, overrides, { merchant })
        await simulate(ctx, tx.uuid, 'paid', { merchant })
        const [event] = await eventRows(ctx, tx.uuid)
        const deliveries = await deliveryRows(ctx, tx.uuid)
        assert.equal(deliveries.length, 1)
        assert.ok(event)
        assert.equal(deliveries[0]?.body, null, "the delivery keeps no copy of the event's body")
        return deliveries.map((d) => [d.url, d.target, d.status, d.attempts, d.is_test])
      }
      await putConfig(ctx, { url: 'https://Shop.Example:443/h' }, { merchant })
      assert.deepEqual(await deliveredTo(), [
        ['https://Shop.Example:443/h', 'shop.example', 'pending', 0, false],
      ])
      await putConfig(ctx, { url: 'https://hooks.example:8443/h' }, { merchant })
      assert.deepEqual(await deliveredTo(), [
        ['https://hooks.example:8443/h', 'hooks.example:8443', 'pending', 0, false],
      ])
      assert.deepEqual(await deliveredTo({ callback_url: 'https://cb.example/x' }), [
        ['https://cb.example/x', 'cb.example', 'pending', 0, false],
      ])
    })
  })

  describe(`where events go: callback_url, then the configured URL (${backend})`, () => {
    const ctx = suiteContext(backend, { services: FAST_DISPATCH })
    const configured = suiteReceiver(ctx)
    const callback = suiteReceiver(ctx)
    suiteWorkers(ctx)

    it("a transaction's callback_url takes its events even when a webhook URL is configured", async () => {
      const merchant = await ctx.newMerchant()
      const { secret } = await putConfig(ctx, { url: `${configured.url}/hooks` }, { merchant })
      const tx = await createTx(ctx, { callback_url: `${callback.url}/tx-callback` }, { merchant })
      await simulate(ctx, tx.uuid, 'failed-then-paid', { merchant })

      const got = await eventually(async () => {
        const list = receivedAbout(callback, tx.uuid)
        return list.length === 2 ? list : null
      })
      assert.deepEqual(got.map((r) => JSON.parse(r.body).event).sort(), [
        'transaction.failed',
        'transaction.paid',
      ])
      for (const r of got) assert.ok(verifies(secret, r), 'signed with the merchant secret')
      const deliveries = await deliveryRows(ctx, tx.uuid)
      assert.deepEqual(
        deliveries.map((d) => d.url),
        [`${callback.url}/tx-callback`, `${callback.url}/tx-callback`],
      )
      // Exactly one delivery per event: nothing went to the configured URL as well.
      assert.equal(receivedAbout(configured, tx.uuid).length, 0)
      ctx.secrets.push(secret)
    })

    it('callback_url is used even when the configuration is disabled or not subscribed', async () => {
      const merchant = await ctx.newMerchant()
      await putConfig(ctx, { url: `${configured.url}/hooks`, enabled: false, events: [] }, { merchant })
      const tx = await createTx(ctx, { callback_url: `${callback.url}/cb` }, { merchant })
      await simulate(ctx, tx.uuid, 'paid', { merchant })
      const [r] = await eventually(async () => {
        const list = receivedAbout(callback, tx.uuid)
        return list.length ? list : null
      })
      assert.equal(JSON.parse(r?.body ?? '{}').event, 'transaction.paid')
    })

    it('without callback_url the events go to the configured URL', async () => {
      const merchant = await ctx.newMerchant()
      const { secret } = await putConfig(ctx, { url: `${configured.url}/hooks` }, { merchant })
      const tx = await createTx(ctx, {}, { merchant })
      await simulate(ctx, tx.uuid, 'paid', { merchant })
      const [r] = await eventually(async () => {
        const list = receivedAbout(configured, tx.uuid)
        return list.length ? list : null
      })
      assert.ok(r)
      assert.ok(verifies(secret, r))
      assert.deepEqual(
        (await deliveryRows(ctx, tx.uuid)).map((d) => d.url),
        [`${configured.url}/hooks`],
      )
      assert.equal(receivedAbout(callback, tx.uuid).length, 0)
      ctx.secrets.push(secret)
    })

    it('with neither, the event is recorded and nothing is delivered', async () => {
      const merchant = await ctx.newMerchant()
      const tx = await createTx(ctx, {}, { merchant })
      await simulate(ctx, tx.uuid, 'paid', { merchant })
      const [event] = await eventRows(ctx, tx.uuid)
      assert.ok(event)
      assert.equal(event.event, 'transaction.paid')
      const body = JSON.parse(event.body)
      assert.equal(body.event_id, event.uuid)
      assert.equal(body.transaction.uuid, tx.uuid)
      assert.deepEqual(await deliveryRows(ctx, tx.uuid), [])
    })

    it('a merchant that never read its configuration still signs callback_url deliveries with the secret GET shows later', async () => {
      const merchant = await ctx.newMerchant()
      const tx = await createTx(ctx, { callback_url: `${callback.url}/first` }, { merchant, mode: 'live' })
      await simulate(ctx, tx.uuid, 'paid', { merchant, mode: 'live' })
      const [r] = await eventually(async () => {
        const list = receivedAbout(callback, tx.uuid)
        return list.length ? list : null
      })
      assert.ok(r)
      const live = await getConfig(ctx, { merchant, mode: 'live' })
      const test = await getConfig(ctx, { merchant, mode: 'test' })
      assert.ok(verifies(live.secret, r), 'signed with the live secret')
      assert.ok(!verifies(test.secret, r), 'not with the test secret')
      ctx.secrets.push(live.secret, test.secret)
    })
  })
}

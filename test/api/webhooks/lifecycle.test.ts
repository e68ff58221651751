import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { WAKE_CHANNEL } from '../../../src/modules/webhooks/service.ts'
import { backends, call, eventually, newTransaction, startReceiver } from '../../helpers/harness.ts'
import { providerCallbacks } from '../../helpers/rows.ts'
import { suiteContext, suiteReceiver, suiteWorkers } from '../../helpers/suite.ts'

for (const backend of backends()) {
  describe(`sandbox simulations deliver signed events (${backend})`, () => {
    const ctx = suiteContext(backend)
    const receiver = suiteReceiver(ctx)
    suiteWorkers(ctx)
    before(async () => {
      const put = await call(ctx, 'PUT', '/integration/webhook', { url: `${receiver.url}/hooks` })
      assert.equal(put.statusCode, 200, put.body)
    })

    const create = async (overrides = {}) => {
      const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(overrides))
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }
    const eventsFor = (uuid: string) => receiver.events().filter((e) => e.transaction?.uuid === uuid)

    it('a delivery written wakes the dispatchers of every process through NOTIFY when it commits', async () => {
      // The dispatchers poll too, but only a NOTIFY brings a delivery to another process at once.
      let notified = 0
      const unlisten = await ctx.handle.listen(WAKE_CHANNEL, () => {
        notified++
      })
      try {
        const tx = await create()
        const res = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`)
        assert.equal(res.statusCode, 200, res.body)
        await eventually(async () => notified > 0 || null, 2_000)
      } finally {
        await unlisten()
      }
    })

    it('paid: 200 with the paid transaction, one signed transaction.paid event', async () => {
      const tx = await create()
      const res = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`)
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().status, 'paid')
      assert.equal(res.json().aggregate_version, 2)
      assert.ok(res.json().paid_at)
      const [event] = await eventually(async () => (eventsFor(tx.uuid).length ? eventsFor(tx.uuid) : null))
      assert.equal(event.event, 'transaction.paid')
      assert.equal(event.schema_version, '1')
      assert.equal(event.aggregate_version, 2)
      assert.equal(event.transaction.status, 'paid')
      const config = (await call(ctx, 'GET', '/integration/webhook')).json()
      const delivery = receiver.received.find((r) => JSON.parse(r.body).event_id === event.event_id)
      assert.ok(delivery)
      assert.equal(delivery.headers['webhook-id'], event.event_id)
      assert.doesNotThrow(() =>
        new Webhook(config.secret).verify(delivery.body, delivery.headers as Record<string, string>),
      )
    })

    it('failed-then-paid ends paid and sends both events with increasing aggregate_version', async () => {
      const tx = await create()
      const res = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/failed-then-paid`)
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().status, 'paid')
      assert.equal(res.json().aggregate_version, 3)
      const events = await eventually(async () =>
        eventsFor(tx.uuid).length === 2 ? eventsFor(tx.uuid) : null,
      )
      const sorted = [...events].sort((a, b) => a.aggregate_version - b.aggregate_version)
      assert.deepEqual(
        sorted.map((e) => [e.event, e.aggregate_version]),
        [
          ['transaction.failed', 2],
          ['transaction.paid', 3],
        ],
      )
    })

    it('a repeated simulation changes nothing and sends no second event', async () => {
      const tx = await create()
      await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`)
      await eventually(async () => eventsFor(tx.uuid).length === 1)
      const again = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`)
      assert.equal(again.statusCode, 200)
      assert.equal(again.json().aggregate_version, 2)
      // A later event for another transaction arriving proves the queue was drained past this one.
      const marker = await create()
      await call(ctx, 'POST', `/integration/sandbox/transactions/${marker.uuid}/failed`)
      await eventually(async () => eventsFor(marker.uuid).length === 1)
      assert.equal(eventsFor(tx.uuid).length, 1)
    })

    it('a failure after payment is recorded as stale and changes nothing', async () => {
      const tx = await create()
      await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`)
      const res = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/failed`)
      assert.equal(res.json().status, 'paid')
      assert.equal(res.json().aggregate_version, 2)
      const callbacks = await providerCallbacks(ctx.db, tx.uuid)
      assert.deepEqual(
        callbacks.map((c) => [c.outcome, c.result]),
        [
          ['paid', 'applied'],
          ['failed', 'stale'],
        ],
      )
    })

    it('a reply with a NUL character is recorded without it (PostgreSQL text cannot hold one)', async () => {
      const nul = await startReceiver(() => ({ status: 200, body: 'ok\u0000done' }))
      try {
        const tx = await create({ callback_url: `${nul.url}/cb` })
        await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`)
        const delivery = await eventually(async () => {
          const row = await ctx.db
            .selectFrom('webhook_deliveries')
            .selectAll()
            .where('url', '=', `${nul.url}/cb`)
            .executeTakeFirst()
          return row?.status === 'succeeded' ? row : null
        })
        assert.equal(delivery.response_body, 'okdone')
      } finally {
        await nul.close()
      }
    })

    it('expired, then a late paid: money that arrived is never lost', async () => {
      const tx = await create()
      const expired = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/expired`)
      assert.equal(expired.json().status, 'expired')
      const paid = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`)
      assert.equal(paid.json().status, 'paid')
      assert.equal(paid.json().aggregate_version, 3)
      const events = await eventually(async () =>
        eventsFor(tx.uuid).length === 2 ? eventsFor(tx.uuid) : null,
      )
      assert.deepEqual(events.map((e) => e.event).sort(), ['transaction.expired', 'transaction.paid'])
    })
  })
}

import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { activeUser, dashboard, signIn } from '../../helpers/dashboard.ts'
import { backends, call, newTransaction } from '../../helpers/harness.ts'
import { suiteContext, suiteReceiver } from '../../helpers/suite.ts'
import { FAST_DISPATCH, putConfig } from '../webhooks/helpers.ts'

for (const backend of backends()) {
  describe(`the dashboard's profile and delivery attempts (${backend})`, () => {
    let status = 200
    let owner: Awaited<ReturnType<typeof signIn>>
    const ctx = suiteContext(backend, { services: FAST_DISPATCH })
    const receiver = suiteReceiver(ctx, () => ({
      status,
      body: status === 200 ? 'ok' : 'down for maintenance',
    }))
    before(async () => {
      owner = await signIn(ctx, await activeUser(ctx, 'owner'))
    })

    it('the merchant profile: name, settlement, fees per method, payout fees, read by every role', async () => {
      await ctx.services.merchants.setFee(ctx.merchant.uuid, 'card', 250, 4000)
      const viewer = await signIn(ctx, await activeUser(ctx, 'viewer'))
      for (const session of [owner, viewer]) {
        const res = await dashboard(ctx, 'GET', '/dashboard/api/merchant', {
          cookie: session.token,
          mode: 'test',
        })
        assert.equal(res.statusCode, 200, res.body)
        const profile = res.json()
        const merchant = await ctx.services.merchants.getMerchant(ctx.merchant.uuid)
        assert.equal(profile.uuid, ctx.merchant.uuid)
        assert.equal(profile.name, merchant?.name)
        assert.equal(profile.settlement_currency, merchant?.settlement_currency)
        assert.deepEqual(
          profile.fees.find((f: { payment_method: string }) => f.payment_method === 'card'),
          { payment_method: 'card', fee_bps: 250, merchant_fee_share_bps: 4000 },
        )
        assert.deepEqual(profile.fees.map((f: { payment_method: string }) => f.payment_method).sort(), [
          'bank_transfer',
          'card',
          'p2p_card',
          'usdt_erc20',
        ])
      }
      // Not an API operation: an API key gets 404, no session 401.
      const byKey = await call(ctx, 'GET', '/dashboard/api/merchant')
      assert.equal(byKey.statusCode, 404)
      const none = await dashboard(ctx, 'GET', '/dashboard/api/merchant', { mode: 'test' })
      assert.equal(none.statusCode, 401)
    })

    it("a delivery's request and each attempt's answer; developer tools only; the merchant's own", async () => {
      await putConfig(ctx, { url: `${receiver.url}/hooks` })
      status = 503
      const failed = await call(ctx, 'POST', '/integration/webhook/test')
      assert.equal(failed.statusCode, 200, failed.body)
      status = 200
      const delivery = failed.json()
      const received = receiver.received.at(-1)
      assert.ok(received)
      /** The dashboard's log of a delivery, as a session sees it in a mode. */
      const attemptsLog = (uuid: string, cookie: string, mode: 'test' | 'live' = 'test') =>
        dashboard(ctx, 'GET', `/dashboard/api/webhook/deliveries/${uuid}/attempts`, { cookie, mode })
      const res = await attemptsLog(delivery.uuid, owner.token)
      assert.equal(res.statusCode, 200, res.body)
      const answer = res.json()
      assert.equal(answer.delivery.uuid, delivery.uuid)
      assert.equal(answer.request.url, `${receiver.url}/hooks`)
      assert.equal(answer.request.body, received.body)
      assert.equal(answer.request.headers['webhook-id'], received.headers['webhook-id'])
      assert.equal(answer.attempts.length, 1)
      assert.equal(answer.attempts[0].response_status, 503)
      assert.equal(answer.attempts[0].response_body, 'down for maintenance')
      assert.equal(answer.attempts[0].webhook_timestamp, received.headers['webhook-timestamp'])

      // An event's delivery shows the body it sends: its event's, which it keeps no copy of.
      const tx = await call(ctx, 'POST', '/integration/transactions', newTransaction())
      assert.equal(tx.statusCode, 201, tx.body)
      const paid = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.json().uuid}/paid`)
      assert.equal(paid.statusCode, 200, paid.body)
      const event = await ctx.handle.db
        .selectFrom('events')
        .select(['uuid', 'body'])
        .where('aggregate_uuid', '=', tx.json().uuid)
        .where('event', '=', 'transaction.paid')
        .executeTakeFirstOrThrow()
      const eventDelivery = await ctx.handle.db
        .selectFrom('webhook_deliveries')
        .select(['uuid', 'body'])
        .where('event_id', '=', event.uuid)
        .executeTakeFirstOrThrow()
      assert.equal(eventDelivery.body, null)
      const log = await attemptsLog(eventDelivery.uuid, owner.token)
      assert.equal(log.statusCode, 200, log.body)
      assert.equal(log.json().request.body, event.body)

      const support = await signIn(ctx, await activeUser(ctx, 'support'))
      const refused = await attemptsLog(delivery.uuid, support.token)
      assert.equal(refused.statusCode, 403)
      // The other mode, or another merchant's session, does not find it.
      const live = await attemptsLog(delivery.uuid, owner.token, 'live')
      assert.equal(live.statusCode, 404)
      const stranger = await ctx.newMerchant('Stranger')
      const theirs = await signIn(ctx, await activeUser(ctx, 'owner', stranger.uuid))
      const notTheirs = await attemptsLog(delivery.uuid, theirs.token)
      assert.equal(notTheirs.statusCode, 404)
      const malformed = await attemptsLog('nope', owner.token)
      assert.ok([404, 422].includes(malformed.statusCode), malformed.body)
    })
  })
}

import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AcquirerClient } from '../../../src/connectors/http-acquirer/client.ts'
import { newCallbackSecret } from '../../../src/connectors/http-acquirer/signature.ts'
import { buildEmulator, CHALLENGE_CODE, parseFaults } from '../../../src/emulator/server.ts'
import { backends, eventually } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'
import { callbackLog } from './handover-helpers.ts'

// The emulator's callbacks, signed with an account's secret, posted over HTTP to the gateway's callback URL.
for (const backend of backends()) {
  describe(`the provider emulator's callbacks at the gateway (${backend})`, () => {
    const ctx = suiteContext(backend, { secrets: ['sk_emulator'] })
    const emulators: FastifyInstance[] = []
    let gateway: string
    let callbackUrl: string
    let secret: string

    /** An emulator posting to the account's URL, signing with `signWith`; its base URL and a client of it. */
    const startEmulator = async (signWith: string, faults: Record<string, unknown> = {}) => {
      const emulator = buildEmulator({
        faults: parseFaults(faults),
        apiKey: 'sk_emulator',
        publicUrl: 'http://emulator.test',
        callbackUrl,
        callbackSecret: signWith,
        callbackRetryMs: [20, 40],
      })
      emulators.push(emulator)
      await emulator.listen({ port: 0, host: '127.0.0.1' })
      const base = `http://127.0.0.1:${(emulator.server.address() as AddressInfo).port}`
      return { base, client: new AcquirerClient({ base_url: `${base}/v1`, timeout_ms: 2000 }, 'sk_emulator') }
    }
    /** A card payment of 50.00 USD handed to the emulator by `client`. */
    const cardPayment = (client: AcquirerClient, orderId: string, returnUrl: string) =>
      client.createPayment({
        order_id: orderId,
        amount: 5000,
        currency: 'USD',
        method: 'card',
        return_url: returnUrl,
      })
    /** A card payment handed to the emulator, then decided by its admin API. */
    const decidedPayment = async (
      emulator: Awaited<ReturnType<typeof startEmulator>>,
      orderId: string,
      status: string,
    ) => {
      const answer = await cardPayment(emulator.client, orderId, 'https://gateway.test/pay/t')
      assert.ok(answer.ok)
      await fetch(`${emulator.base}/admin/payments/${answer.body.reference}/decide`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ status }),
      })
      return answer.body.reference
    }
    /** What the emulator sent, once `count` callbacks have ended (answered 2xx or given up). */
    const sentBy = (base: string, count: number) =>
      eventually(async () => {
        const sent = (await (await fetch(`${base}/admin/callbacks`)).json()) as {
          type: string
          reference: string
          attempts: number[]
        }[]
        return sent.length >= count && sent.every((c) => c.attempts.length > 0) ? sent : null
      })

    before(async () => {
      await ctx.app.listen({ port: 0, host: '127.0.0.1' })
      gateway = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
      const added = await ctx.services.providers.accounts.add({
        name: 'emulator',
        kind: 'http-acquirer',
        mode: 'live',
        settings: { base_url: 'http://emulator.test/v1' },
        secrets: { api_key: 'sk_emulator' },
      })
      secret = added.callbackSecret as string
      ctx.secrets.push(secret)
      callbackUrl = (added.account.callback_url as string).replace('http://gateway.test', gateway)
    })
    after(() => Promise.all(emulators.map((emulator) => emulator.close())))

    it('a customer who passes the challenge and pays: the payment page sends them back, and the callback verifies', async () => {
      const { base, client } = await startEmulator(secret)
      const answer = await cardPayment(client, 'ord-page', 'https://gateway.test/pay/token')
      assert.ok(answer.ok)
      const { reference } = answer.body
      const page = await fetch(`${base}/pay/${reference}`)
      assert.match(await page.text(), /<form method="post">[\s\S]*name="code"/)
      const paid = await fetch(`${base}/pay/${reference}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ code: CHALLENGE_CODE, action: 'pay' }).toString(),
        redirect: 'manual',
      })
      assert.equal(paid.status, 303)
      assert.equal(paid.headers.get('location'), 'https://gateway.test/pay/token')
      // Nothing was handed to this account under that reference: kept, verified, as unmatched.
      const [logged] = await eventually(async () =>
        (await callbackLog(ctx, reference)).length ? callbackLog(ctx, reference) : null,
      )
      assert.deepEqual(
        [logged?.verification, logged?.result, logged?.event_type],
        ['verified', 'unmatched', 'payment.succeeded'],
      )
      await client.close()
    })

    it('a wrong challenge code fails the payment, and says so by callback', async () => {
      const { base, client } = await startEmulator(secret)
      const answer = await cardPayment(client, 'ord-wrong-code', 'https://gateway.test/pay/t2')
      assert.ok(answer.ok)
      await fetch(`${base}/pay/${answer.body.reference}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'code=0000&action=pay',
        redirect: 'manual',
      })
      const after = await client.payment(answer.body.reference)
      assert.ok(after.ok && after.body.status === 'failed', JSON.stringify(after))
      const [logged] = await eventually(async () => {
        const rows = await callbackLog(ctx, answer.body.reference)
        return rows.length ? rows : null
      })
      assert.equal(logged?.event_type, 'payment.failed')
      await client.close()
    })

    it('an emulator signing with a secret the account does not accept is refused on every attempt, then gives up', async () => {
      const { base, client } = await startEmulator(newCallbackSecret())
      const payout = await client.submitPayout({
        payout_id: 'po-wrong-secret',
        amount: 2500,
        currency: 'USD',
        method: 'card',
        destination: { card: '4111' },
      })
      assert.ok(payout.ok)
      await fetch(`${base}/admin/payouts/${payout.body.reference}/decide`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'completed' }),
      })
      const attempts = await eventually(async () => {
        const sent = (await (await fetch(`${base}/admin/callbacks`)).json()) as { attempts: number[] }[]
        return sent[0]?.attempts.length === 3 ? sent[0].attempts : null
      })
      assert.deepEqual(attempts, [401, 401, 401])
      const rows = await callbackLog(ctx, payout.body.reference)
      assert.equal(rows.length, 3)
      assert.ok(rows.every((row) => row.verification === 'mismatch' && row.result === 'refused'))
      await client.close()
    })

    it('a callback sent three times is kept three times, each verified', async () => {
      const emulator = await startEmulator(secret, { duplicate_callbacks: 2 })
      const reference = await decidedPayment(emulator, 'ord-dup', 'succeeded')
      await sentBy(emulator.base, 3)
      const rows = await callbackLog(ctx, reference)
      assert.equal(rows.length, 3)
      assert.ok(rows.every((row) => row.verification === 'verified'))
      await emulator.client.close()
    })

    it('a dropped callback never arrives: only a status call finds the outcome', async () => {
      const emulator = await startEmulator(secret, { drop_callbacks: true })
      const reference = await decidedPayment(emulator, 'ord-drop', 'failed')
      const status = await emulator.client.payment(reference)
      assert.ok(status.ok && status.body.status === 'failed')
      assert.deepEqual(await (await fetch(`${emulator.base}/admin/callbacks`)).json(), [])
      assert.deepEqual(await callbackLog(ctx, reference), [])
      await emulator.client.close()
    })

    it('callbacks held back and sent newest first arrive out of order', async () => {
      const emulator = await startEmulator(secret, { reorder_callbacks: 2 })
      const first = await decidedPayment(emulator, 'ord-first', 'succeeded')
      const second = await decidedPayment(emulator, 'ord-second', 'succeeded')
      const sent = await sentBy(emulator.base, 2)
      assert.deepEqual(
        sent.map((c) => c.reference),
        [second, first],
      )
      await emulator.client.close()
    })

    it('a refund left pending waits for the admin API, which decides it once and says so by callback', async () => {
      const emulator = await startEmulator(secret, { refunds: 'pending' })
      const payment = await decidedPayment(emulator, 'ord-refund-later', 'succeeded')
      const refunded = await emulator.client.refund(payment, { refund_id: 'rf-later', amount: 2000 })
      assert.ok(refunded.ok && refunded.body.status === 'pending', JSON.stringify(refunded))
      const { reference } = refunded.body
      const decide = (status: string) =>
        fetch(`${emulator.base}/admin/refunds/${reference}/decide`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ status }),
        })
      assert.equal((await decide('refunded')).status, 400)
      assert.equal(
        (
          await fetch(`${emulator.base}/admin/refunds/re_never-given/decide`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{"status":"succeeded"}',
          })
        ).status,
        404,
      )
      const decided = await decide('succeeded')
      assert.deepEqual(await decided.json(), { reference, status: 'succeeded', amount: 2000 })
      // A second decision changes nothing, and sends nothing more.
      assert.equal((await (await decide('failed')).json()).status, 'succeeded')
      const status = await emulator.client.refundStatus(reference)
      assert.ok(status.ok && status.body.status === 'succeeded', JSON.stringify(status))
      const sent = await sentBy(emulator.base, 2)
      assert.deepEqual(
        sent.map((c) => c.type),
        ['payment.succeeded', 'refund.succeeded'],
      )
      const [logged] = await eventually(async () => {
        const rows = await callbackLog(ctx, reference)
        return rows.length ? rows : null
      })
      assert.deepEqual(
        { verification: logged?.verification, result: logged?.result, event_type: logged?.event_type },
        { verification: 'verified', result: 'unmatched', event_type: 'refund.succeeded' },
      )
      await emulator.client.close()
    })

    it('a callback signed wrongly on purpose is refused, however many times it is sent', async () => {
      const emulator = await startEmulator(secret, { wrong_signature: true })
      const reference = await decidedPayment(emulator, 'ord-wrong-signature', 'succeeded')
      const attempts = await eventually(async () => {
        const [sent] = await sentBy(emulator.base, 1)
        return sent?.attempts.length === 3 ? sent.attempts : null
      })
      assert.deepEqual(attempts, [401, 401, 401])
      assert.ok((await callbackLog(ctx, reference)).every((row) => row.result === 'refused'))
      await emulator.client.close()
    })
  })
}

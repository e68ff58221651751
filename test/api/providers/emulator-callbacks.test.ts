import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { AcquirerClient } from '../../../src/connectors/http-acquirer/client.ts'
import { newCallbackSecret } from '../../../src/connectors/http-acquirer/signature.ts'
import { buildEmulator, CHALLENGE_CODE } from '../../../src/emulator/server.ts'
import { backends, eventually } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

// The emulator's callbacks, signed with an account's secret, posted over HTTP to the gateway's callback URL.
for (const backend of backends()) {
  describe(`the provider emulator's callbacks at the gateway (${backend})`, () => {
    const ctx = suiteContext(backend, { secrets: ['sk_emulator'] })
    const emulators: FastifyInstance[] = []
    let gateway: string
    let callbackUrl: string
    let secret: string

    /** An emulator posting to the account's URL, signing with `signWith`; its base URL and a client of it. */
    const startEmulator = async (signWith: string) => {
      const emulator = buildEmulator({
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
    const logOf = (reference: string) =>
      ctx.db
        .selectFrom('connector_callbacks')
        .select(['verification', 'result', 'event_type'])
        .where('provider_reference', '=', reference)
        .execute()

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
      const answer = await client.createPayment({
        order_id: 'ord-page',
        amount: 150000,
        currency: 'RUB',
        method: 'card',
        return_url: 'https://gateway.test/pay/token',
      })
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
        (await logOf(reference)).length ? logOf(reference) : null,
      )
      assert.deepEqual(logged, {
        verification: 'verified',
        result: 'unmatched',
        event_type: 'payment.succeeded',
      })
      await client.close()
    })

    it('a wrong challenge code fails the payment, and says so by callback', async () => {
      const { base, client } = await startEmulator(secret)
      const answer = await client.createPayment({
        order_id: 'ord-wrong-code',
        amount: 990,
        currency: 'EUR',
        method: 'card',
        return_url: 'https://gateway.test/pay/t2',
      })
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
        const rows = await logOf(answer.body.reference)
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
      const rows = await logOf(payout.body.reference)
      assert.equal(rows.length, 3)
      assert.ok(rows.every((row) => row.verification === 'mismatch' && row.result === 'refused'))
      await client.close()
    })
  })
}

import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { before, describe, it } from 'node:test'
import type { Mode } from '../../../src/db/types.ts'
import { CHALLENGE_CODE } from '../../../src/emulator/server.ts'
import { PAGE_CSP } from '../../../src/modules/checkout/routes.ts'
import { suiteAcquirer } from '../../helpers/acquirer.ts'
import { makeOverdue } from '../../helpers/expiry.ts'
import { backends, call, eventually, newTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

/**
 * The hosted page of a payment handed to a provider (docs/API.md, The hosted payment page): a live one sends the
 * customer to the provider's payment page until they come back with `returned=1`, then shows the status; a
 * test-mode one, and one no provider's page is for, is the page as before. The provider is the emulator, over
 * HTTP, posting its signed callbacks to this app.
 */

// biome-ignore lint/suspicious/noExplicitAny: responses are read as plain JSON.
type Json = Record<string, any>

for (const backend of backends()) {
  describe(`the hosted page of a payment handed to a provider (${backend})`, () => {
    const ctx = suiteContext(backend)
    let gateway = ''
    before(async () => {
      await ctx.app.listen({ port: 0, host: '127.0.0.1' })
      gateway = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
    })
    const live = suiteAcquirer(ctx, { methods: ['card', 'p2p_card'], gateway: () => gateway })
    const sandboxAccount = suiteAcquirer(ctx, { name: 'sandbox-acquirer', mode: 'test' })

    const create = async (mode: Mode, overrides: Record<string, unknown> = {}): Promise<Json> => {
      const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(overrides), {
        as: { mode },
      })
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }
    const pathOf = (tx: Json) => new URL(tx.payment_url).pathname
    const page = (url: string) => ctx.app.inject({ method: 'GET', url })
    /** The page at `url`, answered 200 with each of `parts` in it: its markup. */
    const shows = async (url: string, ...parts: string[]) => {
      const res = await page(url)
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      for (const part of parts) assert.ok(res.body.includes(part), `${url}: ${part}`)
      return res.body
    }
    const handover = (uuid: string) => ctx.services.providers.handovers.find(ctx.db, uuid)
    const stored = async (tx: Json) =>
      (
        await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`, undefined, { as: { mode: tx.mode } })
      ).json()
    /** The emulator's own address for a page it names by its public URL. */
    const atEmulator = (location: string) => location.replace('http://emulator.test', live.base)

    it('a pending live card payment: 303 to the provider page, with the page headers and nothing else', async () => {
      const tx = await create('live', { description: 'Live order' })
      const record = await handover(tx.uuid)
      assert.equal(record?.state, 'handed_over')
      assert.equal(record?.account_uuid, live.account.uuid)
      assert.equal(record?.redirect_url, `http://emulator.test/pay/${record?.provider_reference}`)

      for (const url of [pathOf(tx), `${pathOf(tx)}?returned=0`, `${pathOf(tx)}?utm_source=mail`]) {
        const res = await page(url)
        assert.equal(res.statusCode, 303, `${url}: ${res.body}`)
        assert.equal(res.headers.location, record?.redirect_url, url)
        assert.equal(res.body, '')
        // The provider learns nothing of the page's address: no referrer, and the answer is not kept.
        assert.equal(res.headers['referrer-policy'], 'no-referrer')
        assert.equal(res.headers['cache-control'], 'no-store')
        assert.equal(res.headers['content-security-policy'], PAGE_CSP)
      }
      // The customer's view is unchanged by it: still pending, and the status endpoint names no provider.
      const status = await page(`${pathOf(tx)}/status`)
      assert.equal(status.statusCode, 200, status.body)
      assert.deepEqual(status.json(), {
        status: 'pending',
        message: 'Waiting for your payment…',
        final: false,
        expires_at: tx.expires_at,
        redirect_url: null,
      })
      assert.equal((await stored(tx)).status, 'pending')
    })

    it('back with returned=1 while pending: the live status page, with no buttons and no provider address', async () => {
      const tx = await create('live')
      for (const query of ['?returned=1', '?returned=1&returned=1', '?returned=0&returned=1']) {
        const res = await page(`${pathOf(tx)}${query}`)
        assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
        assert.match(String(res.headers['content-type']), /^text\/html/)
        assert.equal(res.headers['content-security-policy'], PAGE_CSP)
        assert.ok(res.body.includes('data-status="pending"'), query)
        assert.ok(res.body.includes('>Waiting for your payment…</div>'), query)
        assert.ok(
          res.body.includes('Complete the payment with the payment provider; this page updates by itself.'),
        )
        assert.ok(!res.body.includes('data-simulate'))
        assert.ok(!res.body.includes('emulator.test'), 'the provider page is not in the markup')
      }
    })

    it('the customer pays on the provider page with the challenge code: sent back, and the page shows paid', async () => {
      const tx = await create('live', { success_url: 'https://shop.test/thanks' })
      const redirect = await page(pathOf(tx))
      assert.equal(redirect.statusCode, 303, redirect.body)
      const providerPage = atEmulator(String(redirect.headers.location))
      assert.match(await (await fetch(providerPage)).text(), /name="code"/)
      const paid = await fetch(providerPage, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ code: CHALLENGE_CODE, action: 'pay' }).toString(),
        redirect: 'manual',
      })
      assert.equal(paid.status, 303)
      const back = paid.headers.get('location') as string
      assert.equal(back, `${ctx.config.publicBaseUrl}${pathOf(tx)}?returned=1`)

      // The outcome is the provider's signed callback, not the customer's return.
      await eventually(async () => (await stored(tx)).status === 'paid')
      const [logged] = await ctx.db
        .selectFrom('connector_callbacks')
        .select(['verification', 'result', 'event_type'])
        .where('provider_reference', '=', (await handover(tx.uuid))?.provider_reference as string)
        .execute()
      assert.deepEqual(logged, {
        verification: 'verified',
        result: 'applied',
        event_type: 'payment.succeeded',
      })

      // Final: the page is the hosted page again, with or without returned=1, and it sends the customer on.
      for (const url of [new URL(back).pathname + new URL(back).search, pathOf(tx)])
        await shows(
          url,
          'data-status="paid"',
          '>Payment received. Thank you!</div>',
          'data-redirect-url="https://shop.test/thanks"',
        )
      assert.equal((await handover(tx.uuid))?.state, 'final')
    })

    it('a payment the provider failed, or one whose time ran out, is not sent to the provider again', async () => {
      const declined = await create('live')
      const redirect = await page(pathOf(declined))
      const providerPage = atEmulator(String(redirect.headers.location))
      await fetch(providerPage, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'code=0000&action=pay',
        redirect: 'manual',
      })
      await eventually(async () => (await stored(declined)).status === 'failed')
      await shows(pathOf(declined), 'data-status="failed"')

      const late = await create('live')
      await makeOverdue(ctx.db, late.uuid)
      await shows(pathOf(late), 'data-status="expired"', '>This payment link has expired.</div>')
    })

    it('a host-to-host payment the provider took has no provider page: the requisites it gave are shown', async () => {
      const tx = await create('live', { payment_method: 'p2p_card' })
      const record = await handover(tx.uuid)
      assert.equal(record?.state, 'handed_over')
      assert.equal(record?.redirect_url, null)
      await shows(pathOf(tx), 'Transfer details', '2200700199990001')
    })

    it('a live payment no provider took (the simulator) shows its page as before', async () => {
      const tx = await create('live', { payment_method: 'bank_transfer' })
      assert.equal(await handover(tx.uuid), undefined)
      assert.ok(!(await shows(pathOf(tx), 'data-status="pending"')).includes('data-simulate'))
    })

    it("a test-mode payment a provider's sandbox took goes to its page, and the sandbox cannot decide it", async () => {
      const tx = await create('test')
      const record = await handover(tx.uuid)
      assert.equal(record?.account_uuid, sandboxAccount.account.uuid)
      assert.ok(record?.redirect_url, 'the test account gave a payment page')
      const res = await page(pathOf(tx))
      assert.equal(res.statusCode, 303, res.body)
      assert.equal(res.headers.location, record?.redirect_url)
      // Back from the provider: the page, with no simulate buttons (the provider decides).
      const back = await shows(`${pathOf(tx)}?returned=1`, '<p class="badge">Test mode</p>')
      assert.ok(!back.includes('data-simulate'))
      for (const url of [`/integration/sandbox/transactions/${tx.uuid}/paid`]) {
        const refused = await call(ctx, 'POST', url, undefined, { as: { mode: 'test' } })
        assert.equal(refused.statusCode, 403, refused.body)
        assert.equal(refused.json().error.code, 'sandbox_unavailable')
      }
      const button = await ctx.app.inject({ method: 'POST', url: `${pathOf(tx)}/simulate/paid` })
      assert.ok(button.statusCode >= 400 && button.statusCode < 500, `${button.statusCode} ${button.body}`)
      const now = await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`, undefined, {
        as: { mode: 'test' },
      })
      assert.equal(now.json().status, 'pending')
      assert.equal(now.json().aggregate_version, 1)
    })

    it('a provider page that is not an http(s) address is never followed: the page is shown', async () => {
      for (const [i, target] of [
        'javascript:alert(1)',
        'data:text/html,<script>alert(1)</script>',
        '//evil.test/pay',
        'http://',
      ].entries()) {
        const tx = await create('live', { external_id: `odd-page-${i}` })
        await ctx.db
          .updateTable('payment_handovers')
          .set({ redirect_url: target })
          .where('transaction_uuid', '=', tx.uuid)
          .execute()
        const res = await page(pathOf(tx))
        assert.equal(res.statusCode, 200, `${target}: ${res.body}`)
        assert.equal(res.headers.location, undefined)
        assert.ok(res.body.includes('data-status="pending"'), target)
      }
    })
  })
}

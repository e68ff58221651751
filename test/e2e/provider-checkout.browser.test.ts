import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { eventually } from '../helpers/harness.ts'
import { suiteLiveGateway } from '../helpers/live-gateway.ts'
import { checkPage, openPage, screenshot, withPage } from '../helpers/pages.ts'
import { onPostgres } from '../helpers/postgres.ts'
import { request } from '../helpers/processes.ts'
import { suiteContext } from '../helpers/suite.ts'

/**
 * A live card payment from the customer's first click to the merchant's balance, with every party a real
 * program: the gateway (`serve`), the acquirer (`provider-emulator`) at its own port, and Chromium. The hosted
 * page sends the customer to the acquirer's payment page, the customer passes its challenge and pays, the
 * acquirer sends them back and its signed callback makes the payment paid; the merchant's webhook arrives and
 * the balance moves. Screenshots in test-artifacts/screenshots/provider-checkout-*.png.
 */

// PostgreSQL, as in production: the gateway program and this suite share the database.
onPostgres()

const WIDTHS = [390, 1280] as const
const API_KEY = 'sk_live_acquirer_e2e'
/** One customer's journey takes a few seconds (the page asks its status every 2 s); a busy machine gets room. */
const JOURNEY_MS = 30_000

describe('a live card payment through the acquirer emulator, in Chromium', () => {
  const ctx = suiteContext('postgres')
  const live = suiteLiveGateway(ctx, { apiKey: API_KEY, events: ['transaction.paid'] })
  const liveKey = () => ctx.merchant.keys.live.secret
  const cspViolations: string[] = []
  const pageErrors: string[] = []

  /** The merchant's live balance in USDT, their settlement currency. */
  const balance = async () => {
    const res = await request(live.origin, 'GET', '/integration/balances', { secret: liveKey() })
    assert.equal(res.status, 200, res.text)
    const usdt = (
      res.json().data as { currency: string; total: number; pending: number; available: number }[]
    ).find((row) => row.currency === 'USDT')
    assert.ok(usdt, res.text)
    return usdt
  }

  for (const width of WIDTHS) {
    it(`at ${width} px: sent to the acquirer, challenge 1234, Pay, back on the hosted page as paid`, {
      timeout: JOURNEY_MS,
    }, async () => {
      const before = await balance()
      const created = await request(live.origin, 'POST', '/integration/transactions', {
        secret: liveKey(),
        body: {
          amount: 150000,
          currency: 'RUB',
          payment_method: 'card',
          external_id: `live-e2e-${width}`,
          description: 'Order #7001',
        },
      })
      assert.equal(created.status, 201, created.text)
      const tx = created.json()
      assert.equal(tx.mode, 'live')
      const handover = await ctx.services.providers.handovers.find(ctx.db, tx.uuid)
      assert.equal(handover?.state, 'handed_over', live.gateway.output())
      const reference = handover?.provider_reference as string
      const token = new URL(tx.payment_url).pathname.split('/')[2]
      assert.equal(tx.payment_url, `${live.origin}/pay/${token}`)

      await withPage(openPage(live.browser, width, { cspViolations, pageErrors }), async (page) => {
        const landed = await page.goto(tx.payment_url)
        // The hosted page sent the customer on, at once: the acquirer's page, for this payment.
        assert.equal(landed?.request().redirectedFrom()?.url(), tx.payment_url)
        assert.equal(page.url(), handover?.redirect_url)
        assert.match(page.url(), new RegExp(`^http://127\\.0\\.0\\.1:\\d+/pay/${reference}$`))
        await page.getByRole('heading', { name: 'Emulated acquirer' }).waitFor()
        await page.getByLabel(/Confirmation code/).fill('1234')
        await screenshot(page, `provider-checkout-acquirer-${width}`)
        await page.getByRole('button', { name: 'Pay' }).click()

        // Back at the gateway, told the customer is back: the page stays, and shows the provider's word.
        await page.waitForURL(`${live.origin}/pay/${token}?returned=1`)
        await page.locator('#status.status-paid').waitFor({ timeout: 15_000 })
        assert.equal(await page.locator('#status').textContent(), 'Payment received. Thank you!')
        assert.equal(await page.locator('#amount-label').textContent(), 'Amount paid')
        assert.equal(await page.locator('.amount').textContent(), '₽1,500.00')
        assert.equal(await page.locator('[data-simulate]').count(), 0)
        await checkPage(page, `the returned page at ${width} px`, width, `provider-checkout-paid-${width}`)
        assert.equal(page.url(), `${live.origin}/pay/${token}?returned=1`)
      })

      // The outcome came from the acquirer's signed callback, applied once.
      const paid = await request(live.origin, 'GET', `/integration/transactions/${tx.uuid}`, {
        secret: liveKey(),
      })
      assert.equal(paid.json().status, 'paid', paid.text)
      // (A callback the acquirer sent again, had an answer been slow, would be kept as a duplicate.)
      const callbacks = await ctx.db
        .selectFrom('connector_callbacks')
        .select(['verification', 'result', 'event_type'])
        .where('provider_reference', '=', reference)
        .orderBy('received_at')
        .execute()
      assert.deepEqual(callbacks[0], {
        verification: 'verified',
        result: 'applied',
        event_type: 'payment.succeeded',
      })
      assert.ok(
        callbacks.slice(1).every((c) => c.verification === 'verified' && c.result === 'duplicate'),
        JSON.stringify(callbacks),
      )

      // The merchant was told, signed with the live webhook secret.
      const delivered = await eventually(
        async () => live.receiver.received.find((r) => JSON.parse(r.body).transaction?.uuid === tx.uuid),
        15_000,
      )
      const event = new Webhook(live.webhookSecret).verify(
        delivered.body,
        delivered.headers as Record<string, string>,
      ) as { event: string; transaction: { status: string; settlement_amount: number } }
      assert.equal(event.event, 'transaction.paid')
      assert.equal(event.transaction.status, 'paid')
      assert.equal(event.transaction.settlement_amount, paid.json().settlement_amount)

      // And the money is the merchant's: the live balance grew by the payment's settlement amount.
      const after = await balance()
      assert.equal(after.total - before.total, paid.json().settlement_amount)
      assert.ok(paid.json().settlement_amount > 0)
      assert.equal(
        after.pending + after.available - (before.pending + before.available),
        after.total - before.total,
      )
    })
  }

  it('the pages raised no error and broke no Content Security Policy', () => {
    assert.deepEqual(pageErrors, [])
    assert.deepEqual(cspViolations, [])
  })
})

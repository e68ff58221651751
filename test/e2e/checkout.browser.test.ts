import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { assertAccessible, launchChromium, SHOTS } from '../helpers/browser.ts'
import {
  call,
  createTestContext,
  newTransaction,
  startReceiver,
  type TestContext,
} from '../helpers/harness.ts'
import { providerCallbacks } from '../helpers/rows.ts'

/**
 * The hosted payment page in a real browser (Debian's Chromium, driven by playwright-core): what a customer
 * sees and does, the accessibility check, and proof that the page talks to nothing but the service.
 */
const WIDTHS = [360, 1280] as const

describe('hosted payment page in Chromium', () => {
  let ctx: TestContext
  let browser: Browser
  let origin: string
  let shop: Awaited<ReturnType<typeof startReceiver>>

  before(async () => {
    ctx = await createTestContext('pglite')
    await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    origin = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
    shop = await startReceiver(() => ({
      status: 200,
      headers: { 'content-type': 'text/html' },
      body: '<!doctype html><title>Back at the shop</title><h1>Back at the shop</h1>',
    }))
    browser = await launchChromium()
  })

  after(async () => {
    await browser?.close()
    await shop?.close()
    await ctx?.close()
  })

  /** A transaction of the main merchant in `mode`, and the address of its page on the running service. */
  async function payment(overrides: Record<string, unknown> = {}, mode: 'test' | 'live' = 'test') {
    const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(overrides), {
      as: { mode },
    })
    assert.equal(res.statusCode, 201, res.body)
    const tx = res.json()
    return { tx, url: `${origin}${new URL(tx.payment_url).pathname}` }
  }

  interface Opened {
    context: BrowserContext
    page: Page
    /** Every request the page made, and every Content Security Policy complaint in its console. */
    requests: string[]
    cspViolations: string[]
  }

  async function open(url: string, width: number): Promise<Opened> {
    const context = await browser.newContext({ viewport: { width, height: 900 } })
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
    const page = await context.newPage()
    const requests: string[] = []
    const cspViolations: string[] = []
    page.on('request', (request) => requests.push(request.url()))
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text())
    })
    await page.goto(url)
    return { context, page, requests, cspViolations }
  }

  /** The page made no request but to the service, apart from the final navigation back to the shop. */
  function assertOnlyService(opened: Opened, shopUrls: string[] = []) {
    const foreign = opened.requests.filter(
      (u) => !u.startsWith(`${origin}/`) && !shopUrls.some((s) => u.startsWith(s)),
    )
    assert.deepEqual(foreign, [], 'requests to other origins')
    assert.deepEqual(opened.cspViolations, [], 'Content Security Policy violations')
  }

  async function shoot(page: Page, name: string, width: number) {
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true })
  }

  for (const width of WIDTHS) {
    it(`card payment at ${width} px: amount, countdown, Simulate payment, paid state, then success_url`, async () => {
      const success = `${shop.url}/thanks?order=1`
      const { url } = await payment({
        amount: 150000,
        currency: 'RUB',
        description: 'Order #1001',
        success_url: success,
        fail_url: `${shop.url}/sorry`,
      })
      const opened = await open(url, width)
      const { page } = opened
      try {
        assert.equal(await page.locator('h1').textContent(), 'Main Shop')
        // 1,500.00 RUB with the demo card fee paid by the merchant: the customer pays exactly the amount.
        assert.equal(await page.locator('.amount').textContent(), '₽1,500.00')
        assert.equal(await page.locator('.description').textContent(), 'Order #1001')
        await page.waitForFunction(() =>
          /^\d{2}:\d{2}$/.test(document.getElementById('countdown')?.textContent ?? ''),
        )
        assert.match((await page.locator('#status').textContent()) ?? '', /Waiting for your payment/)
        assert.equal(await page.locator('#amount-label').textContent(), 'Amount to pay')
        await assertAccessible(page)
        await shoot(page, 'card-pending', width)

        await page.getByRole('button', { name: 'Simulate payment' }).click()
        await page.locator('#status.status-paid').waitFor()
        assert.equal(await page.locator('#status').textContent(), 'Payment received. Thank you!')
        // Once paid, the amount is no longer owed: the label says so without a reload.
        assert.equal(await page.locator('#amount-label').textContent(), 'Amount paid')
        // Nothing is left to do: the test buttons are off and gone with the hint, and so is the countdown.
        assert.equal(await page.locator('[data-simulate="paid"]').isDisabled(), true)
        assert.equal(await page.locator('.sandbox').isHidden(), true)
        assert.equal(await page.locator('.hint').isHidden(), true)
        assert.equal(await page.locator('.countdown').isHidden(), true)
        await shoot(page, 'card-paid', width)
        await assertAccessible(page)
        await page.waitForURL(success, { timeout: 10_000 })
        assert.equal(await page.title(), 'Back at the shop')
        assertOnlyService(opened, [success])
      } finally {
        await opened.context.close()
      }
    })

    it(`failure at ${width} px, by keyboard alone: Simulate failure, failed state, then fail_url`, async () => {
      const fail = `${shop.url}/sorry?order=2`
      const { url, tx } = await payment({ success_url: `${shop.url}/thanks`, fail_url: fail })
      const opened = await open(url, width)
      const { page } = opened
      try {
        // Tab through the page until the failure button has the focus, then press Enter.
        for (let i = 0; i < 20; i++) {
          await page.keyboard.press('Tab')
          if ((await page.evaluate(() => document.activeElement?.textContent)) === 'Simulate failure') break
        }
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Simulate failure')
        await page.keyboard.press('Enter')
        await page.locator('#status.status-failed').waitFor()
        assert.equal(await page.locator('#status').textContent(), 'The payment did not go through.')
        assert.equal(await page.locator('#amount-label').textContent(), 'Amount not paid')
        await shoot(page, 'card-failed', width)
        await page.waitForURL(fail, { timeout: 10_000 })
        assertOnlyService(opened, [fail])
        // The button went through the sandbox path: the transaction failed, with its provider callback recorded.
        const after = (await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`)).json()
        assert.equal(after.status, 'failed')
        const callbacks = await providerCallbacks(ctx.db, tx.uuid)
        assert.deepEqual(
          callbacks.map((c) => [c.connector, c.outcome, c.result]),
          [['simulator', 'failed', 'applied']],
        )
      } finally {
        await opened.context.close()
      }
    })

    it(`p2p_card at ${width} px: shows the requisites and copies them`, async () => {
      const { url, tx } = await payment({ payment_method: 'p2p_card', amount: 250000, currency: 'RUB' })
      const opened = await open(url, width)
      const { page } = opened
      try {
        assert.equal(await page.getByRole('heading', { name: 'Transfer details' }).count(), 1)
        const values = await page.locator('.requisite .value').allTextContents()
        assert.deepEqual(values.sort(), Object.values(tx.requisites as Record<string, string>).sort())
        const cardRow = page.locator('.requisite', { hasText: 'Card number' })
        await cardRow.getByRole('button', { name: 'Copy' }).click()
        await page.waitForFunction(() => document.getElementById('announce')?.textContent?.includes('Copied'))
        assert.equal(await page.evaluate(() => navigator.clipboard.readText()), tx.requisites.card_number)
        await assertAccessible(page)
        await shoot(page, 'p2p-requisites', width)
        assertOnlyService(opened)
      } finally {
        await opened.context.close()
      }
    })

    it(`an expired payment at ${width} px shows the expired state and no test buttons`, async () => {
      const { url, tx } = await payment()
      await ctx.db
        .updateTable('transactions')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('uuid', '=', tx.uuid)
        .execute()
      const opened = await open(url, width)
      const { page } = opened
      try {
        assert.equal(await page.locator('#status').textContent(), 'This payment link has expired.')
        assert.equal(await page.locator('#status.status-expired').count(), 1)
        // Rendered by the server this way: the amount was never paid.
        assert.equal(await page.locator('#amount-label').textContent(), 'Amount not paid')
        assert.equal(await page.locator('.countdown').isHidden(), true)
        assert.equal(await page.locator('[data-simulate="paid"]').isDisabled(), true)
        assert.equal(await page.locator('.sandbox').isHidden(), true)
        assert.equal(await page.getByRole('button', { name: 'Simulate payment' }).count(), 0)
        await assertAccessible(page)
        await shoot(page, 'expired', width)
        assertOnlyService(opened)
      } finally {
        await opened.context.close()
      }
    })

    it(`a live payment at ${width} px has no test buttons, and an unknown token is a plain 404 page`, async () => {
      const { url } = await payment({}, 'live')
      const opened = await open(url, width)
      try {
        assert.equal(await opened.page.locator('[data-simulate]').count(), 0)
        assert.equal(await opened.page.locator('.badge').count(), 0)
        await shoot(opened.page, 'live-pending', width)
        const missing = await opened.page.goto(`${origin}/pay/AAAAAAAAAAAAAAAAAAAAAA`)
        assert.equal(missing?.status(), 404)
        assert.equal(await opened.page.locator('h1').textContent(), 'Payment not found')
        await assertAccessible(opened.page)
        await shoot(opened.page, 'not-found', width)
        assertOnlyService(opened)
      } finally {
        await opened.context.close()
      }
    })
  }
})

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { startWorkers } from '../../src/workers/index.ts'
import { launchChromium } from '../helpers/browser.ts'
import { activeUser } from '../helpers/dashboard.ts'
import {
  call,
  createTestContext,
  eventually,
  paidTransaction,
  startReceiver,
  type TestContext,
} from '../helpers/harness.ts'
import { checkPage, openPage, openSection, signInToDashboard, withPage } from '../helpers/pages.ts'
import { freePort } from '../helpers/program.ts'

/**
 * The dashboard's money-out and developer pages in Chromium, as a merchant's staff use them: a payout from quote to
 * completion, an expired quote, an API key used with the API, the webhook secret rotated and a delivery
 * verified with both secrets, a failed delivery redelivered. Screenshots at 1280 and 390 px, in
 * test-artifacts/screenshots/dashboard-money-*.png: the other dashboard suite photographs some of the same pages,
 * and may run at the same time.
 */
const WIDTHS = [1280, 390] as const
const TRC20 = 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE'

describe('merchant dashboard, money out and developer tools, in Chromium', () => {
  let ctx: TestContext
  let browser: Browser
  let origin: string
  let workers: ReturnType<typeof startWorkers>
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  let answer = 200
  const cspViolations: string[] = []
  const pageErrors: string[] = []

  before(async () => {
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    ctx = await createTestContext(
      'pglite',
      { publicBaseUrl: origin, webhookAllowPrivateNetworks: true },
      { dispatch: { schedule: [0.05, 0.05, 0.05], random: () => 0.5 } },
    )
    await ctx.app.listen({ port, host: '127.0.0.1' })
    workers = startWorkers(ctx.handle, ctx.services, ctx.app.log, { dispatcher: { pollMs: 50 } })
    receiver = await startReceiver(() => ({ status: answer }))
    browser = await launchChromium()
  })

  after(async () => {
    await browser?.close()
    await workers?.stop()
    await receiver?.close()
    await ctx?.close()
  })

  /** `work` on a page `width` px wide, signed in as a new owner; the page's context is closed afterwards. */
  async function signedIn(width: number, work: (page: Page) => Promise<void>): Promise<void> {
    const owner = await activeUser(ctx, 'owner')
    const open = openPage(browser, width, { cspViolations, pageErrors }, { clipboardAt: origin })
    await withPage(open, async (page) => {
      await signInToDashboard(page, origin, owner)
      await work(page)
    })
  }

  /** Each page: no wider than the screen, accessible, photographed. */
  const check = (page: Page, name: string, width: number) =>
    checkPage(page, name, width, `dashboard-money-${name}-${width}`)

  /**
   * Fills the new payout form for a USDT wallet and asks for a quote. The balances answer is held until the form is
   * filled: what a quick hand types before the balance shows stays typed.
   */
  async function quote(page: Page, amount: string) {
    let release = () => {}
    const filled = new Promise<void>((resolve) => {
      release = resolve
    })
    await page.route('**/integration/balances', async (route) => {
      await filled
      await route.continue()
    })
    await page.goto(`${origin}/dashboard/test/payouts/new`)
    await page.getByLabel('Wallet address').fill(TRC20)
    await page.getByLabel('Amount').fill(amount)
    await page.getByLabel('Currency').fill('USD')
    release()
    await page.locator('.balance-note', { hasText: / USDT$/ }).waitFor()
    await page.unroute('**/integration/balances')
    assert.equal(await page.getByLabel('Wallet address').inputValue(), TRC20)
    assert.equal(await page.getByLabel('Amount').inputValue(), amount)
    assert.equal(await page.getByLabel('Currency').inputValue(), 'USD')
    await page.getByRole('button', { name: 'Get a quote' }).click()
    await page.getByRole('heading', { name: 'Quote' }).waitFor()
  }

  it('a payout: quote, the held rate counting down, confirm; it completes and the balance history shows it', async () => {
    await paidTransaction(ctx, { amount: 150000, currency: 'RUB' })
    let uuid = ''
    await signedIn(1280, async (page) => {
      await quote(page, '5.00')
      const timer = page.getByRole('timer')
      const seconds = async () => Number(/held for (\d+) s/.exec((await timer.textContent()) ?? '')?.[1])
      const first = await seconds()
      assert.ok(first > 50 && first <= 60, `countdown starts near 60 s: ${first}`)
      await eventually(async () => ((await seconds()) < first ? true : null), 5000, 100)
      await check(page, 'payout-quote', 1280)
      await page.getByRole('button', { name: 'Confirm payout' }).click()
      await page.getByRole('heading', { name: /^Payout 5\.00 USD/ }).waitFor()
      uuid = page.url().split('/').at(-1) as string
      // The sandbox provider completes it.
      const done = await call(ctx, 'POST', `/integration/sandbox/payouts/${uuid}/completed`)
      assert.equal(done.statusCode, 200, done.body)
      // The page follows the payout to its end by itself.
      await page.getByRole('heading', { name: /^Payout 5\.00 USD\s*Completed/i }).waitFor()
      await page.locator('ol.timeline li', { hasText: 'completed' }).waitFor()
      await check(page, 'payout', 1280)
      await page.goto(`${origin}/dashboard/test/balances?source_uuid=${uuid}`)
      await page.locator('table[aria-label="Balance history"] tbody tr').first().waitFor()
      const types = await page
        .locator('table[aria-label="Balance history"] tbody tr td:nth-child(2)')
        .allTextContents()
      assert.ok(types.includes('payout reserve'), types.join(', '))
      assert.ok(types.includes('payout'), types.join(', '))
    })
    // A payout the gateway paid on a chain itself names its transaction: the whole hash, wrapped on a phone.
    const hash = `0x${'5c504ed432cb5113'.repeat(4)}`
    const updated = await ctx.db
      .updateTable('payouts')
      .set({ transaction_hash: hash })
      .where('uuid', '=', uuid)
      .executeTakeFirst()
    assert.equal(updated.numUpdatedRows, 1n)
    await signedIn(390, async (page) => {
      await page.goto(`${origin}/dashboard/test/payouts/${uuid}`)
      const shown = page.locator('section[aria-labelledby="payout-details"] dd').getByText(hash)
      await shown.waitFor()
      await check(page, 'payout-chain', 390)
    })
  })

  it('a 25 USDT payout with a 1.25 USDT fee: the recipient amount, the fee and the total, labelled and formatted', async () => {
    await paidTransaction(ctx, { amount: 500000, currency: 'RUB' })
    const before = await ctx.db
      .selectFrom('merchants')
      .select(['payout_fee_bps', 'payout_fixed_fee_micro'])
      .where('uuid', '=', ctx.merchant.uuid)
      .executeTakeFirstOrThrow()
    await ctx.db
      .updateTable('merchants')
      .set({ payout_fee_bps: 500, payout_fixed_fee_micro: 0 })
      .where('uuid', '=', ctx.merchant.uuid)
      .execute()
    const balance = (await call(ctx, 'GET', '/integration/balances'))
      .json()
      .data.find((b: { currency: string }) => b.currency === 'USDT')
    const raw = /amount usdt micro|fee usdt micro|quote id|\d{4}-\d{2}-\d{2}T\d{2}:/i
    try {
      await signedIn(1280, async (page) => {
        const pairs = async (section: string) =>
          (await page.locator(`${section} dl`).innerText()).replace(/\s+/g, ' ')
        await page.goto(`${origin}/dashboard/test/payouts/new`)
        const whole = Math.trunc(balance.available / 1e6).toLocaleString('en-US')
        await page.locator('.balance-note', { hasText: `Available balance: ${whole}.` }).waitFor()
        assert.match(await page.locator('.balance-note').innerText(), / USDT$/)
        assert.equal(await page.getByLabel('Currency').inputValue(), 'USDT')
        await page.getByLabel('Wallet address').fill(TRC20)
        await page.getByLabel('Amount').fill('25')
        await page.getByRole('button', { name: 'Get a quote' }).click()
        await page.getByRole('heading', { name: 'Quote' }).waitFor()
        const quoted = await pairs('section[aria-labelledby="quote-title"]')
        assert.match(quoted, /Recipient gets 25\.00 USDT/)
        assert.match(quoted, /Fee 1\.25 USDT/)
        assert.match(quoted, /Total debited from your balance 26\.25 USDT/)
        assert.doesNotMatch(quoted, /Paid out/)
        for (const w of WIDTHS) {
          await page.setViewportSize({ width: w, height: 900 })
          await check(page, 'payout-figures-quote', w)
        }
        await page.getByRole('button', { name: 'Confirm payout' }).click()
        await page.getByRole('heading', { name: /^Payout 25\.00 USDT/ }).waitFor()
        const shown = await pairs('section[aria-labelledby="payout-money"]')
        assert.match(shown, /Recipient gets 25\.00 USDT/)
        assert.match(shown, /Fee 1\.25 USDT/)
        assert.match(shown, /Total debited from your balance 26\.25 USDT/)
        assert.match(shown, /Rate 1 USDT = 1 USDT/)
        assert.doesNotMatch(shown, raw)
        assert.doesNotMatch(shown, /25000000|1250000/)
        for (const w of WIDTHS) {
          await page.setViewportSize({ width: w, height: 900 })
          await check(page, 'payout-figures', w)
        }
      })
    } finally {
      await ctx.db.updateTable('merchants').set(before).where('uuid', '=', ctx.merchant.uuid).execute()
    }
  })

  it('an expired quote is refused with a clear message, and a new quote can be asked', async () => {
    await paidTransaction(ctx, { amount: 150000, currency: 'RUB' })
    await signedIn(1280, async (page) => {
      await quote(page, '2.00')
      // The held rate runs out (60 s): moved into the past in the database rather than waited for.
      await ctx.db
        .updateTable('payout_quotes')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('merchant_uuid', '=', ctx.merchant.uuid)
        .execute()
      await page.getByRole('button', { name: 'Confirm payout' }).click()
      await page
        .getByRole('alert')
        .filter({ hasText: /quote has expired/i })
        .waitFor()
      await check(page, 'payout-quote-expired', 1280)
      await page.getByRole('button', { name: 'New quote' }).click()
      await page
        .getByRole('timer')
        .filter({ hasText: /held for \d+ s/ })
        .waitFor()
    })
  })

  it('an API key made in the dashboard works with the API at once, and stops when revoked', async () => {
    await signedIn(1280, async (page) => {
      await openSection(page, 'API keys')
      await page.getByRole('button', { name: 'Create a test key' }).click()
      const secret = await page.getByLabel("New key's secret").inputValue()
      ctx.secrets.push(secret)
      assert.match(secret, /^sk_test_/)
      const use = () => fetch(`${origin}/integration/balances`, { headers: { 'x-api-key': secret } })
      assert.equal((await use()).status, 200)
      await page.getByRole('button', { name: 'Copy the secret' }).click()
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret)
      await check(page, 'api-keys', 1280)
      const keyId = (await page.locator('.ok .mono').first().textContent()) as string
      page.once('dialog', (dialog) => dialog.accept())
      await page.getByRole('button', { name: `Revoke ${keyId}` }).click()
      await page
        .getByRole('cell', { name: /^revoked/ })
        .first()
        .waitFor()
      await eventually(async () => ((await use()).status === 401 ? true : null), 5000, 100)
    })
  })

  it('webhooks: rotate the secret, a following delivery verifies with both; a failed delivery is redelivered', async () => {
    await signedIn(1280, async (page) => {
      await openSection(page, 'Webhooks')
      await page.getByLabel(/URL that receives/).fill(`${receiver.url}/hooks`)
      // Subscribed to everything but the expiry of a payment.
      await page.getByRole('checkbox', { name: 'transaction.expired' }).uncheck()
      await page.getByRole('button', { name: 'Save', exact: true }).click()
      await eventually(async () => {
        const config = (await call(ctx, 'GET', '/integration/webhook')).json()
        return config.url === `${receiver.url}/hooks` && !config.events.includes('transaction.expired')
          ? true
          : null
      })
      assert.ok((await call(ctx, 'GET', '/integration/webhook')).json().events.includes('transaction.paid'))
      await page.getByRole('button', { name: 'Send a test delivery' }).waitFor()
      const before = (await call(ctx, 'GET', '/integration/webhook')).json().secret as string
      ctx.secrets.push(before)

      page.once('dialog', (dialog) => dialog.accept())
      await page.getByRole('button', { name: 'Rotate secret' }).click()
      const rotated = await page.getByLabel('New signing secret').inputValue()
      ctx.secrets.push(rotated)
      assert.notEqual(rotated, before)
      const count = receiver.received.length
      await page.getByRole('button', { name: 'Send a test delivery' }).click()
      await page
        .getByRole('status')
        .filter({ hasText: /Test delivery\s*Succeeded/i })
        .waitFor()
      const delivered = receiver.received[count]
      assert.ok(delivered, 'the receiver got the test delivery')
      for (const secret of [before, rotated])
        assert.doesNotThrow(() =>
          new Webhook(secret).verify(delivered.body, delivered.headers as Record<string, string>),
        )
      await check(page, 'webhooks', 1280)

      // A delivery the endpoint refuses (its retries spent), found in the log and delivered again once the
      // endpoint is back. A test delivery that failed offers no redelivery (the API refuses it).
      answer = 500
      await page.getByRole('button', { name: 'Send a test delivery' }).click()
      await page
        .getByRole('status')
        .filter({ hasText: /Test delivery\s*Failed/i })
        .waitFor()
      const paid = await paidTransaction(ctx)
      await eventually(
        async () => {
          const log = (
            await call(ctx, 'GET', '/integration/webhook/deliveries?status=failed&event=transaction.paid')
          ).json()
          return log.data.find((d: { event_id: string }) => d.event_id) ? true : null
        },
        10_000,
        100,
      )
      assert.ok(paid.uuid)
      answer = 200
      await page.getByLabel('Status').selectOption('failed')
      await page.getByRole('button', { name: 'Apply' }).click()
      await page.getByRole('cell', { name: 'transaction.paid' }).first().waitFor()
      assert.equal(await page.getByRole('button', { name: /^Redeliver webhook\.test/ }).count(), 0)
      // Its request and every attempt's answer.
      await page
        .getByRole('button', { name: /^Details of transaction\.paid/ })
        .first()
        .click()
      await page.getByRole('heading', { name: /^Request: POST/ }).waitFor()
      assert.match((await page.locator('.attempts').textContent()) ?? '', /Attempt 1 .*HTTP 500/)
      // The body sent is laid out for reading, one field a line.
      const request =
        (await page.getByRole('region', { name: /^Request headers and body/ }).textContent()) ?? ''
      assert.match(request, /\n\{\n {2}"[a-z_]+": /)
      await check(page, 'webhook-delivery-details', 1280)
      const redeliver = page.getByRole('button', { name: /^Redeliver transaction\.paid/ }).first()
      await redeliver.click()
      // Queued again, it leaves the list of failed deliveries.
      await redeliver.waitFor({ state: 'detached' })
      await eventually(
        async () => {
          const log = (await call(ctx, 'GET', '/integration/webhook/deliveries?per_page=5')).json()
          return log.data.some(
            (d: { status: string; attempts: number }) => d.status === 'succeeded' && d.attempts >= 2,
          )
            ? true
            : null
        },
        10_000,
        100,
      )
      await page.getByLabel('Status').selectOption('succeeded')
      await page.getByRole('button', { name: 'Apply' }).click()
      await page
        .locator('table[aria-label="Delivery log"] tbody tr', { hasText: /transaction\.paid/ })
        .first()
        .waitFor()
    })
  })

  it('a payout with the keyboard only: from the payouts page to the confirmed payout', async () => {
    await paidTransaction(ctx, { amount: 150000, currency: 'RUB' })
    await signedIn(1280, async (page) => {
      await page.goto(`${origin}/dashboard/test/payouts`)
      await page.getByRole('link', { name: 'New payout' }).waitFor()
      const focused = () =>
        page.evaluate(() => {
          const el = document.activeElement as HTMLInputElement | null
          return {
            text: el?.textContent?.trim() ?? '',
            name: el?.name ?? '',
            label: el?.labels?.[0]?.textContent?.trim() ?? '',
          }
        })
      const tabTo = async (match: (f: Awaited<ReturnType<typeof focused>>) => boolean, what: string) => {
        for (let i = 0; i < 60; i++) {
          await page.keyboard.press('Tab')
          if (match(await focused())) return
        }
        assert.fail(`Tab never reached ${what}`)
      }
      await tabTo((f) => f.text === 'New payout', 'the New payout link')
      await page.keyboard.press('Enter')
      await page.getByRole('heading', { name: 'New payout' }).waitFor()
      await tabTo((f) => f.name === 'address', 'the wallet address')
      await page.keyboard.type(TRC20)
      await tabTo((f) => f.name === 'amount', 'the amount')
      await page.keyboard.type('3.00')
      await tabTo((f) => f.name === 'currency', 'the currency')
      await page.keyboard.press('ControlOrMeta+a')
      await page.keyboard.type('USD')
      await page.keyboard.press('Enter')
      await page.getByRole('timer').waitFor()
      await tabTo((f) => f.text === 'Confirm payout', 'Confirm payout')
      await page.keyboard.press('Enter')
      await page.getByRole('heading', { name: /^Payout 3\.00 USD/ }).waitFor()
    })
  })

  it('the money-out and developer pages at 390 px', async () => {
    await signedIn(390, async (page) => {
      for (const [name, path, ready] of [
        ['payouts', 'payouts', 'table[aria-label="Payouts"]'],
        ['payout-new', 'payouts/new', 'form'],
        ['balances', 'balances', 'table[aria-label="Balance history"]'],
        ['webhooks', 'developers/webhooks', 'table[aria-label="Delivery log"]'],
        ['api-keys', 'developers/api-keys', 'table[aria-label="API keys"]'],
        ['events', 'developers/events', 'h1'],
        ['profile', 'settings/profile', 'table[aria-label="Payment fees"]'],
      ] as const) {
        await page.goto(`${origin}/dashboard/test/${path}`)
        await page.locator(ready).first().waitFor()
        await page.waitForLoadState('networkidle')
        await check(page, name, WIDTHS[1])
      }
    })
    assert.deepEqual(cspViolations, [], 'Content Security Policy violations')
    assert.deepEqual(pageErrors, [], 'errors in the page')
  })
})

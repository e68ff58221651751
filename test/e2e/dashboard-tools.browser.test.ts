import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { money } from '../../dashboard/src/format.ts'
import { totpCode } from '../../src/lib/totp.ts'
import { activeUser, enrol, forgetLastCode, signedIn } from '../helpers/dashboard.ts'
import { call, paidTransaction, postRefund, type TestContext } from '../helpers/harness.ts'
import {
  checkPage,
  downloadedCsv,
  openPage,
  openSection,
  servedWithChromium,
  signInToDashboard,
  withPage,
} from '../helpers/pages.ts'

/**
 * The dashboard's tools to find and account, in Chromium: the header's search, the refunds list naming each
 * payment, the audit log's filters and export, the balance summary and its export, the webhook signing secret
 * revealed (with the authenticator's code when asked), API key names. Screenshots in
 * test-artifacts/screenshots/dashboard-tools-*.png.
 */
describe('dashboard search, summaries and developer tools, in Chromium', () => {
  let ctx: TestContext
  let browser: Browser
  let origin: string
  const cspViolations: string[] = []
  const pageErrors: string[] = []

  before(async () => {
    ;({ ctx, browser, origin } = await servedWithChromium())
  })

  after(async () => {
    await browser?.close()
    await ctx?.close()
    assert.deepEqual(cspViolations, [], 'Content Security Policy violations')
    assert.deepEqual(pageErrors, [], 'errors in the page')
  })

  const newPage = (width: number) =>
    openPage(browser, width, { cspViolations, pageErrors }, { clipboardAt: origin })
  const check = (page: Page, name: string, width: number) =>
    checkPage(page, name, width, `dashboard-tools-${name}-${width}`)

  /** Types `text` in the header's search box and waits for the results. */
  async function find(page: Page, text: string) {
    const box = page.getByRole('searchbox', { name: 'Find a payment, refund, payout or event' })
    await box.fill(text)
    await box.press('Enter')
    await page.getByRole('heading', { name: 'Search', level: 1 }).waitFor()
    await page
      .getByRole('status')
      .filter({ hasText: /results? for/ })
      .waitFor()
  }

  it('the search box on every page finds a payment by external id and amount, each result linked', async () => {
    const tag = `find-${Date.now().toString(36)}`
    const paid = await paidTransaction(ctx, { amount: 123_456, currency: 'RUB', external_id: tag })
    const theirs = await paidTransaction(ctx, { external_id: `${tag}-theirs` }, { merchant: ctx.other })
    const owner = await activeUser(ctx, 'owner')
    for (const width of [1280, 390]) {
      await withPage(newPage(width), async (page) => {
        await signInToDashboard(page, origin, owner)
        await openSection(page, 'Refunds')
        await find(page, tag)
        const link = page.getByRole('table', { name: 'Search results' }).getByRole('link', { name: tag })
        await link.waitFor()
        await check(page, 'search', width)
        await link.click()
        await page.getByRole('heading', { name: /^Payment 1,234\.56 RUB/ }).waitFor()
        assert.ok(page.url().endsWith(`/dashboard/test/payments/${paid.uuid}`))
        // By amount, as people type it.
        await find(page, '1234.56')
        await page.getByRole('table', { name: 'Search results' }).getByRole('link', { name: tag }).waitFor()
        // Another merchant's payment is never found.
        await find(page, `${tag}-theirs`)
        await page.getByText(`Nothing of this mode matches “${tag}-theirs”.`).waitFor()
        assert.equal(await page.getByText(theirs.uuid).count(), 0)
      })
    }
  })

  it('refunds name their payment and its amount; the audit log filters by person, action and date, links and exports', async () => {
    const tag = `refunded-${Date.now().toString(36)}`
    const paid = await paidTransaction(ctx, { amount: 50_000, currency: 'RUB', external_id: tag })
    const refund = await postRefund(ctx, ctx.merchant, paid.uuid, 12_500, `tools-${tag}`)
    assert.equal(refund.statusCode, 201, refund.body)
    const owner = await activeUser(ctx, 'owner')
    const admin = await activeUser(ctx, 'admin')
    await withPage(newPage(1280), async (page) => {
      await signInToDashboard(page, origin, admin)
    })
    await withPage(newPage(1280), async (page) => {
      await signInToDashboard(page, origin, owner)
      await openSection(page, 'Refunds')
      const row = page.locator('table[aria-label="Refunds"] tbody tr', { hasText: tag })
      await row.waitFor()
      assert.match((await row.innerText()).replace(/\s+/g, ' '), /125\.00 RUB .*500\.00 RUB/)
      await row.getByRole('link', { name: tag }).click()
      await page.getByRole('heading', { name: /^Payment 500\.00 RUB/ }).waitFor()

      await openSection(page, 'Audit log')
      await page.locator('table[aria-label="Audit log"] tbody tr').first().waitFor()
      await page.getByLabel('Person').selectOption({ label: admin.email })
      await page.getByLabel('Action').selectOption('login_succeeded')
      const today = new Date().toISOString().slice(0, 10)
      await page.getByLabel('From', { exact: true }).fill(today)
      await page.getByLabel('To', { exact: true }).fill(today)
      await page.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL(/action=login_succeeded/)
      const rows = page.locator('table[aria-label="Audit log"] tbody tr')
      await page.getByRole('cell', { name: admin.email, exact: true }).first().waitFor()
      const who = await rows.locator('td:nth-child(2)').allTextContents()
      assert.ok(who.length >= 1 && who.every((w) => w === admin.email), who.join(', '))
      await check(page, 'audit-log-filtered', 1280)
      // The export: every matching row, with the same filters.
      const { header, rows: lines } = await downloadedCsv(page, () =>
        page.getByRole('button', { name: 'Export CSV' }).click(),
      )
      assert.ok(lines.length >= 1)
      for (const line of lines) {
        assert.equal(line[header.indexOf('action')], 'login_succeeded')
        assert.equal(line[header.indexOf('actor_email')], admin.email)
      }
      // A target is linked to where it is shown: the person's invitation, to the people page.
      await page.goto(`${origin}/dashboard/test/settings/audit-log?action=user_invited`)
      await page.locator('table[aria-label="Audit log"] tbody tr a').first().click()
      await page.getByRole('heading', { name: 'People', level: 1 }).waitFor()
    })
  })

  it('the balance summary of a period, per currency, adds up and exports', async () => {
    await paidTransaction(ctx, { amount: 20_000, currency: 'RUB' })
    const owner = await activeUser(ctx, 'owner')
    const api = (await call(ctx, 'GET', '/integration/balances/summary')).json()
    const usdt = api.data.find((line: { currency: string }) => line.currency === 'USDT')
    assert.ok(usdt, JSON.stringify(api))
    for (const width of [1280, 390]) {
      await withPage(newPage(width), async (page) => {
        await signInToDashboard(page, origin, owner)
        await openSection(page, 'Balances')
        await page.getByRole('link', { name: 'Summary for a period' }).click()
        await page.getByRole('heading', { name: 'Balance summary', level: 1 }).waitFor()
        const line = page.locator('table[aria-label="Balance summary"] tbody tr', { hasText: 'USDT' })
        await line.waitFor()
        const cells = await line.locator('td').allTextContents()
        assert.equal(cells[0], 'USDT')
        // The closing balance, then the count of movements, as the API gives them.
        assert.deepEqual(cells.slice(-2), [
          money(usdt.closing_balance, 'USDT'),
          String(usdt.balance_transactions),
        ])
        await check(page, 'balance-summary', width)
      })
    }
    await withPage(newPage(1280), async (page) => {
      await signInToDashboard(page, origin, owner)
      const today = new Date().toISOString().slice(0, 10)
      await page.goto(`${origin}/dashboard/test/balances/summary?from=${today}&to=${today}`)
      assert.equal(await page.getByLabel('From', { exact: true }).inputValue(), today)
      await page.locator('table[aria-label="Balance summary"] tbody tr').first().waitFor()
      const { header, rows: lines } = await downloadedCsv(page, () =>
        page.getByRole('button', { name: 'Export CSV' }).click(),
      )
      assert.ok(header.includes('closing_balance') && header.includes('opening_balance'), header.join())
      const line = lines.find((l) => l[header.indexOf('currency')] === 'USDT')
      assert.ok(line)
      const sum = ['opening_balance', 'payments', 'fees', 'refunds', 'payouts', 'transfers', 'adjustments']
        .map((c) => Number(line[header.indexOf(c)]))
        .reduce((a, b) => a + b, 0)
      assert.equal(sum, Number(line[header.indexOf('closing_balance')]))
    })
  })

  it('the webhook signing secret: revealed on request, with the authenticator code when the user has one, and audited', async () => {
    const config = await call(ctx, 'PUT', '/integration/webhook', { url: 'https://hooks.example.test/tools' })
    assert.equal(config.statusCode, 200, config.body)
    const secret = (await call(ctx, 'GET', '/integration/webhook')).json().secret as string
    ctx.secrets.push(secret)
    const developer = await signedIn(ctx, 'developer')
    const totp = await enrol(ctx, developer)
    await withPage(newPage(1280), async (page) => {
      // Sign in with the second factor.
      await page.goto(`${origin}/dashboard/sign-in`)
      await page.getByLabel('Email').fill(developer.email)
      await page.getByLabel('Password').fill(developer.password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByLabel('Authentication code').fill(totpCode(totp))
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor()
      await forgetLastCode(ctx, developer.uuid)

      await openSection(page, 'Webhooks')
      const masked = page.getByText(/^Current secret: whsec_/)
      await masked.waitFor()
      assert.ok(!(await masked.innerText()).includes(secret))
      // A wrong code is refused, and shows nothing.
      await page.getByLabel('Authentication code').fill('000000')
      await page.getByRole('button', { name: 'Reveal secret' }).click()
      await page.getByRole('alert').waitFor()
      assert.equal(await page.getByLabel('Current signing secret').count(), 0)
      await page.getByLabel('Authentication code').fill(totpCode(totp))
      await page.getByRole('button', { name: 'Reveal secret' }).click()
      assert.equal(await page.getByLabel('Current signing secret').inputValue(), secret)
      await page.getByRole('button', { name: 'Copy the secret' }).click()
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret)
      await page.getByRole('button', { name: 'Hide' }).click()
      assert.equal(await page.getByLabel('Current signing secret').count(), 0)
    })
    // The owner sees the reveal in the audit log, with the code checked, and never the secret.
    const owner = await activeUser(ctx, 'owner')
    await withPage(newPage(1280), async (page) => {
      await signInToDashboard(page, origin, owner)
      await page.goto(`${origin}/dashboard/test/settings/audit-log?action=webhook_secret_revealed`)
      const row = page.locator('table[aria-label="Audit log"] tbody tr', { hasText: developer.email })
      await row.first().waitFor()
      assert.equal(await row.count(), 1)
      assert.doesNotMatch(await page.locator('main').innerText(), new RegExp(secret.slice(-12)))
      await row.getByRole('link').click()
      await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor()
    })
    // Support has no developer tools: no Webhooks section, and the service refuses the reveal.
    const support = await activeUser(ctx, 'support')
    await withPage(newPage(1280), async (page) => {
      await signInToDashboard(page, origin, support)
      assert.equal(await page.getByRole('link', { name: 'Webhooks', exact: true }).count(), 0)
      const status = await page.evaluate(async () => {
        const me = await (await fetch('/dashboard/api/me')).json()
        const res = await fetch('/dashboard/api/webhook/secret/reveal', {
          method: 'POST',
          headers: { 'x-dashboard-mode': 'test', 'x-csrf-token': me.csrf_token },
        })
        return res.status
      })
      assert.equal(status, 403)
    })
  })

  it('an API key is named when it is made, and listed with its name', async () => {
    const owner = await activeUser(ctx, 'owner')
    await withPage(newPage(1280), async (page) => {
      await signInToDashboard(page, origin, owner)
      await openSection(page, 'API keys')
      await page.getByLabel('Name (optional)').fill('Reconciliation job')
      await page.getByRole('button', { name: 'Create a test key' }).click()
      const secret = await page.getByLabel("New key's secret").inputValue()
      ctx.secrets.push(secret)
      await page.getByRole('cell', { name: 'Reconciliation job', exact: true }).waitFor()
      await check(page, 'api-keys-named', 1280)
    })
  })
})

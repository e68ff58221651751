import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { activeUser, invite } from '../helpers/dashboard.ts'
import { call, eventually, paidTransaction, postRefund, type TestContext } from '../helpers/harness.ts'
import { checkPage, openPage, servedWithChromium, signInToDashboard, withPage } from '../helpers/pages.ts'

/**
 * Every page of the dashboard at a phone's width (390 px, and 360 px for the sideways check) and a desktop's
 * (1280 px): the page never scrolls
 * sideways, each list's amount and status are on screen without scrolling, axe-core finds no serious or critical
 * violation, and a screenshot of each is kept in test-artifacts/screenshots/dashboard-walk-*.png. Then the
 * phone's menu, with the keyboard.
 */
const PHONE = 390
const NARROWEST = 360
const WIDTHS = [PHONE, 1280] as const

/** How the pages of a list show each record's amount and status on a narrow screen (components.tsx). */
const LEADS = ['amount', 'status'] as const

describe('every dashboard page at 390 and 1280 px, in Chromium', () => {
  let ctx: TestContext
  let browser: Browser
  let origin: string
  const cspViolations: string[] = []
  const pageErrors: string[] = []
  let paymentUuid = ''
  let payoutUuid = ''

  before(async () => {
    ;({ ctx, browser, origin } = await servedWithChromium())
    // Something on every list: payments in two currencies, a refund, a payout, a webhook endpoint.
    const paid = await paidTransaction(ctx, {
      amount: 1_234_567,
      currency: 'RUB',
      external_id: 'walk-order-with-a-rather-long-external-reference-0001',
      description: 'A description long enough to wrap on a phone, as merchants write them sometimes',
    })
    paymentUuid = paid.uuid
    // Fewer minor units than the RUB payment, but more money: the home page's main currency.
    await paidTransaction(ctx, { amount: 50_000, currency: 'USD', external_id: 'walk-order-0002' })
    const refund = await postRefund(ctx, ctx.merchant, paid.uuid, 100_000, `walk-refund-${Date.now()}`)
    assert.equal(refund.statusCode, 201, refund.body)
    const payout = await call(
      ctx,
      'POST',
      '/integration/payouts',
      {
        external_id: 'walk-payout-0001',
        amount: 500,
        currency: 'USD',
        method: 'usdt_wallet',
        destination: { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' },
      },
      { auth: 'signature', idempotencyKey: `walk-payout-${Date.now()}` },
    )
    assert.equal(payout.statusCode, 201, payout.body)
    payoutUuid = payout.json().uuid
    const hook = await call(ctx, 'PUT', '/integration/webhook', { url: 'https://hooks.example.test/walk' })
    assert.equal(hook.statusCode, 200, hook.body)
  })

  after(async () => {
    await browser?.close()
    await ctx?.close()
  })

  /**
   * The page as shown: no sideways scroll of the page, and in each list the first record's amount and status
   * inside both the screen and the list's own region (not scrolled out of sight).
   */
  async function assertFits(page: Page, name: string, width: number): Promise<void> {
    const found = await page.evaluate((leads) => {
      const scroller = document.scrollingElement as Element
      const out: string[] = []
      for (const table of document.querySelectorAll('table.list')) {
        const row = table.querySelector('tbody tr:not(.empty)')
        const region = table.closest('.table-wrap')?.getBoundingClientRect()
        if (!row || !region) continue
        for (const lead of leads) {
          const cell = row.querySelector(`[data-card="${lead}"]`)
          if (!cell) continue
          const box = cell.getBoundingClientRect()
          const right = Math.min(window.innerWidth, region.right)
          if (box.left < Math.max(0, region.left) - 1 || box.right > right + 1)
            out.push(`${table.getAttribute('aria-label')} ${lead}: ${box.left}–${box.right} of ${right}`)
        }
      }
      // What sticks out, for the failure's message: the innermost elements past the right edge.
      const wide = [...document.querySelectorAll('body *')]
        .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)
        .filter(
          (el) =>
            ![...el.children].some((child) => child.getBoundingClientRect().right > window.innerWidth + 1),
        )
        .slice(0, 3)
        .map(
          (el) =>
            `${el.tagName.toLowerCase()}.${el.getAttribute('class')} (${Math.round(el.getBoundingClientRect().right)} px)`,
        )
      return { scrollWidth: scroller.scrollWidth, innerWidth: window.innerWidth, hidden: out, wide }
    }, LEADS)
    assert.ok(
      found.scrollWidth <= found.innerWidth,
      `${name} at ${width} px scrolls sideways: ${found.scrollWidth} > ${found.innerWidth}: ${found.wide.join(', ')}`,
    )
    assert.deepEqual(found.hidden, [], `${name} at ${width} px: amount or status out of sight`)
  }

  /** Every page signed in, by its name, its path under the mode and what shows once it is drawn. */
  const pages = (): [name: string, path: string, ready: string][] => [
    ['home', '', '.recharts-surface'],
    ['payments', 'payments', 'table[aria-label="Payments"] tbody tr'],
    ['payment', `payments/${paymentUuid}`, 'table[aria-label="Refunds of this payment"] tbody tr'],
    ['refunds', 'refunds', 'table[aria-label="Refunds"] tbody tr'],
    ['balances', 'balances', 'table[aria-label="Balance history"] tbody tr'],
    ['balance-summary', 'balances/summary', 'table[aria-label="Balance summary"] tbody tr'],
    ['search', 'search?q=walk-order-0002', 'table[aria-label="Search results"] tbody tr'],
    ['payouts', 'payouts', 'table[aria-label="Payouts"] tbody tr'],
    ['payout', `payouts/${payoutUuid}`, 'ol.timeline'],
    ['payout-new', 'payouts/new', '.balance-note'],
    ['webhooks', 'developers/webhooks', 'table[aria-label="Delivery log"]'],
    ['api-keys', 'developers/api-keys', 'table[aria-label="API keys"] tbody tr'],
    ['events', 'developers/events', 'table[aria-label="Events"] tbody tr'],
    ['people', 'settings/people', 'table[aria-label="People"] tbody tr'],
    ['audit-log', 'settings/audit-log', 'table[aria-label="Audit log"] tbody tr'],
    ['security', 'settings/security', 'h1'],
    ['profile', 'settings/profile', 'table[aria-label="Payment fees"] tbody tr'],
  ]

  for (const width of WIDTHS) {
    it(`every page at ${width} px: no sideways scroll, amounts and statuses in sight, accessible`, async () => {
      const owner = await activeUser(ctx, 'owner')
      const invited = await invite(ctx, 'viewer')
      await withPage(openPage(browser, width, { cspViolations, pageErrors }), async (page) => {
        const visit = async (name: string, ready: string) => {
          await page.locator(ready).first().waitFor()
          await page.waitForLoadState('networkidle')
          await assertFits(page, name, width)
          await checkPage(page, name, width, `dashboard-walk-${name}-${width}`)
          if (width === PHONE) {
            // The narrowest phones still in use: the same page, still without sideways scrolling.
            await page.setViewportSize({ width: NARROWEST, height: 900 })
            // Charts follow a resize a frame or two later (ResizeObserver): given a moment, then checked.
            await page
              .waitForFunction(
                () => (document.scrollingElement?.scrollWidth ?? 0) <= window.innerWidth,
                null,
                {
                  timeout: 2000,
                },
              )
              .catch(() => {})
            await assertFits(page, name, NARROWEST)
            await page.setViewportSize({ width: PHONE, height: 900 })
          }
        }
        await page.goto(`${origin}/dashboard/set-password?token=${invited.token}`)
        await visit('set-password', 'form')
        await page.goto(`${origin}/dashboard/sign-in`)
        await visit('sign-in', 'form')
        await signInToDashboard(page, origin, owner)
        for (const [name, path, ready] of pages()) {
          await page.goto(`${origin}/dashboard/test/${path}`)
          await visit(name, ready)
        }
      })
    })
  }

  it('home: the main currency is the one with the most volume, with a total in the settlement currency', async () => {
    const owner = await activeUser(ctx, 'owner')
    await withPage(openPage(browser, 1280, { cspViolations, pageErrors }), async (page) => {
      await signInToDashboard(page, origin, owner)
      await page.getByText('Succeeded volume per day (USD)').waitFor()
      assert.equal(await page.getByLabel('Currency').inputValue(), 'USD')
      const figures = (await page.locator('dl.figures').innerText()).replace(/\s+/g, ' ')
      assert.match(figures, /Volume \(USD\) 500\.00 USD none in the previous 7 days/)
      assert.match(figures, /Success rate \(USD\) 100\.0\s%/)
      // 500 USD and 12,345.67 RUB at the test rates (RUB 92.15 per USDT, and the markup): about 630 USDT.
      const total = /All currencies, in USDT about ([\d,]+)\.\d+ USDT/.exec(figures)?.[1]
      assert.ok(
        total && Number(total.replace(',', '')) > 600 && Number(total.replace(',', '')) < 640,
        figures,
      )
      // Another currency is a choice away.
      await page.getByLabel('Currency').selectOption('RUB')
      await page.getByText('Succeeded volume per day (RUB)').waitFor()
      assert.match(await page.locator('dl.figures').innerText(), /12,345\.67 RUB/)
    })
  })

  it('events: filtered by type and by object, each object linked to its page', async () => {
    const owner = await activeUser(ctx, 'owner')
    await withPage(openPage(browser, 1280, { cspViolations, pageErrors }), async (page) => {
      await signInToDashboard(page, origin, owner)
      await page.goto(`${origin}/dashboard/test/developers/events`)
      const types = () =>
        page.locator('table[aria-label="Events"] tbody tr td:nth-child(2)').allTextContents()
      await page.locator('table[aria-label="Events"] tbody tr').first().waitFor()
      assert.ok((await types()).includes('transaction.paid'))
      await page.getByLabel('Type').selectOption('payout.processing')
      await page.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL(/type=payout\.processing/)
      await eventually(async () => ((await types()).join() === 'payout.processing' ? true : null))
      await page.getByRole('link', { name: `payout ${payoutUuid}` }).click()
      await page.getByRole('heading', { name: /^Payout / }).waitFor()
      // One payment's events, as a search result links to them.
      await page.goto(`${origin}/dashboard/test/developers/events?object_uuid=${paymentUuid}`)
      assert.equal(await page.getByLabel('Object id').inputValue(), paymentUuid)
      await eventually(async () => {
        const shown = await types()
        return shown.length === 2 && shown.includes('transaction.partially_refunded') ? true : null
      })
      await page
        .getByRole('link', { name: `payment ${paymentUuid}` })
        .first()
        .click()
      await page.getByRole('heading', { name: /^Payment / }).waitFor()
    })
  })

  it('the menu on a phone: a button that says whether it is open, used with the keyboard', async () => {
    const owner = await activeUser(ctx, 'owner')
    await withPage(openPage(browser, 390, { cspViolations, pageErrors }), async (page) => {
      await signInToDashboard(page, origin, owner)
      const menu = page.getByRole('button', { name: 'Menu', exact: true })
      const sections = page.getByRole('navigation', { name: 'Sections' })
      assert.equal(await menu.getAttribute('aria-expanded'), 'false')
      assert.equal(await sections.getByRole('link', { name: 'Payments' }).isVisible(), false)
      await menu.focus()
      await page.keyboard.press('Enter')
      assert.equal(await menu.getAttribute('aria-expanded'), 'true')
      // The focus goes to the first section; Escape closes the menu and gives it back to the button.
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Home')
      await checkPage(page, 'menu-open', 390, 'dashboard-walk-menu-open-390')
      await page.keyboard.press('Escape')
      assert.equal(await menu.getAttribute('aria-expanded'), 'false')
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Menu')
      // Open again, Tab to Payments, Enter: the page opens and the menu closes.
      await page.keyboard.press('Enter')
      await page.keyboard.press('Tab')
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Payments')
      await page.keyboard.press('Enter')
      await page.getByRole('heading', { name: 'Payments', level: 1 }).waitFor()
      assert.equal(await menu.getAttribute('aria-expanded'), 'false')
      // A wide screen shows the sections themselves, and no menu button.
      await page.setViewportSize({ width: 1280, height: 900 })
      assert.equal(await menu.isVisible(), false)
      assert.equal(await sections.getByRole('link', { name: 'Payments' }).isVisible(), true)
    })
    assert.deepEqual(cspViolations, [], 'Content Security Policy violations')
    assert.deepEqual(pageErrors, [], 'errors in the page')
  })
})

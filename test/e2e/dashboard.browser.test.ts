import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { money } from '../../dashboard/src/format.ts'
import { DASHBOARD_CSP } from '../../src/modules/dashboard/pages.ts'
import { activeUser, invite } from '../helpers/dashboard.ts'
import { call, eventually, paidTransaction, type TestContext } from '../helpers/harness.ts'
import {
  checkPage,
  downloadedCsv,
  openPage,
  openSection,
  servedWithChromium,
  signInToDashboard,
  withPage,
} from '../helpers/pages.ts'
import { ROOT } from '../helpers/program.ts'

/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core): a merchant's staff's journeys,
 * axe-core on every page, keyboard use, hostile merchant text, and screenshots at 1280 and 390 px kept in
 * test-artifacts/screenshots/dashboard-*.png.
 */
const WIDTHS = [1280, 390] as const

describe('merchant dashboard in Chromium', () => {
  let ctx: TestContext
  let browser: Browser
  let origin: string
  const cspViolations: string[] = []
  const pageErrors: string[] = []

  before(async () => {
    assert.ok(
      existsSync(join(ROOT, 'dist/dashboard/index.html')),
      'the dashboard is not built: npm run build',
    )
    ;({ ctx, browser, origin } = await servedWithChromium())
  })

  after(async () => {
    await browser?.close()
    await ctx?.close()
  })

  const newPage = (width: number) => openPage(browser, width, { cspViolations, pageErrors })
  const signIn = (page: Page, user: { email: string; password: string }) =>
    signInToDashboard(page, origin, user)

  /** Each page: no wider than the screen, accessible, photographed. */
  const check = (page: Page, name: string, width: number) =>
    checkPage(page, name, width, `dashboard-${name}-${width}`)

  const balanceOf = async (currency: string) => {
    const res = await call(ctx, 'GET', '/integration/balances')
    return res.json().data.find((b: { currency: string }) => b.currency === currency)
  }
  /** Micro units of USDT as the dashboard writes them: 1,234.56789 (no zeros trailed past two digits). */
  const usdt = (micro: number) => money(micro, 'USDT').replace(' USDT', '')

  it('serves the pages with a strict Content-Security-Policy and no inline code', async () => {
    const res = await fetch(`${origin}/dashboard/test/payments`)
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-security-policy'), DASHBOARD_CSP)
    assert.match(DASHBOARD_CSP, /script-src 'self';/)
    assert.doesNotMatch(DASHBOARD_CSP, /unsafe-inline|unsafe-eval/)
    const html = await res.text()
    assert.doesNotMatch(html, /<script>|<style>| style=/)
  })

  it('invite → set password → sign in → find a payment → refund part → balance and timeline show it → sign out', async () => {
    const external = `dash-e2e-${Date.now().toString(36)}`
    const paid = await paidTransaction(ctx, {
      amount: 150000,
      currency: 'RUB',
      external_id: external,
      description: 'Blue kettle',
    })
    const before = await balanceOf(paid.settlement_currency)
    const invited = await invite(ctx, 'owner')
    const password = `pw-${invited.token.slice(0, 16)}-long`
    ctx.secrets.push(password)

    for (const width of WIDTHS) {
      await withPage(newPage(width), async (page) => {
        if (width === WIDTHS[0]) {
          // The invitation's link: choose a password.
          await page.goto(`${origin}/dashboard/set-password?token=${invited.token}`)
          await check(page, 'set-password', width)
          await page.getByLabel('New password').fill(password)
          await page.getByLabel('The same password again').fill(password)
          await page.getByRole('button', { name: 'Set password' }).click()
          await page.getByText('Your password is set').waitFor()
        } else {
          // The same page on a phone (this token was used above: the page shows the form all the same).
          await page.goto(`${origin}/dashboard/set-password?token=${invited.token}`)
          await page.getByLabel('New password').waitFor()
          await check(page, 'set-password', width)
        }
        await page.goto(`${origin}/dashboard/sign-in`)
        await page.getByLabel('Email').waitFor()
        await check(page, 'sign-in', width)
        await signIn(page, { email: invited.email, password })
        await page.getByText('Test mode: test data only').waitFor()
        await page.locator('.balance').first().waitFor()
        await page.locator('.recharts-surface').first().waitFor()
        await check(page, 'home', width)

        // Find the payment by search and open it.
        await openSection(page, 'Payments')
        await page.getByLabel('Search').fill(external)
        await page.getByRole('button', { name: 'Apply' }).click()
        await page.waitForURL(/search=/)
        const row = page.getByRole('link', { name: external })
        await row.waitFor()
        assert.equal(await page.locator('table[aria-label="Payments"] tbody tr').count(), 1)
        await check(page, 'payments', width)
        await row.click()
        await page.getByRole('heading', { name: /Payment 1,500\.00 RUB/ }).waitFor()

        if (width === WIDTHS[0]) {
          // Refund part of it: amount defaults to what remains; review, then confirm.
          await page.getByRole('button', { name: 'Refund payment' }).click()
          const amount = page.getByLabel(/^Amount \(RUB\)/)
          assert.equal(await amount.inputValue(), '1500.00')
          await amount.fill('2000')
          await page.getByRole('button', { name: 'Review refund' }).click()
          await page.getByText('At most 1,500.00 RUB remains to refund.').waitFor()
          await amount.fill('400.00')
          await page.getByLabel('Reason (optional)').fill('Damaged box')
          await page.getByRole('button', { name: 'Review refund' }).click()
          await page.getByText(/Refund 400\.00 RUB of this payment/).waitFor()
          await check(page, 'refund-confirm', width)
          await page.getByRole('button', { name: 'Confirm refund' }).click()
          await page.getByRole('status').filter({ hasText: 'Refund of 400.00 RUB succeeded' }).waitFor()
          await page.locator('ol.timeline li', { hasText: 'partially refunded' }).waitFor()
          const timeline = await page.locator('ol.timeline li').allTextContents()
          assert.match(timeline[0] ?? '', /^created · version 1/)
          assert.ok(
            timeline.some((line) => /^paid · version \d+/.test(line)),
            timeline.join('\n'),
          )
          assert.ok(
            timeline.some((line) => /^partially refunded · version \d+/.test(line)),
            timeline.join('\n'),
          )
          await page
            .getByRole('table', { name: 'Refunds of this payment' })
            .getByText('Damaged box')
            .waitFor()
        }
        await page.getByRole('table', { name: 'Refunds of this payment' }).waitFor()
        await check(page, 'payment', width)

        // The balance went down by what the refund took, on the home page as in the API.
        const after = await balanceOf(paid.settlement_currency)
        assert.ok(after.available < before.available, JSON.stringify({ before, after }))
        await openSection(page, 'Home')
        await page
          .getByTestId(`available-${paid.settlement_currency}`)
          .filter({ hasText: usdt(after.available) })
          .waitFor()

        // Each page by its screenshot's name and the link to it; its heading is the link's name unless given.
        for (const [name, link, heading = link] of [
          ['refunds', 'Refunds'],
          ['people', 'People'],
          ['audit-log', 'Audit log'],
          ['security', 'Security'],
          ['profile', 'Profile', 'Merchant profile'],
        ] as const) {
          await openSection(page, link)
          await page.getByRole('heading', { name: heading, level: 1 }).waitFor()
          await page.waitForLoadState('networkidle')
          if (name === 'people') await page.getByRole('cell', { name: invited.email, exact: true }).waitFor()
          if (name === 'audit-log' && width === WIDTHS[0])
            await page.getByRole('cell', { name: 'api operation: createRefund' }).first().waitFor()
          if (name === 'people' && width === WIDTHS[0]) {
            // The owner invites a colleague from the dashboard; the link shown once sets their password.
            const colleague = `colleague-${Date.now().toString(36)}@example.test`
            await page.getByLabel('Email').fill(colleague)
            await page.getByLabel('Role').selectOption('support')
            await page.getByRole('button', { name: 'Invite' }).click()
            const link = await page.getByLabel('Invitation link').inputValue()
            assert.match(link, /\/dashboard\/set-password\?token=\w+/)
            ctx.secrets.push(new URL(link).searchParams.get('token') as string)
            await page.getByRole('cell', { name: colleague, exact: true }).waitFor()
            await check(page, 'people-invited', width)
            await withPage(newPage(width), async (colleaguePage) => {
              const colleaguePassword = `colleague-${password}`
              await colleaguePage.goto(`${origin}${new URL(link).pathname}${new URL(link).search}`)
              await colleaguePage.getByLabel('New password').fill(colleaguePassword)
              await colleaguePage.getByLabel('The same password again').fill(colleaguePassword)
              await colleaguePage.getByRole('button', { name: 'Set password' }).click()
              await colleaguePage.getByText('Your password is set').waitFor()
              await signIn(colleaguePage, { email: colleague, password: colleaguePassword })
              await colleaguePage.getByText('(support)').waitFor()
            })
            // The owner changes the colleague's role; the service has it.
            await page.getByLabel(`Role of ${colleague}`).selectOption('viewer')
            await eventually(async () => {
              const people = await ctx.services.users.list(ctx.merchant.uuid)
              return people.find((p) => p.email === colleague)?.role === 'viewer' ? true : null
            })
          }
          await check(page, name, width)
        }

        // Live mode: switched in the header, no test banner.
        await page.getByText('Live', { exact: true }).click()
        await page.waitForURL(/\/dashboard\/live\//)
        // The URL changes before the page has drawn the live mode: wait for the banner to go, with a deadline.
        await page.getByText('Test mode: test data only').waitFor({ state: 'detached' })
        assert.equal(await page.getByText('Test mode: test data only').count(), 0)
        await check(page, 'live-mode', width)

        await page.getByRole('button', { name: 'Sign out', exact: true }).click()
        await page.getByRole('heading', { name: 'Sign in to the merchant dashboard' }).waitFor()
        // The session is over: the app sends back to sign-in.
        await page.goto(`${origin}/dashboard/test/payments/${paid.uuid}`)
        await page.getByRole('heading', { name: 'Sign in to the merchant dashboard' }).waitFor()
      })
    }
    assert.deepEqual(cspViolations, [], 'Content Security Policy violations')
    assert.deepEqual(pageErrors, [], 'errors in the page')
  })

  it('a viewer sees no refund button, and the API refuses the refund from their session', async () => {
    const paid = await paidTransaction(ctx)
    const viewer = await activeUser(ctx, 'viewer')
    await withPage(newPage(1280), async (page) => {
      await signIn(page, viewer)
      await page.goto(`${origin}/dashboard/test/payments/${paid.uuid}`)
      await page.getByRole('heading', { name: /^Payment / }).waitFor()
      await page.getByRole('heading', { name: 'Timeline' }).waitFor()
      assert.equal(await page.getByRole('button', { name: 'Refund payment' }).count(), 0)
      assert.equal(await page.getByRole('link', { name: 'People' }).count(), 0)
      // The page's own means, used by hand: the session's CSRF token, the right Origin. Still refused.
      const answer = await page.evaluate(async (uuid) => {
        const me = await (await fetch('/dashboard/api/me')).json()
        const res = await fetch('/integration/refunds', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-dashboard-mode': 'test',
            'x-csrf-token': me.csrf_token,
            'idempotency-key': `viewer-${uuid}`,
          },
          body: JSON.stringify({ transaction_uuid: uuid, amount_minor: 100 }),
        })
        return { status: res.status, body: await res.json() }
      }, paid.uuid)
      assert.equal(answer.status, 403)
      assert.equal(answer.body.error.code, 'forbidden')
      const refunds = await call(ctx, 'GET', `/integration/refunds?transaction_uuid=${paid.uuid}`)
      assert.equal(refunds.json().data.length, 0)
    })
  })

  it("another merchant's payment is unreachable by its address", async () => {
    const theirs = await paidTransaction(ctx, { description: 'not yours' }, { merchant: ctx.other })
    const owner = await activeUser(ctx, 'owner')
    await withPage(newPage(1280), async (page) => {
      await signIn(page, owner)
      await page.goto(`${origin}/dashboard/test/payments/${theirs.uuid}`)
      await page
        .getByRole('alert')
        .filter({ hasText: /No such transaction|does not exist/ })
        .waitFor()
      assert.equal(await page.getByText('not yours').count(), 0)
    })
  })

  it('merchant text with markup and script shows as text, and runs nothing', async () => {
    const hostile = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
    const paid = await paidTransaction(ctx, {
      description: hostile,
      metadata: { note: hostile },
    })
    const owner = await activeUser(ctx, 'owner')
    await withPage(newPage(1280), async (page) => {
      await signIn(page, owner)
      await page.goto(`${origin}/dashboard/test/payments`)
      await page.locator('table[aria-label="Payments"] tbody tr').first().waitFor()
      await page.goto(`${origin}/dashboard/test/payments/${paid.uuid}`)
      await page.getByRole('heading', { name: 'Timeline' }).waitFor()
      assert.equal(await page.getByText(hostile).count(), 2)
      assert.equal(await page.evaluate('window.__xss'), undefined)
      assert.equal(await page.locator('main img, main svg[onload], main script').count(), 0)
      await check(page, 'hostile-text', 1280)
    })
  })

  it('session fixation: a cookie planted before sign-in is not the session after it', async () => {
    const owner = await activeUser(ctx, 'owner')
    await withPage(newPage(1280), async (page, context) => {
      const planted = 'planted-session-value-0123456789abcdefghijk'
      await context.addCookies([{ name: 'mg_session', value: planted, url: origin }])
      await signIn(page, owner)
      const cookie = (await context.cookies(origin)).find((c) => c.name === 'mg_session')
      assert.ok(cookie && cookie.value !== planted)
      assert.equal(cookie.httpOnly, true)
      assert.equal(cookie.sameSite, 'Lax')
      // A change without the session's CSRF token is refused, even from the dashboard's own page.
      const status = await page.evaluate(
        async () => (await fetch('/dashboard/api/session', { method: 'DELETE' })).status,
      )
      assert.equal(status, 403)
      assert.equal(await page.evaluate(async () => (await fetch('/dashboard/api/me')).status), 200)
    })
  })

  it('keyboard only: from the payment page, Tab to Refund, Enter, type, confirm', async () => {
    const paid = await paidTransaction(ctx, { amount: 5000, currency: 'RUB' })
    const owner = await activeUser(ctx, 'owner')
    await withPage(newPage(1280), async (page) => {
      await signIn(page, owner)
      await page.goto(`${origin}/dashboard/test/payments/${paid.uuid}`)
      await page.getByRole('button', { name: 'Refund payment' }).waitFor()
      const focusOn = async (name: string) => {
        for (let i = 0; i < 80; i++) {
          await page.keyboard.press('Tab')
          const text = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '')
          if (text === name) return
        }
        assert.fail(`Tab never reached "${name}"`)
      }
      // Every control of the page's frame is on the Tab path: skip link, mode switch, sign-out, each section.
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
      const reached = new Set<string>()
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press('Tab')
        reached.add(
          await page.evaluate(() => {
            const el = document.activeElement as HTMLElement | null
            return (
              el?.getAttribute('aria-label') ||
              el?.textContent ||
              (el as HTMLInputElement)?.value ||
              ''
            ).trim()
          }),
        )
      }
      for (const name of [
        'Skip to content',
        'test',
        'Sign out',
        'Home',
        'Payments',
        'Refunds',
        'People',
        'Audit log',
        'Security',
      ])
        assert.ok(reached.has(name), `Tab never reached "${name}": ${[...reached].join(' | ')}`)
      await focusOn('Refund payment')
      await page.keyboard.press('Enter')
      await page.keyboard.press('Tab')
      assert.equal(await page.evaluate(() => (document.activeElement as HTMLInputElement).name), 'amount')
      await page.keyboard.press('ControlOrMeta+a')
      await page.keyboard.type('10')
      await page.keyboard.press('Enter')
      await page.getByText(/Refund 10\.00 RUB of this payment/).waitFor()
      await focusOn('Confirm refund')
      await page.keyboard.press('Enter')
      await page.getByRole('status').filter({ hasText: 'Refund of 10.00 RUB' }).waitFor()
    })
  })

  it('money and developer pages: balances and their history, payouts, events; the payments CSV downloaded and parsed', async () => {
    const tag = `csv-${Date.now().toString(36)}`
    const first = await paidTransaction(ctx, { external_id: `${tag}-1`, description: 'Kettle, "blue"' })
    const second = await paidTransaction(ctx, { external_id: `${tag}-2`, description: '=SUM(A1)' })
    const owner = await activeUser(ctx, 'owner')
    for (const width of WIDTHS) {
      await withPage(newPage(width), async (page) => {
        await signIn(page, owner)
        await openSection(page, 'Balances')
        await page.getByRole('heading', { name: 'Balance history' }).waitFor()
        await page.locator('table[aria-label="Balance history"] tbody tr').first().waitFor()
        // Each movement links to what caused it.
        await page
          .locator(`table[aria-label="Balance history"] a[href$="/payments/${second.uuid}"]`)
          .first()
          .waitFor()
        await check(page, 'balances', width)

        await openSection(page, 'Payouts')
        await page.getByRole('heading', { name: 'Payouts', level: 1 }).waitFor()
        await page.waitForLoadState('networkidle')
        await check(page, 'payouts', width)

        await openSection(page, 'Events')
        await page.locator('table[aria-label="Events"] tbody tr').first().waitFor()
        await page.getByRole('button', { name: `Show the payload of`, exact: false }).first().click()
        await page.locator('.payload pre').waitFor()
        assert.match((await page.locator('.payload pre').textContent()) ?? '', /"event_id"/)
        await check(page, 'events', width)

        if (width === WIDTHS[0]) {
          // Export the payments a search finds, as the browser downloads it, and parse the file.
          await page.goto(`${origin}/dashboard/test/payments?search=${tag}`)
          await page.locator('table[aria-label="Payments"] tbody tr').nth(1).waitFor()
          const { name, header, rows } = await downloadedCsv(page, () =>
            page.getByRole('button', { name: 'Export CSV' }).click(),
          )
          assert.match(name, /^payments-test-\d{4}-\d{2}-\d{2}\.csv$/)
          assert.ok(header.includes('uuid') && header.includes('description'))
          const byUuid = new Map(rows.map((row) => [row[header.indexOf('uuid')], row]))
          assert.deepEqual([...byUuid.keys()].sort(), [first.uuid, second.uuid].sort())
          assert.equal(byUuid.get(first.uuid)?.[header.indexOf('description')], 'Kettle, "blue"')
          // A cell a spreadsheet would run as a formula is escaped.
          assert.equal(byUuid.get(second.uuid)?.[header.indexOf('description')], "'=SUM(A1)")
        }
      })
    }
    assert.deepEqual(cspViolations, [], 'Content Security Policy violations')
  })
})

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'csv-parse/sync'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { assertAccessible, launchChromium, SHOTS } from './browser.ts'
import { createTestContext, type TestContext } from './harness.ts'
import { freePort } from './program.ts'

/** What a suite's pages complained of: Content Security Policy violations in their consoles, uncaught errors. */
export interface PageComplaints {
  cspViolations: string[]
  pageErrors: string[]
}

export interface OpenPage {
  context: BrowserContext
  page: Page
}

/**
 * A page `width` px wide (900 high) in a browser context of its own, whose complaints go to `complaints`;
 * `clipboardAt` grants the clipboard to that origin.
 */
export async function openPage(
  browser: Browser,
  width: number,
  complaints: PageComplaints,
  options: { clipboardAt?: string } = {},
): Promise<OpenPage> {
  const context = await browser.newContext({ viewport: { width, height: 900 } })
  if (options.clipboardAt)
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: options.clipboardAt })
  const page = await context.newPage()
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) complaints.cspViolations.push(message.text())
  })
  page.on('pageerror', (error) => complaints.pageErrors.push(error.message))
  return { context, page }
}

/** `work` on a page opened by `open`, whose context is closed when it ends, failed or not. */
export async function withPage<T>(
  open: Promise<OpenPage>,
  work: (page: Page, context: BrowserContext) => Promise<T>,
): Promise<T> {
  const { context, page } = await open
  try {
    return await work(page, context)
  } finally {
    await context.close()
  }
}

/** Signs in on the dashboard served at `origin`, and waits for its home page. */
export async function signInToDashboard(
  page: Page,
  origin: string,
  user: { email: string; password: string },
): Promise<void> {
  await page.goto(`${origin}/dashboard/sign-in`)
  await page.getByLabel('Email').fill(user.email)
  await page.getByLabel('Password').fill(user.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Home', level: 1 }).waitFor()
}

/** A screenshot of the whole page, kept as `<file>.png` among the suites' screenshots. */
export async function screenshot(page: Page, file: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${file}.png`), fullPage: true })
}

/**
 * The page as shown `width` px wide: nothing wider than the screen (a wide table scrolls inside its own region,
 * the page does not), accessible (axe-core), and photographed as `<file>.png`; `name` names it in failures.
 */
export async function checkPage(page: Page, name: string, width: number, file: string): Promise<void> {
  const pageWidth = await page.evaluate(() => document.documentElement.scrollWidth)
  assert.ok(pageWidth <= width, `${name} at ${width} px is ${pageWidth} px wide`)
  await assertAccessible(page, name)
  await screenshot(page, file)
}

/**
 * Follows the section link `name` of the dashboard's navigation, opening the menu first on a narrow screen,
 * where the links are folded into it.
 */
export async function openSection(page: Page, name: string): Promise<void> {
  const menu = page.getByRole('button', { name: 'Menu', exact: true })
  if (await menu.isVisible()) {
    if ((await menu.getAttribute('aria-expanded')) !== 'true') await menu.click()
  }
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true }).click()
}

/** The service listening on a free port of 127.0.0.1 (PGlite) for a browser suite, and Chromium to drive. */
export async function servedWithChromium(): Promise<{ ctx: TestContext; browser: Browser; origin: string }> {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const ctx = await createTestContext('pglite', { publicBaseUrl: origin })
  await ctx.app.listen({ port, host: '127.0.0.1' })
  return { ctx, browser: await launchChromium(), origin }
}

/** The CSV file a click downloads, parsed: its name, its header and its rows. */
export async function downloadedCsv(
  page: Page,
  click: () => Promise<void>,
): Promise<{ name: string; header: string[]; rows: string[][] }> {
  const [download] = await Promise.all([page.waitForEvent('download'), click()])
  const text = readFileSync((await download.path()) as string, 'utf8')
  const [header = [], ...rows] = parse(text, { record_delimiter: '\r\n' }) as string[][]
  return { name: download.suggestedFilename(), header, rows }
}

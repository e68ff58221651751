/**
 * Dashboard benchmark: how soon the payments list's first page shows in a browser, with a merchant of --rows
 * transactions, served by the compiled server (`node dist/main.js serve --role api`, what `npm start` runs;
 * `npm run build` first, which also builds the dashboard into dist/dashboard), on PostgreSQL, in a database
 * of its own.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:dashboard -- \
 *     [--rows 1000000] [--runs 5] [--keep-database]
 *
 * 1. Seeds --rows transactions of one merchant in SQL (bench/lib.ts), as bench:api and bench:export do, and
 *    makes an owner of that merchant through the services (an invitation, then its acceptance).
 * 2. Starts the server with PUBLIC_BASE_URL its own origin (the dashboard checks Origin against it), and
 *    Debian's Chromium through playwright-core; signs in on /dashboard/sign-in.
 * 3. For each case (the first page; `?status=paid`; `?search=` an external id prefix), --runs times, in a new
 *    page of the signed-in context: navigates to /dashboard/test/payments…, and takes `performance.now()` in
 *    the page (its origin is the navigation's start) when the payments table has its 25 rows: a
 *    MutationObserver, installed before the page's scripts run, notes the moment the rows are in the document,
 *    and a frame later (requestAnimationFrame, then a task) the moment they have been painted. The API call's
 *    own timing comes from the page's Resource Timing entry for /integration/transactions.
 *
 * The target: the payments list's first page renders in under 1 s with 1 M transactions.
 * It prints its figures as JSON on stdout, and its report on stderr, recorded in
 * bench/results/<date>T<time>-dashboard.md (bench/lib.ts, writeResult).
 */
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { parseArgs } from 'node:util'
import type { Browser, BrowserContext } from 'playwright-core'
import { createServices } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { connectPostgres, migrateToLatest } from '../../src/db/index.ts'
import { CLI } from '../../src/modules/users/deps.ts'
import { launchChromium } from '../../test/helpers/browser.ts'
import { benchDatabase, benchEnv, freePort, round, seedDatabase, startServer, writeResult } from '../lib.ts'

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '5' },
    'keep-database': { type: 'boolean', default: false },
  },
})
const ROWS = Number(values.rows)
const RUNS = Number(values.runs)
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const TARGET_MS = 1000
const PAGE_ROWS = 25
const ROWS_SELECTOR = 'table[aria-label="Payments"] tbody tr'
const log = (line: string) => process.stderr.write(`[bench:dashboard] ${line}\n`)

/**
 * An external id prefix of the seeded rows (`seed-<i>`, i from 1 to `rows`) that at least 100 rows have: the
 * longest of seed-4242, seed-424, seed-42, seed-4 that does (seed-4242 at 1 M: 4242, 42420…42429 and
 * 424200…424299, 111 rows).
 */
function searchPrefix(rows: number) {
  const matches = (digits: string) => {
    let count = 0
    for (let low = Number(digits), width = 1; low <= rows; low *= 10, width *= 10)
      count += Math.min(rows, low + width - 1) - low + 1
    return count
  }
  let digits = '4242'
  while (digits.length > 1 && matches(digits) < 100) digits = digits.slice(0, -1)
  return `seed-${digits}`
}

interface Case {
  name: string
  query: string
}

interface Run {
  /** Navigation start to the 25 rows in the document. */
  rowsMs: number
  /** Navigation start to the frame after that: the rows painted. */
  paintedMs: number
  /** The /integration/transactions call as the page saw it: from its start to the end of its answer. */
  apiMs: number
  /** Of that, sending the request to the first byte of the answer: the server's time, plus the loopback. */
  apiServerMs: number
  /** When the page started the API call, from the navigation start. */
  apiStartMs: number
  /** The navigation's DOMContentLoaded handlers done: the page's module script has run. */
  domReadyMs: number
  /** Every request of the page: what it was and when, from the navigation start (for the JSON output). */
  requests: { name: string; startMs: number; endMs: number }[]
}

declare global {
  interface Window {
    __rows?: { at: number; painted: number }
  }
}

/** Notes when the payments table first holds `count` rows, and the frame after; runs before the page's scripts. */
function watchRows({ selector, count }: { selector: string; count: number }) {
  const observer = new MutationObserver(() => {
    if (document.querySelectorAll(selector).length !== count) return
    const at = performance.now()
    observer.disconnect()
    requestAnimationFrame(() =>
      setTimeout(() => {
        window.__rows = { at, painted: performance.now() }
      }, 0),
    )
  })
  observer.observe(document, { childList: true, subtree: true })
}

async function measure(context: BrowserContext, base: string, query: string): Promise<Run> {
  const page = await context.newPage()
  try {
    await page.addInitScript(watchRows, { selector: ROWS_SELECTOR, count: PAGE_ROWS })
    await page.goto(`${base}/dashboard/test/payments${query}`, { waitUntil: 'commit' })
    await page.waitForFunction(() => window.__rows !== undefined, undefined, { timeout: 60_000 })
    const timing = await page.evaluate(() => {
      const api = performance
        .getEntriesByType('resource')
        .filter((e): e is PerformanceResourceTiming => e.name.includes('/integration/transactions'))
      const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming
      return {
        rows: window.__rows as { at: number; painted: number },
        domReady: navigation.domContentLoadedEventEnd,
        requests: performance.getEntriesByType('resource').map((e) => ({
          name: new URL(e.name).pathname + new URL(e.name).search,
          startMs: Math.round(e.startTime * 10) / 10,
          endMs: Math.round((e as PerformanceResourceTiming).responseEnd * 10) / 10,
        })),
        api: api.map((e) => ({
          name: e.name,
          startTime: e.startTime,
          requestStart: e.requestStart,
          responseStart: e.responseStart,
          responseEnd: e.responseEnd,
        })),
      }
    })
    const count = await page.locator(ROWS_SELECTOR).count()
    if (count !== PAGE_ROWS) throw new Error(`expected ${PAGE_ROWS} rows, found ${count}`)
    const api = timing.api.at(-1)
    if (!api || timing.api.length !== 1)
      throw new Error(`expected one /integration/transactions call, saw ${JSON.stringify(timing.api)}`)
    return {
      rowsMs: round(timing.rows.at),
      paintedMs: round(timing.rows.painted),
      apiMs: round(api.responseEnd - api.startTime),
      apiServerMs: round(api.responseStart - api.requestStart),
      apiStartMs: round(api.startTime),
      domReadyMs: round(timing.domReady),
      requests: timing.requests,
    }
  } finally {
    await page.close()
  }
}

async function main() {
  if (!existsSync('dist/main.js')) throw new Error('dist/main.js is missing: run `npm run build` first')
  if (!existsSync('dist/dashboard/index.html'))
    throw new Error('dist/dashboard/index.html is missing: run `npm run build` first')
  const database = await benchDatabase(adminUrl, 'mg_bench_dashboard')
  const { name, info } = database
  const databaseUrl = database.url
  log(`database ${name}`)
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  let browser: Browser | undefined
  try {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const env = { ...benchEnv(databaseUrl, randomBytes(32).toString('hex')), PUBLIC_BASE_URL: base }
    const handle = await connectPostgres(databaseUrl, 2)
    await migrateToLatest(handle.db)
    const services = createServices(handle.db, loadConfig({ ...env, PORT: String(port) }))
    const { merchant } = await services.merchants.createMerchant({ name: 'Bench dashboard' })
    const email = 'owner@bench.example'
    const password = `pw-${randomBytes(12).toString('hex')}`
    const invitation = await services.users.invite({ merchantUuid: merchant.uuid, email, role: 'owner' }, CLI)
    const token = new URL(invitation.link).searchParams.get('token') as string
    await services.users.acceptInvitation({ token, password }, { ip: null, userAgent: null })
    await services.close()
    await handle.close()
    await seedDatabase(databaseUrl, merchant.uuid, ROWS, log)

    server = await startServer(
      'API',
      ['dist/main.js', 'serve', '--role', 'api'],
      env,
      '/integration/health',
      port,
    )
    browser = await launchChromium()
    const browserVersion = browser.version()
    const context = await browser.newContext()
    const signIn = await context.newPage()
    await signIn.goto(`${base}/dashboard/sign-in`)
    await signIn.getByLabel('Email').fill(email)
    await signIn.getByLabel('Password').fill(password)
    await signIn.getByRole('button', { name: 'Sign in' }).click()
    await signIn.waitForURL(/\/dashboard\/test/, { timeout: 30_000 })
    await signIn.close()
    log(`signed in with Chromium ${browserVersion}`)

    const search = searchPrefix(ROWS)
    const cases: Case[] = [
      { name: 'First page', query: '' },
      { name: 'Filtered by status (paid)', query: '?status=paid' },
      { name: `Search for an external id prefix (${search})`, query: `?search=${search}` },
    ]
    const results: (Case & { runs: Run[] })[] = []
    for (const c of cases) {
      const runs: Run[] = []
      for (let run = 1; run <= RUNS; run++) {
        runs.push(await measure(context, base, c.query))
        const { requests, ...figures } = runs.at(-1) as Run
        log(
          `${c.name}, run ${run}: ${JSON.stringify(figures)} ${requests.map((r) => `${r.name} ${r.startMs}-${r.endMs}`).join(', ')}`,
        )
      }
      results.push({ ...c, runs })
    }
    await context.close()

    const worst = Math.max(...results.flatMap((c) => c.runs.map((r) => r.paintedMs)))
    const result = { machine: info, chromium: browserVersion, rows: ROWS, runs: RUNS, results, worst }
    console.log(JSON.stringify(result, null, 2))

    const block = [
      `Times are from the navigation's start (\`performance.now()\` in the page). DOM ready: the document's DOMContentLoaded handlers have run (the dashboard's script is loaded). API call starts: when the page sends its \`/integration/transactions\` request (beside its \`/dashboard/api/me\` check of who is signed in). Rows in DOM: the table has its ${PAGE_ROWS} rows; rows painted: the frame after, what the target is judged on. API call: the page's \`/integration/transactions\` request from its start to the end of its answer, and of that the request to the answer's first byte (the server's time). Run 1 of the first case is the server's first page and the browser's empty cache; later runs have the dashboard's scripts cached.`,
      ...results.flatMap((c) => [
        '',
        `**${c.name}**: \`/dashboard/test/payments${c.query}\``,
        '',
        '| run | DOM ready | API call starts | API call | API first byte | rows in DOM | rows painted | vs target (< 1 s) |',
        '|---|---|---|---|---|---|---|---|',
        ...c.runs.map(
          (r, i) =>
            `| ${i + 1} | ${r.domReadyMs} ms | ${r.apiStartMs} ms | ${r.apiMs} ms | ${r.apiServerMs} ms | ${r.rowsMs} ms | ${r.paintedMs} ms | ${round(r.paintedMs / TARGET_MS, 3)} × |`,
        ),
      ]),
      '',
      `Target ${worst < TARGET_MS ? 'met' : 'NOT met'}: the slowest first page was painted ${worst} ms after the navigation started, ${round(worst / TARGET_MS, 3)} × the 1 s target.`,
    ].join('\n')
    console.error(writeResult('dashboard', info, block, [['Chromium', `${browserVersion} headless`]]))
  } finally {
    await browser?.close()
    await server?.stop()
    await database.close(Boolean(values['keep-database']))
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})

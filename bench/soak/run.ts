/**
 * Soak benchmark: the real API (`serve --role api`) and one worker (`serve --role worker`) under a fixed rate of
 * mixed traffic for --minutes, on a database of its own. Every second it records the requests done, the errors,
 * each request's latency, both processes' RSS, their event-loop delay (prom-client's
 * `nodejs_eventloop_lag_p99_seconds`, scraped from METRICS_PORT) and the webhook deliveries received.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:soak -- \
 *     [--minutes 30] [--rate <req/s> | --fraction 0.5] [--ramp-seconds 60] [--merchants 1] [--window-minutes 5] [--connections 64] [--no-readme] [--source] \
 *     [--keep-database] [--mix create=12,get=24,list=2,paid=1,refund=1] [--profile <dir>] [--trace <file>]
 *     [--wal-compression lz4] [--max-load 1.5] [--load-wait 600]
 *
 * Without --rate, a 20 s autocannon run of creates at 50 connections (after 3 s of warm-up) measures the create
 * throughput first, for a merchant of its own, and the soak runs at --fraction of it (by default half). The
 * measurement waits (up to --load-wait seconds) for the 1-minute load to be at most --max-load, as bench:api's
 * runs do (one measurement started seconds after a build gave 2,082.6 creates/s; others 3,461.5 and 4,439.6).
 *
 * The traffic is an open model: requests are sent at the rate whatever the answers (an undici Pool with
 * keep-alive), and a request's latency counts from when it was due. By default (--mix), of every 40 requests:
 * 12 creates (POST /integration/transactions), 24 gets of a created transaction, 2 lists (first page of 25),
 * 1 sandbox `paid` of a created pending card transaction (its event makes a webhook delivery the worker sends
 * to a receiver in this process) and 1 signed refund of 100 minor units of a paid transaction.
 *
 * The verdict compares the second window of --window-minutes with the last: API and worker RSS (mean of the
 * per-second samples), the API's event-loop delay p99 (mean of the per-second values) and the request p99
 * (over the window's requests) must each be at most 1.10 × in the last; errors must be 0.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import pg from 'pg'
import { Pool } from 'undici'
import { sign } from '../../src/http/auth.ts'
import {
  benchDatabase,
  benchEnv,
  benchMerchant,
  cpuSeconds,
  fmt,
  freePort,
  type machine,
  machineBusySeconds,
  postgresCpuSeconds,
  postgresCpuSince,
  round,
  rssMiB,
  type Server,
  serveArgs,
  settledLoad,
  sleep,
  startServer,
  writeReadme,
} from '../lib.ts'
import { PgTrace } from './trace.ts'

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    rate: { type: 'string' },
    fraction: { type: 'string', default: '0.5' },
    'ramp-seconds': { type: 'string', default: '60' },
    merchants: { type: 'string', default: '1' },
    'window-minutes': { type: 'string', default: '5' },
    connections: { type: 'string', default: '64' },
    'max-in-flight': { type: 'string', default: '5000' },
    mix: { type: 'string', default: 'create=12,get=24,list=2,paid=1,refund=1' },
    'no-readme': { type: 'boolean', default: false },
    compiled: { type: 'boolean', default: true },
    source: { type: 'boolean', default: false },
    'keep-database': { type: 'boolean', default: false },
    profile: { type: 'string' },
    trace: { type: 'string' },
    'wal-compression': { type: 'string' },
    'max-load': { type: 'string', default: '1.5' },
    'load-wait': { type: 'string', default: '600' },
  },
})
const MINUTES = Number(values.minutes)
const WINDOW_MINUTES = Number(values['window-minutes'])
const DURATION_S = Math.round(MINUTES * 60)
const WINDOW_S = Math.round(WINDOW_MINUTES * 60)
const CONNECTIONS = Number(values.connections)
const MAX_IN_FLIGHT = Number(values['max-in-flight'])
const MERCHANTS = Number(values.merchants)
const COMPILED = Boolean(values.compiled) && !values.source
const MAX_RATIO = 1.1
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const masterKey = randomBytes(32).toString('hex')
const log = (line: string) => process.stderr.write(`[bench:soak] ${line}\n`)

// ---------------------------------------------------------------------------------------------- latencies

/** In flight at a second's end above this, with the machine's CPU low, the second counts as stalled. */
const STALL_IN_FLIGHT = 100

/** Log-scale buckets, 2 % wide, from 0.05 ms up: an HDR-like histogram per second, merged for any interval. */
const BUCKET_BASE = 0.05
const BUCKET_GROWTH = 1.02
const BUCKETS = Math.ceil(Math.log(300_000 / BUCKET_BASE) / Math.log(BUCKET_GROWTH)) + 1
const bucketOf = (ms: number) =>
  ms <= BUCKET_BASE
    ? 0
    : Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / BUCKET_BASE) / Math.log(BUCKET_GROWTH)))
/** A bucket's upper bound: a percentile read from the histogram is at most 2 % above the true one. */
const bucketMs = (bucket: number) => BUCKET_BASE * BUCKET_GROWTH ** bucket

function percentileOf(histogram: Uint32Array, p: number): number {
  let total = 0
  for (const n of histogram) total += n
  if (total === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * total)
  let seen = 0
  for (let b = 0; b < histogram.length; b++) {
    seen += histogram[b] ?? 0
    if (seen >= rank) return bucketMs(b)
  }
  return Number.NaN
}

function merge(into: Uint32Array, from: Uint32Array) {
  for (let b = 0; b < from.length; b++) into[b] = (into[b] ?? 0) + (from[b] ?? 0)
}

// ---------------------------------------------------------------------------------------------- samples

type Op = 'create' | 'get' | 'list' | 'paid' | 'refund'
const OPS: Op[] = ['create', 'get', 'list', 'paid', 'refund']
/**
 * `--mix`: how many of each kind in every round of requests (by default 9 creates, 7 gets, 2 lists, 1 paid
 * and 1 refund in 20), the kinds spread evenly through the round.
 */
function parseMix(text: string): Op[] {
  const counts = text.split(',').map((part) => {
    const [op, count] = part.split('=')
    if (!OPS.includes(op as Op) || !/^\d+$/.test(count ?? '')) throw new Error(`--mix: cannot read "${part}"`)
    return [op as Op, Number(count)] as const
  })
  const total = counts.reduce((sum, [, count]) => sum + count, 0)
  if (total === 0) throw new Error('--mix: no requests')
  return counts
    .flatMap(([op, count]) =>
      Array.from({ length: count }, (_, k) => ({ op, at: ((k + 0.5) * total) / count })),
    )
    .sort((a, b) => a.at - b.at)
    .map((slot) => slot.op)
}
const MIX = parseMix(values.mix as string)

/** A merchant of the traffic: its keys, and the transactions its requests draw from. */
interface Shop {
  keys: { test: { key_id: string; secret: string } }
  apiKey: Record<string, string>
  /** Created transactions (gets), the newest pending ones (paid), paid ones (refunds): rings of 10,000. */
  created: string[]
  createdNext: number
  pending: string[]
  paid: string[]
  paidNext: number
}

interface Second {
  done: number
  errors: number
  histogram: Uint32Array
  apiRss: number
  workerRss: number
  /** prom-client's nodejs_eventloop_lag_p99_seconds over the second, in ms (NaN: the scrape failed). */
  apiEld: number
  workerEld: number
  deliveries: number
  outboxDepth: number
  inFlight: number
  /** The latest the runner's clock handed a request of this second to the pool after it was due, in ms. */
  lateMax: number
  /** CPU time the API, the worker and the runner itself used in the second, in ms (1,000 is one core). */
  apiCpu: number
  workerCpu: number
  runnerCpu: number
  /** CPU time PostgreSQL's processes used in the second, and the whole machine over its cores, in ms. */
  pgCpu: number
  machineCpu: number
}

const newSecond = (): Second => ({
  done: 0,
  errors: 0,
  histogram: new Uint32Array(BUCKETS),
  apiRss: Number.NaN,
  workerRss: Number.NaN,
  apiCpu: Number.NaN,
  workerCpu: Number.NaN,
  runnerCpu: Number.NaN,
  pgCpu: Number.NaN,
  machineCpu: Number.NaN,
  apiEld: Number.NaN,
  workerEld: Number.NaN,
  deliveries: 0,
  outboxDepth: Number.NaN,
  inFlight: 0,
  lateMax: 0,
})

interface Aggregate {
  seconds: number
  rps: number
  errors: number
  p50: number
  p99: number
  apiRss: number
  workerRss: number
  apiEld: number
  workerEld: number
  deliveries: number
  outboxMax: number
  /** Mean CPU of the second, in ms per second (1,000: one core busy). */
  apiCpu: number
  workerCpu: number
  runnerCpu: number
  pgCpu: number
  machineCpu: number
  /** The API's CPU per request answered, in ms. */
  apiCpuPerRequest: number
}

const mean = (xs: number[]) => {
  const ok = xs.filter(Number.isFinite)
  return ok.length ? ok.reduce((a, b) => a + b, 0) / ok.length : Number.NaN
}

function aggregate(seconds: Second[]): Aggregate {
  const histogram = new Uint32Array(BUCKETS)
  for (const s of seconds) merge(histogram, s.histogram)
  const n = Math.max(1, seconds.length)
  const rps = seconds.reduce((a, s) => a + s.done, 0) / n
  const apiCpu = mean(seconds.map((s) => s.apiCpu))
  return {
    seconds: seconds.length,
    rps,
    errors: seconds.reduce((a, s) => a + s.errors, 0),
    p50: percentileOf(histogram, 50),
    p99: percentileOf(histogram, 99),
    apiRss: mean(seconds.map((s) => s.apiRss)),
    workerRss: mean(seconds.map((s) => s.workerRss)),
    apiEld: mean(seconds.map((s) => s.apiEld)),
    workerEld: mean(seconds.map((s) => s.workerEld)),
    deliveries: seconds.reduce((a, s) => a + s.deliveries, 0) / n,
    outboxMax: Math.max(...seconds.map((s) => (Number.isFinite(s.outboxDepth) ? s.outboxDepth : 0))),
    apiCpu,
    apiCpuPerRequest: apiCpu / Math.max(1, rps),
    workerCpu: mean(seconds.map((s) => s.workerCpu)),
    runnerCpu: mean(seconds.map((s) => s.runnerCpu)),
    pgCpu: mean(seconds.map((s) => s.pgCpu)),
    machineCpu: mean(seconds.map((s) => s.machineCpu)),
  }
}

// ---------------------------------------------------------------------------------------------- metrics

/** One gauge's value from a Prometheus text exposition (the unlabelled series, or the first). */
function gauge(text: string, name: string): number {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([^ \\n]+)`, 'm').exec(text)
  return match ? Number(match[1]) : Number.NaN
}

/** The sum of a counter's series whose labels contain `label`. */
function counterSum(text: string, name: string, label: string): number {
  let total = 0
  for (const match of text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} ([^ \\n]+)`, 'gm')))
    if ((match[1] ?? '').includes(label)) total += Number(match[2])
  return total
}

async function scrape(port: number): Promise<string | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(900) })
    return res.ok ? await res.text() : null
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------------------------- report

interface Check {
  what: string
  second: number
  last: number
  unit: string
  ratio: number
  met: boolean
  information?: boolean
}

interface OpSummary {
  sent: number
  done: number
  errors: number
  histogram: Uint32Array
  /** Every kind of error seen (status and error code, a refusal, a network error): how many, when, one body. */
  errorKinds: Map<string, ErrorKind>
}

interface ErrorKind {
  count: number
  firstSecond: number
  lastSecond: number
  example: string
}

/** What kind of error an answer is: its status and the envelope's code, or the reason it has no answer. */
function errorKindOf(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown }; code?: unknown }
    const code = body.error?.code ?? body.code
    if (typeof code === 'string') return `${status} ${code}`
  } catch {}
  return String(status)
}

function report(input: {
  info: ReturnType<typeof machine>
  /** PostgreSQL's settings that shape a long write load, as the run's sessions had them. */
  settings: string[]
  rate: number
  rateNote: string
  minutes: Aggregate[]
  second: Aggregate
  last: Aggregate
  checks: Check[]
  ops: Map<Op, OpSummary>
  totals: { sent: number; done: number; errors: number; shed: number; deliveries: number }
  /** How late the load generator sent requests after they were due (its own event loop's lag). */
  lateness: Uint32Array
  end: { outboxDepth: number; failedAttempts: number; retryAttempts: number }
  notes: string[]
  passed: boolean
}): string {
  const { info } = input
  const lines: string[] = []
  const window = (from: number, to: number) => `${round(from / 60, 2)}–${round(to / 60, 2)} min`
  lines.push(
    `Run of ${info.date}: ${MINUTES} min at ${fmt(input.rate)} req/s (${input.rateNote}), reached over the first ` +
      `${values['ramp-seconds']} s, from ${MERCHANTS} merchant${MERCHANTS === 1 ? '' : 's'} taking turns, windows of ${WINDOW_MINUTES} min.`,
  )
  lines.push('')
  lines.push('| machine | |')
  lines.push('|---|---|')
  lines.push(`| \`nproc\` | ${info.nproc} |`)
  lines.push(`| \`free -g\` total | ${info.memoryGiB} GiB |`)
  lines.push(`| CPU (/proc/cpuinfo) | ${info.cpu} |`)
  lines.push(`| Node.js | ${info.node} |`)
  lines.push(`| PostgreSQL | ${info.postgres}, autovacuum ${info.autovacuum} |`)
  lines.push(`| PostgreSQL settings | ${input.settings.join(', ')} |`)
  lines.push(`| server | ${COMPILED ? 'compiled (`node dist/main.js`)' : 'from the sources (tsx)'} |`)
  lines.push(`| commit measured | ${info.commit} |`)
  lines.push('')
  lines.push(
    '| minute | req/s | errors | p50 ms | p99 ms | API RSS MiB | worker RSS MiB | API event-loop p99 ms | worker event-loop p99 ms | deliveries/s | outbox max | API CPU ms/req | worker CPU % | runner CPU % | PostgreSQL CPU % | machine CPU % |',
  )
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
  input.minutes.forEach((m, i) => {
    lines.push(
      `| ${i + 1} | ${fmt(m.rps)} | ${m.errors} | ${fmt(m.p50, 2)} | ${fmt(m.p99, 2)} | ${fmt(m.apiRss)} | ${fmt(m.workerRss)} | ` +
        `${fmt(m.apiEld, 2)} | ${fmt(m.workerEld, 2)} | ${fmt(m.deliveries)} | ${fmt(m.outboxMax, 0)} | ` +
        `${fmt(m.apiCpuPerRequest, 3)} | ${fmt(m.workerCpu / 10)} | ${fmt(m.runnerCpu / 10)} | ${fmt(m.pgCpu / 10)} | ${fmt(m.machineCpu / 10)} |`,
    )
  })
  lines.push('')
  lines.push('| request | sent | answered | errors | p50 ms | p99 ms | max ms |')
  lines.push('|---|---|---|---|---|---|---|')
  for (const [op, s] of input.ops) {
    let max = Number.NaN
    for (let b = s.histogram.length - 1; b >= 0; b--)
      if ((s.histogram[b] ?? 0) > 0) {
        max = bucketMs(b)
        break
      }
    lines.push(
      `| ${op} | ${s.sent} | ${s.done} | ${s.errors} | ${fmt(percentileOf(s.histogram, 50), 2)} | ` +
        `${fmt(percentileOf(s.histogram, 99), 2)} | ${fmt(max, 1)} |`,
    )
  }
  lines.push('')
  lines.push(
    `Verdict: the second window (${window(WINDOW_S, 2 * WINDOW_S)}) against the last (${window(DURATION_S - WINDOW_S, DURATION_S)}); ` +
      `each ratio last / second at most ${MAX_RATIO}, and no errors.`,
  )
  lines.push('')
  lines.push('| check | second window | last window | ratio | target | met |')
  lines.push('|---|---|---|---|---|---|')
  for (const c of input.checks)
    lines.push(
      `| ${c.what} | ${fmt(c.second, 2)} ${c.unit} | ${fmt(c.last, 2)} ${c.unit} | ${fmt(c.ratio, 3)} × | ` +
        `${c.information ? '—' : `≤ ${MAX_RATIO} ×`} | ${c.information ? '(information)' : c.met ? 'yes' : '**no**'} |`,
    )
  const t = input.totals
  lines.push(
    `| errors (non-2xx, network, not sent) | ${input.second.errors} | ${input.last.errors} | | 0 over the run: ${t.errors} | ${t.errors === 0 ? 'yes' : '**no**'} |`,
  )
  lines.push('')
  lines.push(
    `Totals: ${t.sent.toLocaleString('en-US')} requests due, ${t.done.toLocaleString('en-US')} answered, ` +
      `${t.errors} errors (${t.shed} not sent because ${MAX_IN_FLIGHT} were in flight); ` +
      `${t.deliveries.toLocaleString('en-US')} webhook deliveries received; after the load, outbox depth ` +
      `${fmt(input.end.outboxDepth, 0)}, delivery attempts that failed ${fmt(input.end.failedAttempts, 0)} and ` +
      `to be retried ${fmt(input.end.retryAttempts, 0)} (worker metrics). The load generator handed the requests ` +
      `to its pool ${fmt(percentileOf(input.lateness, 50), 2)} ms (p50) and ${fmt(percentileOf(input.lateness, 99), 2)} ms ` +
      `(p99) after they were due (its 5 ms clock and its own event loop); the latencies include that. ` +
      `**${input.passed ? 'PASSED' : 'FAILED'}.**`,
  )
  for (const note of input.notes) {
    lines.push('')
    lines.push(note)
  }
  return lines.join('\n')
}

// ---------------------------------------------------------------------------------------------- main

async function measureCreateThroughput(base: string, headers: Record<string, string>): Promise<number> {
  let n = 0
  const tag = randomBytes(3).toString('hex')
  const run = (seconds: number) =>
    (autocannon as unknown as (o: autocannon.Options) => Promise<autocannon.Result>)({
      url: base,
      connections: 50,
      duration: seconds,
      headers: { 'content-type': 'application/json', ...headers },
      requests: [
        {
          setupRequest: (req) => ({
            ...req,
            method: 'POST',
            path: '/integration/transactions',
            body: JSON.stringify({
              amount: 100_000 + (n % 1000),
              currency: 'RUB',
              payment_method: 'card',
              external_id: `m${tag}-${n++}`,
            }),
          }),
        },
      ],
    })
  await run(3)
  const result = await run(20)
  const bad = result.non2xx + result.errors + result.timeouts
  if (bad > 0) throw new Error(`the create throughput run had ${bad} errors or non-2xx answers`)
  return result.requests.average
}

/** The newest mtime under a directory (the sources, to tell a stale build). */
function newestMtime(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs)
  }
  return newest
}

async function main() {
  if (!(Number.isInteger(MERCHANTS) && MERCHANTS >= 1))
    throw new Error('--merchants must be a whole number, 1 or more')
  if (!(DURATION_S > 0 && WINDOW_S > 0 && DURATION_S >= 2 * WINDOW_S))
    throw new Error('--minutes must be at least twice --window-minutes (the second window and the last)')
  const notes: string[] = []
  if (COMPILED) {
    if (!existsSync('dist/main.js'))
      throw new Error('dist/main.js is missing: run `npm run build` first (or pass --source to run with tsx)')
    if (newestMtime('src') > newestMtime('dist')) {
      log('warning: src/ has files newer than any in dist/: the build may be stale (`npm run build`)')
      notes.push(
        'src/ had files newer than any in dist/ at the start: the build measured may lag the sources.',
      )
    }
  }

  const database = await benchDatabase(adminUrl, 'mg_bench_soak')
  const { name, info, autovacuum, autovacuumThrottle: throttle } = database
  // --wal-compression: set on the run's database only (its sessions compress the full-page images they write);
  // the server's other databases keep theirs.
  const walCompression = values['wal-compression']
  if (walCompression !== undefined && !/^(pglz|lz4|zstd|on|off)$/.test(walCompression))
    throw new Error(`--wal-compression must be pglz, lz4, zstd, on or off: ${walCompression}`)
  const settings = database.settings.map((line) =>
    walCompression !== undefined && line.startsWith('wal_compression ')
      ? `wal_compression ${walCompression} (set on the run's database)`
      : line,
  )
  const databaseUrl = database.url
  log(`database ${name}`)
  const servers: Server[] = []
  const maintenance = new pg.Client({ connectionString: databaseUrl })
  maintenance.on('error', () => {})
  let pool: Pool | null = null
  let trace: PgTrace | null = null
  // A signal aborts the run: before the load (the load wait, the create measurement, the seeding) it ends
  // there, with `throwIfAborted`; during the load the sampling loop stops and the summary covers what ran.
  const interrupted = new AbortController()
  const { signal } = interrupted
  const onSignal = () => {
    if (signal.aborted) return
    log('interrupted: ending the run, then cleaning up')
    interrupted.abort(new Error('interrupted before the load'))
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  // The receiver: answers 200 at once; counts deliveries per second of the run.
  let deliveriesNow = 0
  const receiver = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      deliveriesNow++
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`

  try {
    const env = benchEnv(databaseUrl, masterKey)
    // --merchants: the traffic's merchants, each with its own keys, webhook URL and transactions.
    const shops: Shop[] = []
    for (let i = 0; i < MERCHANTS; i++) {
      const { keys } = await benchMerchant(env, `Bench soak ${i + 1}`, (services, { merchant, keys }) =>
        services.webhooks
          .updateConfig({ keyId: keys.test.key_id, mode: 'test', merchant }, { url: receiverUrl })
          .then(() => undefined),
      )
      shops.push({
        keys,
        apiKey: { 'x-api-key': keys.test.secret },
        created: [],
        createdNext: 0,
        pending: [],
        paid: [],
        paidNext: 0,
      })
    }
    await maintenance.connect()
    if (walCompression !== undefined)
      await maintenance.query(`ALTER DATABASE ${name} SET wal_compression = '${walCompression}'`)
    // --trace <file>: a CSV line per second, the runner's figures beside PostgreSQL's.
    if (values.trace) trace = new PgTrace(databaseUrl, values.trace)

    const apiMetricsPort = await freePort()
    const workerMetricsPort = await freePort()
    // --profile <dir>: both processes write a V8 CPU profile there when they stop.
    const profileArgs = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : []
    const program = (role: 'api' | 'worker') => serveArgs(role, { source: !COMPILED, nodeArgs: profileArgs })
    const api = await startServer(
      'API',
      program('api'),
      { ...env, METRICS_PORT: String(apiMetricsPort) },
      '/integration/health',
    )
    servers.push(api)
    // The worker serves no HTTP but its metrics: PORT is set to the metrics port only for startServer's wait.
    const worker = await startServer(
      'worker',
      program('worker'),
      { ...env, METRICS_PORT: String(workerMetricsPort) },
      '/metrics',
      workerMetricsPort,
    )
    servers.push(worker)
    const apiPid = api.child.pid as number
    const workerPid = worker.child.pid as number

    let rate: number
    let rateNote: string
    if (values.rate) {
      rate = Number(values.rate)
      rateNote = 'set with --rate'
    } else {
      log('measuring the create throughput: 20 s of autocannon at 50 connections after 3 s of warm-up')
      // A merchant of its own, without a webhook URL and with payments that outlive the run: the 80,000 or so
      // payments it creates in 23 s would otherwise all expire in the run's last minutes, each an event and a
      // delivery, a burst the soak's own traffic never makes.
      const calibration = await benchMerchant(env, 'Bench soak calibration', (services, { merchant }) =>
        services.merchants
          .updateMerchant(merchant.uuid, { transactionTtlSeconds: DURATION_S + 3600 })
          .then(() => undefined),
      )
      const fraction = Number(values.fraction)
      if (!(fraction > 0)) throw new Error(`--fraction must be a positive number: ${values.fraction}`)
      const { load } = await settledLoad(
        'create throughput',
        Number(values['max-load']),
        Number(values['load-wait']),
        log,
        signal,
      )
      signal.throwIfAborted()
      const measured = await measureCreateThroughput(api.base, { 'x-api-key': calibration.keys.test.secret })
      rate = Math.round(measured * fraction)
      rateNote = `${fraction} × the ${fmt(measured)} creates/s measured first: 20 s of autocannon at 50 connections, the 1-minute load ${fmt(load, 2)} at its start`
      log(`create throughput ${fmt(measured)} req/s: the soak runs at ${rate} req/s`)
    }
    if (!(rate > 0)) throw new Error(`no rate to run at: ${rate}`)
    signal.throwIfAborted()

    // What the requests draw from: created transactions (gets), pending ones (paid), paid ones (refunds).
    pool = new Pool(api.base, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 60_000 })
    const http = pool
    const RING = 10_000
    const remember = (ring: string[], at: number, uuid: string) => {
      if (ring.length < RING) ring.push(uuid)
      else ring[at % RING] = uuid
    }
    const tag = randomBytes(3).toString('hex')
    let seq = 0
    const createBody = () => {
      const n = seq++
      return JSON.stringify({
        amount: 100_000 + (n % 1000),
        currency: 'RUB',
        payment_method: 'card',
        external_id: `s${tag}-${n}`,
        description: `Soak order ${n}`,
      })
    }

    interface Made {
      op: Op
      method: 'GET' | 'POST'
      path: string
      headers: Record<string, string>
      body?: string
      uuid?: string
      shop: Shop
    }
    let turn = 0
    const make = (wanted: Op): Made => {
      // The merchants take turns, one further on at each round of the mix: taking turns by request alone,
      // a mix whose length the number of merchants divides gave each kind of request to one merchant always
      // (with 4, the paid callbacks all went to one and the refunds all to another, whose balance they drained).
      const round = Math.floor(turn / MIX.length)
      const shop = shops[(turn++ + round) % shops.length] as Shop
      const { created, pending, paid, apiKey, keys } = shop
      let op = wanted
      // Nothing to draw from yet: a create instead.
      if ((op === 'get' && created.length === 0) || (op === 'paid' && pending.length === 0)) op = 'create'
      if (op === 'refund' && paid.length === 0) op = 'create'
      switch (op) {
        case 'create':
          return {
            op,
            method: 'POST',
            path: '/integration/transactions',
            headers: { 'content-type': 'application/json', ...apiKey },
            body: createBody(),
            shop,
          }
        case 'get': {
          const uuid = created[Math.floor(Math.random() * created.length)] as string
          return { op, method: 'GET', path: `/integration/transactions/${uuid}`, headers: apiKey, shop }
        }
        case 'list':
          return { op, method: 'GET', path: '/integration/transactions?per_page=25', headers: apiKey, shop }
        case 'paid': {
          // The newest pending one: far from its expiry.
          const uuid = pending.pop() as string
          return {
            op,
            method: 'POST',
            path: `/integration/sandbox/transactions/${uuid}/paid`,
            headers: apiKey,
            uuid,
            shop,
          }
        }
        case 'refund': {
          const uuid = paid[Math.floor(Math.random() * paid.length)] as string
          const body = JSON.stringify({ transaction_uuid: uuid, amount_minor: 100 })
          const idempotencyKey = `soak-${tag}-${seq++}`
          const t = Math.floor(Date.now() / 1000)
          const path = '/integration/refunds'
          const v1 = sign(keys.test.secret, t, 'POST', path, idempotencyKey, body)
          return {
            op,
            method: 'POST',
            path,
            headers: {
              'content-type': 'application/json',
              'idempotency-key': idempotencyKey,
              'x-signature': `key_id=${keys.test.key_id},t=${t},v1=${v1}`,
            },
            body,
            shop,
          }
        }
      }
    }

    // A few transactions to draw from before the clock starts: 200 created, 50 of them paid, per merchant.
    for (let i = 0; i < 200 * shops.length; i++) {
      signal.throwIfAborted()
      const { created, pending, paid, apiKey } = shops[i % shops.length] as Shop
      const res = await http.request({
        method: 'POST',
        path: '/integration/transactions',
        headers: { 'content-type': 'application/json', ...apiKey },
        body: createBody(),
      })
      const body = (await res.body.json()) as { uuid?: string }
      if (res.statusCode !== 201 || !body.uuid)
        throw new Error(`seeding a create: ${res.statusCode} ${JSON.stringify(body).slice(0, 300)}`)
      created.push(body.uuid)
      if (i < 50 * shops.length) {
        const payRes = await http.request({
          method: 'POST',
          path: `/integration/sandbox/transactions/${body.uuid}/paid`,
          headers: apiKey,
        })
        const text = await payRes.body.text()
        if (payRes.statusCode !== 200)
          throw new Error(`seeding a paid: ${payRes.statusCode} ${text.slice(0, 300)}`)
        paid.push(body.uuid)
      } else pending.push(body.uuid)
    }
    for (const shop of shops) shop.createdNext = shop.created.length
    if (autovacuum === 'off') await maintenance.query('ANALYZE')

    // The run.
    const seconds: Second[] = Array.from({ length: DURATION_S }, newSecond)
    const ops = new Map<Op, OpSummary>(
      OPS.map((op) => [
        op,
        { sent: 0, done: 0, errors: 0, histogram: new Uint32Array(BUCKETS), errorKinds: new Map() },
      ]),
    )
    const totals = { sent: 0, done: 0, errors: 0, shed: 0, deliveries: 0 }
    const lateness = new Uint32Array(BUCKETS)
    let inFlight = 0
    // The seeded transactions' deliveries are not the run's.
    await sleep(1000)
    signal.throwIfAborted()
    deliveriesNow = 0
    const start = performance.now()
    const secondAt = (now: number) => Math.min(DURATION_S - 1, Math.floor((now - start) / 1000))
    const fail = (op: OpSummary, at: number, kind: string, example: string) => {
      op.errors++
      ;(seconds[at] as Second).errors++
      totals.errors++
      const seen = op.errorKinds.get(kind)
      if (seen) {
        seen.count++
        seen.lastSecond = at
      } else
        op.errorKinds.set(kind, { count: 1, firstSecond: at, lastSecond: at, example: example.slice(0, 300) })
    }

    const send = (made: Made, due: number) => {
      const op = ops.get(made.op) as OpSummary
      op.sent++
      if (inFlight >= MAX_IN_FLIGHT) {
        totals.shed++
        fail(op, secondAt(due), 'not sent', `${inFlight} in flight`)
        if (made.op === 'paid' && made.uuid) made.shop.pending.push(made.uuid)
        return
      }
      inFlight++
      const lateMs = performance.now() - due
      const late = bucketOf(lateMs)
      lateness[late] = (lateness[late] ?? 0) + 1
      const dueSecond = seconds[secondAt(due)] as Second
      if (lateMs > dueSecond.lateMax) dueSecond.lateMax = lateMs
      http
        .request({ method: made.method, path: made.path, headers: made.headers, body: made.body })
        .then(async (res) => {
          const text = await res.body.text()
          return { status: res.statusCode, text }
        })
        .then(
          ({ status, text }) => {
            const now = performance.now()
            const at = secondAt(now)
            const second = seconds[at] as Second
            const ms = now - due
            const bucket = bucketOf(ms)
            second.histogram[bucket] = (second.histogram[bucket] ?? 0) + 1
            op.histogram[bucket] = (op.histogram[bucket] ?? 0) + 1
            second.done++
            op.done++
            totals.done++
            if (status < 200 || status > 299) {
              fail(op, at, errorKindOf(status, text), text)
              return
            }
            const { shop } = made
            if (made.op === 'create') {
              const uuid = (JSON.parse(text) as { uuid: string }).uuid
              remember(shop.created, shop.createdNext++, uuid)
              shop.pending.push(uuid)
              if (shop.pending.length > 2 * RING) shop.pending.splice(0, RING)
            } else if (made.op === 'paid' && made.uuid) remember(shop.paid, shop.paidNext++, made.uuid)
          },
          (error: unknown) => {
            const at = secondAt(performance.now())
            ;(seconds[at] as Second).done++
            op.done++
            totals.done++
            const message = error instanceof Error ? error.message : String(error)
            fail(op, at, `network: ${message}`, message)
          },
        )
        .finally(() => {
          inFlight--
        })
    }

    // The clock: every 5 ms, send what has come due since, each request stamped with the instant it was due.
    // Over the first --ramp-seconds the rate rises linearly from 0 (a cold server, its connections and JIT,
    // is not met with the whole rate at once); then it holds.
    const RAMP_S = Math.min(Number(values['ramp-seconds']), DURATION_S)
    const dueBy = (s: number) =>
      RAMP_S > 0 && s < RAMP_S ? (rate * s * s) / (2 * RAMP_S) : rate * (s - RAMP_S / 2)
    /** When request n (from 0) is due, in seconds from the start: dueBy's inverse. */
    const dueAtS = (n: number) =>
      RAMP_S > 0 && n < (rate * RAMP_S) / 2 ? Math.sqrt((2 * RAMP_S * n) / rate) : n / rate + RAMP_S / 2
    let mixAt = 0
    const end = start + DURATION_S * 1000
    const clock = setInterval(() => {
      const now = Math.min(performance.now(), end)
      const due = Math.floor(dueBy((now - start) / 1000))
      while (totals.sent < due) {
        const dueAt = start + dueAtS(totals.sent) * 1000
        totals.sent++
        send(make(MIX[mixAt++ % MIX.length] as Op), dueAt)
      }
    }, 5)

    // The sampler: once a second, both processes' RSS and metrics, and the receiver's count.
    let failedAttempts = Number.NaN
    let retryAttempts = Number.NaN
    let sampled = 0
    // CPU time at the previous sample, to take each second's share.
    const cpuSample = () => ({
      api: cpuSeconds(apiPid),
      worker: cpuSeconds(workerPid),
      runner: cpuSeconds(process.pid),
      pg: postgresCpuSeconds(),
      machine: machineBusySeconds(),
    })
    let cpuBefore = cpuSample()
    const sampleSecond = async (index: number) => {
      const second = seconds[index] as Second
      second.apiRss = rssMiB(apiPid)
      second.workerRss = rssMiB(workerPid)
      const cpuNow = cpuSample()
      second.apiCpu = (cpuNow.api - cpuBefore.api) * 1000
      second.workerCpu = (cpuNow.worker - cpuBefore.worker) * 1000
      second.runnerCpu = (cpuNow.runner - cpuBefore.runner) * 1000
      second.pgCpu = postgresCpuSince(cpuBefore.pg, cpuNow.pg) * 1000
      second.machineCpu = (cpuNow.machine - cpuBefore.machine) * 1000
      cpuBefore = cpuNow
      second.deliveries = deliveriesNow
      totals.deliveries += deliveriesNow
      deliveriesNow = 0
      second.inFlight = inFlight
      const [apiText, workerText] = await Promise.all([scrape(apiMetricsPort), scrape(workerMetricsPort)])
      if (apiText) second.apiEld = gauge(apiText, 'nodejs_eventloop_lag_p99_seconds') * 1000
      if (workerText) {
        second.workerEld = gauge(workerText, 'nodejs_eventloop_lag_p99_seconds') * 1000
        second.outboxDepth = gauge(workerText, 'webhook_outbox_depth')
        failedAttempts = counterSum(workerText, 'webhook_delivery_attempts_total', 'outcome="failed"')
        retryAttempts = counterSum(workerText, 'webhook_delivery_attempts_total', 'outcome="retry"')
      }
    }
    // With autovacuum off (as on some sandboxes), the runner does its work once a minute, by its default
    // thresholds (PostgreSQL 15's autovacuum_*): a table is vacuumed when its dead rows pass 50 + 20 % of its
    // rows or its rows inserted since its last vacuum pass 1,000 + 20 %, and analysed (in the same command when
    // both are due, as autovacuum does) when its changes since its last analysis pass 50 + 10 %; throttled as this server's autovacuum is (its
    // autovacuum_vacuum_cost_delay and _limit, or vacuum's where they are -1), and without parallel workers for the indexes, which autovacuum never uses (a manual VACUUM's would take
    // both cores for the length of a table's index pass).
    const vacuums: number[] = []
    const maintained = { vacuum: 0, analyze: 0 }
    /** Each table's share of the rounds: how often it was vacuumed or analysed, and the seconds that took. */
    const maintainedTables = new Map<string, { vacuum: number; analyze: number; seconds: number }>()
    let vacuuming = false
    const vacuum = async () => {
      if (vacuuming) return
      vacuuming = true
      const t0 = performance.now()
      try {
        await maintenance.query(`SET vacuum_cost_delay = '${throttle.delay}'`)
        await maintenance.query(`SET vacuum_cost_limit = ${Number(throttle.limit)}`)
        const { rows } = await maintenance.query<{
          relname: string
          vacuumDue: boolean
          analyzeDue: boolean
        }>(
          `SELECT relname,
             n_dead_tup > 50 + 0.2 * n_live_tup OR n_ins_since_vacuum > 1000 + 0.2 * n_live_tup AS "vacuumDue",
             n_mod_since_analyze > 50 + 0.1 * n_live_tup AS "analyzeDue"
           FROM pg_stat_user_tables`,
        )
        const took: string[] = []
        for (const { relname, vacuumDue, analyzeDue } of rows) {
          if (!vacuumDue && !analyzeDue) continue
          const t1 = performance.now()
          await maintenance.query(
            vacuumDue
              ? `VACUUM (${analyzeDue ? 'ANALYZE, ' : ''}PARALLEL 0) "${relname}"`
              : `ANALYZE "${relname}"`,
          )
          const seconds = (performance.now() - t1) / 1000
          const table = maintainedTables.get(relname) ?? { vacuum: 0, analyze: 0, seconds: 0 }
          for (const counts of [maintained, table]) {
            if (vacuumDue) counts.vacuum++
            if (analyzeDue) counts.analyze++
          }
          table.seconds += seconds
          maintainedTables.set(relname, table)
          took.push(
            `${[vacuumDue && 'vacuum', analyzeDue && 'analyze'].filter(Boolean).join(' + ')} ${relname} ${fmt(seconds, 2)} s`,
          )
        }
        vacuums.push((performance.now() - t0) / 1000)
        log(
          `maintenance at ${fmt(sampled / 60, 1)} min, ${fmt(vacuums.at(-1) ?? 0, 1)} s: ${took.join(', ') || 'nothing'}`,
        )
      } catch (error) {
        log(`VACUUM failed: ${error instanceof Error ? error.message : String(error)}`)
      } finally {
        vacuuming = false
      }
    }

    log(`soak: ${MINUTES} min at ${rate} req/s (${MIX.join(', ')})`)
    await trace?.start()
    while (sampled < DURATION_S && !signal.aborted) {
      const next = start + (sampled + 1) * 1000
      await sleep(Math.max(0, next - performance.now()))
      await sampleSecond(sampled)
      if (trace) {
        const s = seconds[sampled] as Second
        const m = aggregate([s])
        await trace.write({
          second: sampled + 1,
          done: s.done,
          errors: s.errors,
          p50: m.p50,
          p99: m.p99,
          inFlight: s.inFlight,
          apiEld: s.apiEld,
          apiRss: s.apiRss,
          lateMax: s.lateMax,
          apiCpu: s.apiCpu,
          workerCpu: s.workerCpu,
          runnerCpu: s.runnerCpu,
          pgCpu: s.pgCpu,
          machineCpu: s.machineCpu,
        })
      }
      sampled++
      if (autovacuum === 'off' && sampled % 60 === 0) void vacuum()
      if (sampled % 60 === 0 || sampled === DURATION_S) {
        const m = aggregate(seconds.slice(Math.max(0, sampled - 60), sampled))
        log(
          `${round(sampled / 60, 2)} min: ${fmt(m.rps)} req/s, errors ${m.errors}, p50 ${fmt(m.p50, 2)} ms, ` +
            `p99 ${fmt(m.p99, 2)} ms, API RSS ${fmt(m.apiRss)} MiB, worker RSS ${fmt(m.workerRss)} MiB, ` +
            `API event loop p99 ${fmt(m.apiEld, 2)} ms, ${fmt(m.deliveries)} deliveries/s, in flight ${inFlight}, ` +
            `CPU: API ${fmt(m.apiCpu / 10)} % (${fmt(m.apiCpuPerRequest, 3)} ms a request), worker ${fmt(m.workerCpu / 10)} %, runner ${fmt(m.runnerCpu / 10)} %, ` +
            `PostgreSQL ${fmt(m.pgCpu / 10)} %, machine ${fmt(m.machineCpu / 10)} % (of one core)`,
        )
      }
    }
    clearInterval(clock)
    const ranSeconds = sampled
    // The answers still due, then the outbox's last deliveries.
    const drainUntil = Date.now() + 30_000
    while (inFlight > 0 && Date.now() < drainUntil) await sleep(50)
    let outboxDepth = Number.NaN
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      const text = await scrape(workerMetricsPort)
      outboxDepth = text ? gauge(text, 'webhook_outbox_depth') : Number.NaN
      if (text) {
        failedAttempts = counterSum(text, 'webhook_delivery_attempts_total', 'outcome="failed"')
        retryAttempts = counterSum(text, 'webhook_delivery_attempts_total', 'outcome="retry"')
      }
      if (outboxDepth === 0) break
      await sleep(500)
    }
    totals.deliveries += deliveriesNow
    deliveriesNow = 0
    while (vacuuming) await sleep(100)
    if (inFlight > 0) {
      totals.errors += inFlight
      notes.push(`${inFlight} requests had no answer 30 s after the load ended: counted as errors.`)
    }

    // Only the seconds that ran (all of them unless interrupted).
    const ran = seconds.slice(0, ranSeconds)
    if (ranSeconds < DURATION_S) notes.push(`Interrupted after ${ranSeconds} s of ${DURATION_S}.`)
    const minutes: Aggregate[] = []
    for (let from = 0; from < ran.length; from += 60) minutes.push(aggregate(ran.slice(from, from + 60)))
    /** Where the second and the last window start, in seconds of the run. */
    const windowStarts = { second: WINDOW_S, last: Math.max(0, ran.length - WINDOW_S) }
    const windowOf = (from: number) => ran.slice(from, from + WINDOW_S)
    const second = aggregate(windowOf(windowStarts.second))
    const last = aggregate(windowOf(windowStarts.last))
    const check = (what: string, a: number, b: number, unit: string, information = false): Check => ({
      what,
      second: a,
      last: b,
      unit,
      ratio: b / a,
      met: Number.isFinite(b / a) && b / a <= MAX_RATIO,
      information,
    })
    const checks = [
      check('API RSS, mean', second.apiRss, last.apiRss, 'MiB'),
      check('worker RSS, mean', second.workerRss, last.workerRss, 'MiB'),
      check('API event-loop delay p99, mean of the seconds', second.apiEld, last.apiEld, 'ms'),
      check('request latency p99', second.p99, last.p99, 'ms'),
      check('worker event-loop delay p99, mean of the seconds', second.workerEld, last.workerEld, 'ms', true),
      check('request latency p50', second.p50, last.p50, 'ms', true),
      check('requests/s', second.rps, last.rps, 'req/s', true),
      check('deliveries/s', second.deliveries, last.deliveries, '/s', true),
      check('API CPU per request answered', second.apiCpuPerRequest, last.apiCpuPerRequest, 'ms', true),
      check('worker CPU, mean', second.workerCpu / 10, last.workerCpu / 10, '% of a core', true),
      check('runner CPU, mean', second.runnerCpu / 10, last.runnerCpu / 10, '% of a core', true),
      check('PostgreSQL CPU, mean', second.pgCpu / 10, last.pgCpu / 10, '% of a core', true),
      check('machine CPU busy, mean', second.machineCpu / 10, last.machineCpu / 10, '% of a core', true),
    ]
    const passed =
      ranSeconds === DURATION_S && totals.errors === 0 && checks.every((c) => c.information || c.met)
    // Seconds when requests queued while the machine computed little: the service and PostgreSQL waiting on
    // the disk (a WAL flush held up), not on CPU. One such second puts hundreds of requests above a window's p99.
    const busy = ran
      .map((s) => s.machineCpu)
      .filter(Number.isFinite)
      .sort((a, b) => a - b)
    const medianBusy = busy[Math.floor(busy.length / 2)] ?? Number.NaN
    const stalled = ran.flatMap((s, i) =>
      s.inFlight > STALL_IN_FLIGHT && s.machineCpu < medianBusy / 2 ? [i] : [],
    )
    const inWindow = (from: number) => stalled.filter((i) => i >= from && i < from + WINDOW_S).length
    notes.push(
      `Stalled seconds (more than ${STALL_IN_FLIGHT} requests in flight while the machine's CPU was under half its median ` +
        `of ${fmt(medianBusy / 10)} % of a core): ${stalled.length}` +
        (stalled.length
          ? ` (at ${stalled.map((i) => `${fmt((i + 1) / 60, 1)} min`).join(', ')}); ${inWindow(windowStarts.second)} in the second window, ` +
            `${inWindow(windowStarts.last)} in the last`
          : '') +
        '.',
    )
    const apiEldFloor = 10
    notes.push(
      `The event-loop delay is prom-client's \`nodejs_eventloop_lag_p99_seconds\` (perf_hooks' monitorEventLoopDelay ` +
        `at its default ${apiEldFloor} ms resolution, reset at every scrape), scraped once a second: it includes the ` +
        `${apiEldFloor} ms sampling interval (an idle loop reads about 10.1 ms). Above it, the API's loop was ` +
        `${fmt(second.apiEld - apiEldFloor, 2)} ms late at p99 in the second window and ${fmt(last.apiEld - apiEldFloor, 2)} ms in the last.`,
    )
    if (autovacuum === 'off')
      notes.push(
        `autovacuum is off on this PostgreSQL: the runner ran ANALYZE before the load and, once a minute during it, ` +
          `what autovacuum would have by its default thresholds (throttled as this server's autovacuum is: vacuum_cost_delay ${throttle.delay}, vacuum_cost_limit ${throttle.limit}): ` +
          `${maintained.vacuum} table vacuums and ${maintained.analyze} analyses in ${vacuums.length} rounds of ` +
          `${vacuums.length ? `${fmt(Math.min(...vacuums))}–${fmt(Math.max(...vacuums))} s` : 'none finished'}` +
          (maintainedTables.size
            ? `; by table, the seconds it took: ${[...maintainedTables]
                .sort(([, a], [, b]) => b.seconds - a.seconds)
                .map(
                  ([name, t]) =>
                    `${name} ${fmt(t.seconds, 1)} s (${t.vacuum} vacuums, ${t.analyze} analyses)`,
                )
                .join(', ')}`
            : '') +
          '.',
      )
    const errorRows = [...ops].flatMap(([op, s]) =>
      [...s.errorKinds].map(
        ([kind, e]) =>
          `| ${op} | ${kind} | ${e.count} | ${e.firstSecond + 1}–${e.lastSecond + 1} | \`${e.example.replace(/[`|\n]/g, "'")}\` |`,
      ),
    )
    if (errorRows.length)
      notes.push(
        `Errors by kind (status and error code; the seconds of the run they fell in; the first one's body):\n\n` +
          `| request | kind | count | seconds | first body |\n|---|---|---|---|---|\n${errorRows.join('\n')}`,
      )

    const block = report({
      info,
      settings,
      rate,
      rateNote,
      minutes,
      second,
      last,
      checks,
      ops,
      totals,
      lateness,
      end: { outboxDepth, failedAttempts, retryAttempts },
      notes,
      passed,
    })
    console.log(block)
    if (!values['no-readme'] && ranSeconds === DURATION_S) {
      writeReadme('soak', 'Soak: `bench/soak`', block)
      log('bench/README.md updated')
    }
    process.exitCode = passed ? 0 : 2
  } finally {
    await pool?.destroy().catch(() => {})
    await trace?.stop()
    for (const server of servers) await server.stop()
    await maintenance.end().catch(() => {})
    receiver.closeAllConnections()
    receiver.close()
    if (values['keep-database']) log(`kept database ${name}: drop it with DROP DATABASE ${name} WITH (FORCE)`)
    await database.close(Boolean(values['keep-database']))
  }
}

main().then(
  () => process.exit(),
  (error) => {
    console.error(error)
    process.exit(1)
  },
)

/**
 * Soak benchmark: the real API (`serve --role api`) and one worker (`serve --role worker`) under a fixed rate of
 * mixed traffic for --minutes, on a database of its own. Every second it records the requests done, the errors,
 * each request's latency, both processes' RSS, their event-loop delay (prom-client's
 * `nodejs_eventloop_lag_p99_seconds`, scraped from METRICS_PORT) and the webhook deliveries received.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:soak -- [flags; --help lists them]
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
 *
 * The parts: options.ts (the flags), traffic.ts (the merchants, the mix and the load loop), receiver.ts (the
 * webhook receiver), sampler.ts (each second's figures), maintenance.ts (the vacuum rounds where autovacuum is
 * off), report.ts (the verdict and the report), trace.ts (--trace). This file wires them.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { Pool } from 'undici'
import {
  benchDatabase,
  benchEnv,
  benchMerchant,
  fmt,
  freePort,
  machineTable,
  round,
  type Server,
  settledLoad,
  sleep,
  startService,
  writeResult,
} from '../lib.ts'
import { maintenance as maintenanceRounds } from './maintenance.ts'
import { soakOptions, USAGE } from './options.ts'
import { startReceiver } from './receiver.ts'
import { errorsNote, eventLoopNote, judge, maintenanceNote, report, stalledNote } from './report.ts'
import { aggregate, createSampler, type Second } from './sampler.ts'
import { PgTrace } from './trace.ts'
import { createShops, measureCreateThroughput, requestMaker, seedShops, startLoad } from './traffic.ts'

const options = soakOptions()
const { durationS: DURATION_S, minutes: MINUTES, merchants: MERCHANTS, compiled: COMPILED } = options
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const masterKey = randomBytes(32).toString('hex')
const log = (line: string) => process.stderr.write(`[bench:soak] ${line}\n`)

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
  if (options.help) {
    process.stdout.write(USAGE)
    return
  }
  if (!(Number.isInteger(MERCHANTS) && MERCHANTS >= 1))
    throw new Error('--merchants must be a whole number, 1 or more')
  if (!(DURATION_S > 0 && options.windowS > 0 && DURATION_S >= 2 * options.windowS))
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
  // --wal-compression: set on the run's database only (its connections compress the full-page images they write);
  // the server's other databases keep theirs.
  const { walCompression } = options
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

  const receiver = await startReceiver()

  try {
    const env = benchEnv(databaseUrl, masterKey)
    const shops = await createShops(env, MERCHANTS, receiver.url)
    await maintenance.connect()
    if (walCompression !== undefined)
      await maintenance.query(`ALTER DATABASE ${name} SET wal_compression = '${walCompression}'`)
    // --trace <file>: a CSV line per second, the runner's figures beside PostgreSQL's.
    if (options.trace) trace = new PgTrace(databaseUrl, options.trace)

    const apiMetricsPort = await freePort()
    const workerMetricsPort = await freePort()
    // --profile <dir>: both processes write a V8 CPU profile there when they stop.
    const profileArgs = options.profile ? ['--cpu-prof', `--cpu-prof-dir=${options.profile}`] : []
    const program = { source: !COMPILED, nodeArgs: profileArgs }
    const api = await startService('api', { ...env, METRICS_PORT: String(apiMetricsPort) }, program)
    servers.push(api)
    const worker = await startService('worker', { ...env, METRICS_PORT: String(workerMetricsPort) }, program)
    servers.push(worker)

    let rate: number
    let rateNote: string
    if (options.rate !== undefined) {
      rate = options.rate
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
      const fraction = Number(options.fraction)
      if (!(fraction > 0)) throw new Error(`--fraction must be a positive number: ${options.fraction}`)
      const { load } = await settledLoad('create throughput', options.maxLoad, options.loadWait, log, signal)
      signal.throwIfAborted()
      const measured = await measureCreateThroughput(api.base, { 'x-api-key': calibration.keys.test.secret })
      rate = Math.round(measured * fraction)
      rateNote = `${fraction} × the ${fmt(measured)} creates/s measured first: 20 s of autocannon at 50 connections, the 1-minute load ${fmt(load, 2)} at its start`
      log(`create throughput ${fmt(measured)} req/s: the soak runs at ${rate} req/s`)
    }
    if (!(rate > 0)) throw new Error(`no rate to run at: ${rate}`)
    signal.throwIfAborted()

    // What the requests draw from: created transactions (gets), pending ones (paid), paid ones (refunds).
    pool = new Pool(api.base, { connections: options.connections, pipelining: 1, keepAliveTimeout: 60_000 })
    const http = pool
    const requests = requestMaker(shops, options.mix)
    await seedShops(http, shops, requests.createBody, signal)
    if (autovacuum === 'off') await maintenance.query('ANALYZE')

    // The seeded transactions' deliveries are not the run's.
    await sleep(1000)
    signal.throwIfAborted()
    receiver.take()
    const load = startLoad({
      http,
      make: requests.make,
      mix: options.mix,
      rate,
      rampSeconds: options.rampSeconds,
      durationS: DURATION_S,
      maxInFlight: options.maxInFlight,
    })
    const { start, seconds, ops, totals, lateness } = load

    // The sampler: once a second, both processes' RSS and metrics, and the receiver's count.
    let sampled = 0
    const sampler = createSampler({
      apiPid: api.child.pid as number,
      workerPid: worker.child.pid as number,
      apiMetricsPort,
      workerMetricsPort,
      takeDeliveries: receiver.take,
      inFlight: () => load.inFlight,
    })
    const rounds = maintenanceRounds(maintenance, throttle, log, () => sampled)

    log(`soak: ${MINUTES} min at ${rate} req/s (${options.mix.join(', ')})`)
    await trace?.start()
    while (sampled < DURATION_S && !signal.aborted) {
      const next = start + (sampled + 1) * 1000
      await sleep(Math.max(0, next - performance.now()))
      const s = seconds[sampled] as Second
      await sampler.sample(s)
      totals.deliveries += s.deliveries
      if (trace) {
        const m = aggregate([s])
        await trace.write({ ...s, second: sampled + 1, p50: m.p50, p99: m.p99 })
      }
      sampled++
      if (autovacuum === 'off' && sampled % 60 === 0) void rounds.round()
      if (sampled % 60 === 0 || sampled === DURATION_S) {
        const m = aggregate(seconds.slice(Math.max(0, sampled - 60), sampled))
        log(
          `${round(sampled / 60, 2)} min: ${fmt(m.rps)} req/s, errors ${m.errors}, p50 ${fmt(m.p50, 2)} ms, ` +
            `p99 ${fmt(m.p99, 2)} ms, API RSS ${fmt(m.apiRss)} MiB, worker RSS ${fmt(m.workerRss)} MiB, ` +
            `API event loop p99 ${fmt(m.apiEld, 2)} ms, ${fmt(m.deliveries)} deliveries/s, in flight ${load.inFlight}, ` +
            `CPU: API ${fmt(m.apiCpu / 10)} % (${fmt(m.apiCpuPerRequest, 3)} ms a request), worker ${fmt(m.workerCpu / 10)} %, runner ${fmt(m.runnerCpu / 10)} %, ` +
            `PostgreSQL ${fmt(m.pgCpu / 10)} %, machine ${fmt(m.machineCpu / 10)} % (of one core)`,
        )
      }
    }
    load.stop()
    const ranSeconds = sampled
    // The answers still due, then the outbox's last deliveries.
    const drainUntil = Date.now() + 30_000
    while (load.inFlight > 0 && Date.now() < drainUntil) await sleep(50)
    const outboxDepth = await sampler.outboxDrained()
    totals.deliveries += receiver.take()
    while (rounds.running) await sleep(100)
    if (load.inFlight > 0) {
      totals.errors += load.inFlight
      notes.push(`${load.inFlight} requests had no answer 30 s after the load ended: counted as errors.`)
    }

    // Only the seconds that ran (all of them unless interrupted).
    const ran = seconds.slice(0, ranSeconds)
    if (ranSeconds < DURATION_S) notes.push(`Interrupted after ${ranSeconds} s of ${DURATION_S}.`)
    const { minutes, windowStarts, second, last, checks, passed } = judge(ran, options, totals.errors)
    notes.push(stalledNote(ran, options.windowS, windowStarts))
    notes.push(eventLoopNote(second, last))
    if (autovacuum === 'off') notes.push(maintenanceNote(rounds, throttle))
    const errors = errorsNote(ops)
    if (errors) notes.push(errors)

    const block = report({
      options,
      info,
      rate,
      rateNote,
      minutes,
      second,
      last,
      checks,
      ops,
      totals,
      lateness,
      end: { outboxDepth, failedAttempts: sampler.attempts.failed, retryAttempts: sampler.attempts.retry },
      notes,
      passed,
    })
    const more: [string, string][] = [
      ['PostgreSQL settings', settings.join(', ')],
      ['server', COMPILED ? 'compiled (`node dist/main.js`)' : 'from the sources (tsx)'],
    ]
    // A run cut short is printed, not recorded.
    console.log(
      ranSeconds === DURATION_S
        ? writeResult('soak', info, block, more)
        : `${machineTable(info, more)}\n\n${block}`,
    )
    process.exitCode = passed ? 0 : 2
  } finally {
    await pool?.destroy().catch(() => {})
    await trace?.stop()
    for (const server of servers) await server.stop()
    await maintenance.end().catch(() => {})
    receiver.close()
    if (options.keepDatabase) log(`kept database ${name}: drop it with DROP DATABASE ${name} WITH (FORCE)`)
    await database.close(options.keepDatabase)
  }
}

main().then(
  () => process.exit(),
  (error) => {
    console.error(error)
    process.exit(1)
  },
)

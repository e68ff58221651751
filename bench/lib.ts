/**
 * What the benchmarks share: the machine they ran on, the record of each run (bench/results/), the server under
 * test, its memory, the create request and a load run of it, seeded rows.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { loadavg, totalmem } from 'node:os'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import pg from 'pg'
import { createServices, type Services } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { connectPostgres, migrateToLatest } from '../src/db/index.ts'
import { freePort } from '../test/helpers/program.ts'

/** A port nobody listens on right now: the tests' own helper. */
export { freePort }

/**
 * The command line of a bench, each option named with its default: a string default makes a string option, a
 * boolean one a flag. Unknown options are an error, as with `parseArgs`.
 */
export function benchOptions<const Defaults extends Record<string, string | boolean>>(
  defaults: Defaults,
): { [Name in keyof Defaults]: Defaults[Name] extends boolean ? boolean : string } {
  const options = Object.fromEntries(
    Object.entries(defaults).map(([name, value]) => [
      name,
      typeof value === 'boolean'
        ? { type: 'boolean' as const, default: value }
        : { type: 'string' as const, default: value },
    ]),
  )
  return parseArgs({ options }).values as never
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits
/** A figure for a report: thousands separated, at most `digits` decimals, a dash when there is none. */
export const fmt = (n: number, digits = 1) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits }) : '—'

/**
 * Waits (polling every 15 s, up to `waitS` seconds) for the 1-minute load to be at most `maxLoad`, so a
 * measurement does not start while an earlier build or run still holds the cores.
 */
export async function settledLoad(
  what: string,
  maxLoad: number,
  waitS: number,
  log: (line: string) => void,
  /** Looked at before every 15 s wait: once aborted (a signal to the runner), the wait ends as not settled. */
  signal?: AbortSignal,
): Promise<{ load: number; waitedS: number; settled: boolean }> {
  const started = Date.now()
  for (;;) {
    const load = loadavg()[0] ?? 0
    const waitedS = Math.round((Date.now() - started) / 1000)
    if (load <= maxLoad) return { load: round(load, 2), waitedS, settled: true }
    if (signal?.aborted) return { load: round(load, 2), waitedS, settled: false }
    if (waitedS >= waitS) {
      log(`${what}: load ${load.toFixed(2)} still above ${maxLoad} after ${waitedS} s: running anyway`)
      return { load: round(load, 2), waitedS, settled: false }
    }
    log(`${what}: 1-minute load ${load.toFixed(2)} > ${maxLoad}, waiting 15 s`)
    await sleep(15_000)
  }
}

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' }).trim()
/** A command's output, or null where it fails (no git, say, or not a checkout). */
const shOrNull = (cmd: string, args: string[]) => {
  try {
    return sh(cmd, args)
  } catch {
    return null
  }
}

/** The commit measured, from `git rev-parse --short HEAD`, marked where src/ has changes of its own. */
function commitMeasured(): string {
  const head = shOrNull('git', ['rev-parse', '--short', 'HEAD'])
  if (!head) return 'unknown (not a git checkout)'
  return `${head}${shOrNull('git', ['status', '--porcelain', 'src']) ? ' (src/ modified)' : ''}`
}

/** The machine a run is on, PostgreSQL's version and autovacuum, the commit, and when the run started (UTC). */
export function machine(pgVersion: string, autovacuum: string) {
  const cpuModel = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown'
  const startedAt = new Date().toISOString()
  return {
    nproc: sh('nproc', []),
    memoryGiB: round(totalmem() / 2 ** 30),
    cpu: cpuModel.trim(),
    node: process.version,
    postgres: pgVersion,
    autovacuum,
    commit: commitMeasured(),
    date: startedAt.slice(0, 10),
    startedAt,
  }
}

export type Machine = ReturnType<typeof machine>

/** The machine as a table: CPU, cores, memory, Node.js, PostgreSQL, the commit, then `more` rows. */
export function machineTable(info: Machine, more: [string, string][] = []): string {
  const rows: [string, string][] = [
    ['CPU (/proc/cpuinfo)', info.cpu],
    ['cores (`nproc`)', info.nproc],
    ['memory', `${info.memoryGiB} GiB`],
    ['Node.js', info.node],
    ['PostgreSQL', `${info.postgres}, autovacuum ${info.autovacuum}`],
    ...more,
    ['commit measured', info.commit],
  ]
  return ['| machine | |', '|---|---|', ...rows.map(([what, value]) => `| ${what} | ${value} |`)].join('\n')
}

/** The command line that ran this runner, as `npm run bench:<name> -- …`. */
function commandLine(bench: string): string {
  const args = process.argv
    .slice(2)
    .map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`))
  return `npm run bench:${bench}${args.length ? ` -- ${args.join(' ')}` : ''}`
}

/** Where the runners record their runs, one file a run. */
const RESULTS = new URL('./results/', import.meta.url)

/**
 * Records a completed run in bench/results/<YYYY-MM-DD>T<HHMM>-<bench>.md (the run's start, UTC; `-2`, `-3` …
 * after it when that name is taken): the command, the machine (with `more` rows) and the report. Returns the
 * file's text, for the runner to print. A file that cannot be written is said on stderr; the text is returned.
 */
export function writeResult(bench: string, info: Machine, report: string, more: [string, string][] = []) {
  const started = info.startedAt
  const text = [
    `# bench:${bench}, ${started.slice(0, 10)} ${started.slice(11, 16)} UTC`,
    '',
    `\`${commandLine(bench)}\``,
    '',
    machineTable(info, more),
    '',
    report.trimEnd(),
    '',
  ].join('\n')
  const stem = `${started.slice(0, 10)}T${started.slice(11, 13)}${started.slice(14, 16)}-${bench}`
  try {
    mkdirSync(RESULTS, { recursive: true })
    for (let n = 1; ; n++) {
      const name = `${stem}${n === 1 ? '' : `-${n}`}.md`
      try {
        writeFileSync(new URL(name, RESULTS), text, { flag: 'wx' })
        process.stderr.write(`[bench:${bench}] recorded in bench/results/${name}\n`)
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
    }
  } catch (error) {
    process.stderr.write(
      `[bench:${bench}] could not record the run in bench/results/: ${error instanceof Error ? error.message : String(error)}\n`,
    )
  }
  return text
}

export interface Server {
  name: string
  child: ChildProcess
  base: string
  stop(): Promise<void>
}

export async function startServer(
  name: string,
  args: string[],
  env: Record<string, string>,
  healthPath: string,
  /** The port to listen on (one from freePort, say, when the server must know its own origin): a free one by default. */
  port?: number,
): Promise<Server> {
  port ??= await freePort()
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}`)
    try {
      if ((await fetch(`${base}${healthPath}`)).ok) break
    } catch {}
    if (Date.now() > deadline) throw new Error(`${name} did not start`)
    await sleep(100)
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return {
    name,
    child,
    base,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await Promise.race([exited, sleep(20_000)])
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    },
  }
}

const COLOURS = ['amber', 'blue', 'green', 'red', 'violet']

/**
 * The body of the `n`th `POST /integration/transactions` of a load (bench:api's create): its external id
 * `<tag>-<n>`, and a colour in its description, as the seeded rows have (search=violet matches a fifth of them).
 */
export const createBody = (tag: string, n: number) =>
  JSON.stringify({
    amount: 10000 + (n % 90000),
    currency: 'RUB',
    payment_method: 'card',
    external_id: `${tag}-${n}`,
    description: `Order ${n} ${COLOURS[n % COLOURS.length]} widget`,
  })

/** What a load run measured: requests answered, their rate, latencies in ms, answers other than 2xx. */
export interface LoadMeasured {
  requests: number
  rps: number
  p50: number
  p99: number
  max: number
  non2xx: number
}

/** autocannon at `connections` for `seconds`, each POST made by `next`; latencies from every answer. */
export async function loadRun(
  base: string,
  connections: number,
  seconds: number,
  next: () => { path: string; body: string; headers: Record<string, string> },
): Promise<LoadMeasured> {
  const latencies: number[] = []
  let non2xx = 0
  const instance = (
    autocannon as unknown as (o: autocannon.Options) => autocannon.Instance & Promise<autocannon.Result>
  )({
    url: base,
    connections,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => {
          const made = next()
          return {
            ...req,
            method: 'POST',
            path: made.path,
            body: made.body,
            headers: { 'content-type': 'application/json', ...made.headers },
          }
        },
      },
    ],
  })
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    latencies.push(ms)
    if (status < 200 || status > 299) non2xx++
  })
  const started = performance.now()
  await instance
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN
  return {
    requests: latencies.length,
    rps: round(latencies.length / elapsed),
    p50: round(at(0.5), 2),
    p99: round(at(0.99), 2),
    max: round(latencies.at(-1) ?? NaN, 2),
    non2xx,
  }
}

export const rssMiB = (pid: number): number => {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : 0
  } catch {
    return 0
  }
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}

/**
 * CPU seconds of every PostgreSQL process on the machine (other databases' work included), by pid; or of every
 * process named `comm` (`/proc/<pid>/comm`), HAProxy's, say.
 */
export function postgresCpuSeconds(comm = 'postgres'): Map<number, number> {
  const byPid = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm)
        byPid.set(Number(entry), cpuSeconds(Number(entry)))
    } catch {}
  }
  return byPid
}

/** What PostgreSQL processes used between two snapshots; a process that ended meanwhile is not counted. */
export const postgresCpuSince = (
  before: Map<number, number>,
  now: Map<number, number> = postgresCpuSeconds(),
): number => {
  let total = 0
  for (const [pid, seconds] of now) total += seconds - (before.get(pid) ?? 0)
  return total
}

/**
 * The machine's busy CPU seconds so far over all its cores (`/proc/stat`: every state but idle and iowait).
 */
export function machineBusySeconds(): number {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number)
  const all = fields.reduce((a, b) => a + b, 0)
  return (all - (fields[3] ?? 0) - (fields[4] ?? 0)) / 100
}

/** Samples a process's VmRSS every `intervalMs` until stopped: the peak in MiB. */
export function sampleRss(pid: number, intervalMs = 100) {
  let peak = rssMiB(pid)
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMiB(pid))
  }, intervalMs)
  return {
    stop: () => {
      clearInterval(timer)
      return round(Math.max(peak, rssMiB(pid)))
    },
  }
}

/**
 * `rows` transactions of one merchant and mode in one INSERT … SELECT generate_series, one second apart
 * and older than anything created through the API: 40 % paid, 40 % expired, 10 % failed, 10 % pending; the
 * description names one of five colours (search for one matches a fifth of the rows). The secondary indexes
 * are dropped for the load and made again from their own definitions, as a bulk load does. `log` hears of the
 * start and the seconds it took.
 */
export async function seedTransactions(
  client: pg.Client,
  merchantUuid: string,
  rows: number,
  log?: (line: string) => void,
) {
  log?.(`seeding ${rows.toLocaleString('en-US')} transactions`)
  const started = performance.now()
  await client.query("SET maintenance_work_mem = '512MB'")
  await client.query('SET synchronous_commit = off')
  const { rows: indexes } = await client.query<{ indexname: string; indexdef: string }>(
    `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'transactions'
       AND indexname NOT IN (SELECT conname FROM pg_constraint)`,
  )
  for (const index of indexes) await client.query(`DROP INDEX ${pg.escapeIdentifier(index.indexname)}`)
  await client.query(
    `INSERT INTO transactions (uuid, merchant_uuid, mode, type, external_id, amount, gross_amount, net_amount,
       fee_amount, fee_bps, fee_payer, merchant_fee_share_bps, merchant_fee_merchant_amount,
       merchant_fee_customer_amount, currency, settlement_currency, settlement_amount, fx_rate,
       fx_rate_updated_at, payment_method, status, description, metadata, callback_url, success_url, fail_url,
       payment_token, requisites, requisite_uuid, expires_at, paid_at, settle_available_at, settled_at,
       aggregate_version, created_at, updated_at)
     SELECT gen_random_uuid(), $1::uuid, 'test', 'payment', 'seed-' || i, a, a, a - a * 250 / 10000, a * 250 / 10000,
       250, 'merchant', 10000, a * 250 / 10000, 0, 'RUB', 'USDT', (a - a * 250 / 10000) * 10000 / 9215, '92.15',
       t, 'card', s,
       'Order ' || i || ' ' || (ARRAY['amber', 'blue', 'green', 'red', 'violet'])[i % 5 + 1] || ' widget',
       NULL, NULL, NULL, NULL, md5(i::text || random()::text), NULL, NULL, t + interval '30 minutes',
       CASE WHEN s = 'paid' THEN t + interval '1 minute' END,
       CASE WHEN s = 'paid' THEN t + interval '1 minute' END,
       CASE WHEN s = 'paid' THEN t + interval '1 minute' END,
       CASE WHEN s = 'pending' THEN 1 ELSE 2 END, t, t
     FROM (
       SELECT i, 1000 + (i::bigint * 7919) % 10000000 AS a,
         date_trunc('second', now()) - interval '1 hour' - i * interval '1 second' AS t,
         CASE WHEN i % 10 < 4 THEN 'paid' WHEN i % 10 < 8 THEN 'expired' WHEN i % 10 = 8 THEN 'failed'
           ELSE 'pending' END AS s
       FROM generate_series(1, $2::int) AS i
     ) AS g`,
    [merchantUuid, rows],
  )
  for (const index of indexes) await client.query(index.indexdef)
  await client.query('VACUUM (ANALYZE) transactions')
  log?.(`seeded in ${round((performance.now() - started) / 1000)} s`)
}

/** seedTransactions on a connection of its own to the database at `databaseUrl`. */
export async function seedDatabase(
  databaseUrl: string,
  merchantUuid: string,
  rows: number,
  log: (line: string) => void,
) {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    await seedTransactions(client, merchantUuid, rows, log)
  } finally {
    await client.end()
  }
}

/**
 * A database of the benchmark's own on the PostgreSQL at `adminUrl`, and the machine it runs on (PostgreSQL's
 * version and autovacuum included); `drop` removes it.
 */
export async function benchDatabase(adminUrl: string, prefix: string) {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  const pgVersion = (await admin.query<{ v: string }>("SELECT split_part(version(), ' on ', 1) AS v")).rows[0]
    ?.v
  const autovacuum = (await admin.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]?.autovacuum
  const info = machine(pgVersion ?? '?', autovacuum ?? '?')
  // The server's settings that shape a long write load: its buffer cache, when checkpoints come and what
  // their full-page images cost, and how hard autovacuum is throttled.
  const settings = (
    await admin.query<{ line: string }>(
      `SELECT name || ' ' || current_setting(name) AS line
         FROM unnest(ARRAY['shared_buffers', 'max_wal_size', 'checkpoint_timeout', 'wal_compression',
                           'autovacuum_vacuum_cost_delay', 'autovacuum_vacuum_cost_limit']) AS name`,
    )
  ).rows.map((r) => r.line)
  // What an autovacuum worker's cost-based delay is: its own settings, or vacuum's where they are -1.
  const throttle = (
    await admin.query<{ delay: string; limit: string }>(
      `SELECT CASE WHEN current_setting('autovacuum_vacuum_cost_delay') IN ('-1', '-1ms')
                   THEN current_setting('vacuum_cost_delay') ELSE current_setting('autovacuum_vacuum_cost_delay') END AS delay,
              CASE WHEN current_setting('autovacuum_vacuum_cost_limit') = '-1'
                   THEN current_setting('vacuum_cost_limit') ELSE current_setting('autovacuum_vacuum_cost_limit') END AS limit`,
    )
  ).rows[0] ?? { delay: '2ms', limit: '200' }
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    info,
    autovacuum,
    settings,
    /** Autovacuum's cost-based delay on this server (vacuum_cost_delay and vacuum_cost_limit where it has -1). */
    autovacuumThrottle: throttle,
    async close(keep: boolean) {
      if (!keep) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    },
  }
}

/** The service's rate limit in a benchmark: raised out of the way. */
export const RATE_LIMIT = '1000000000'

/** The environment the service runs with in a benchmark: development, warnings only, the rate limit raised. */
export const benchEnv = (databaseUrl: string, masterKey: string): Record<string, string> => ({
  APP_ENV: 'development',
  DATABASE_URL: databaseUrl,
  MASTER_KEY: masterKey,
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_SECOND: RATE_LIMIT,
  RATE_LIMIT_BURST: RATE_LIMIT,
})

/**
 * The node arguments of `serve --role <role>`: the production build (`dist/main.js`, made by `npm run build`),
 * or the sources through tsx with `source`. `nodeArgs` (a profiler, an `--import`) come first.
 */
export const serveArgs = (
  role: 'api' | 'worker',
  options: { source?: boolean; nodeArgs?: string[] } = {},
) => {
  const nodeArgs = [...START_NODE_FLAGS, ...(options.nodeArgs ?? [])]
  return options.source
    ? ['--import', 'tsx', ...nodeArgs, 'src/main.ts', 'serve', '--role', role]
    : [...nodeArgs, 'dist/main.js', 'serve', '--role', role]
}

/**
 * `serve --role <role>` (serveArgs), started and answering: the API on its health route; a worker, which serves
 * no HTTP but its metrics, on /metrics at `env.METRICS_PORT` (given to startServer as the port only to wait on).
 */
export const startService = (
  role: 'api' | 'worker',
  env: Record<string, string>,
  options: { source?: boolean; nodeArgs?: string[] } = {},
) =>
  role === 'api'
    ? startServer('API', serveArgs('api', options), env, '/integration/health')
    : startServer('worker', serveArgs('worker', options), env, '/metrics', Number(env.METRICS_PORT))

/** The V8 flags `npm start` gives the server (package.json's start script): a benchmark runs it the same way. */
export const START_NODE_FLAGS: string[] = (() => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    scripts: { start: string }
  }
  const flags = /^node((?: --[\w-]+=\S+)*) dist\/main\.js serve$/.exec(pkg.scripts.start)
  if (!flags)
    throw new Error(`package.json's start script is not "node [--flag=value ...] dist/main.js serve"`)
  return (flags[1] ?? '').trim().split(' ').filter(Boolean)
})()

type CreatedMerchant = Awaited<ReturnType<Services['merchants']['createMerchant']>>

/**
 * Migrates the benchmark's database and makes its merchant: the RUB rate, and a card fee of 2.5 % paid by the
 * merchant. `more` configures it further (a webhook URL, say) before the services close.
 */
export async function benchMerchant(
  env: Record<string, string>,
  name: string,
  more?: (services: Services, created: CreatedMerchant) => Promise<void>,
): Promise<CreatedMerchant> {
  const handle = await connectPostgres(env.DATABASE_URL as string, 2)
  try {
    await migrateToLatest(handle.db)
    const services = createServices(handle.db, loadConfig(env))
    try {
      await services.rates.setMarketRate('RUB', '92.15')
      const created = await services.merchants.createMerchant({ name })
      await services.merchants.setFee(created.merchant.uuid, 'card', 250, 10000)
      await more?.(services, created)
      return created
    } finally {
      await services.close()
    }
  } finally {
    await handle.close()
  }
}

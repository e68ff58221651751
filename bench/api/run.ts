/**
 * API benchmark: the real server (`serve --role api`) under autocannon, each endpoint next to a minimal
 * Fastify baseline (bench/baselines/server.ts) measured in the same run, on a database of its own.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:api -- \
 *     [--duration 20] [--warmup 3] [--connections 50] [--list-connections 10] [--rows 1000000] \
 *     [--only create,get,list] [--max-load 1.5] [--load-wait 600] [--profile] [--keep-database]
 *     [--node-flags='--trace-gc ...'] (V8 flags for the API, after npm start's)
 *     [--source]
 *
 * 1. create: POST /integration/transactions (X-Api-Key, a unique external_id per request) vs the baseline's
 *    validate-and-INSERT endpoint on `pg`, and on `postgres` (porsager) for the driver gap. The server's
 *    RSS is sampled from /proc every 100 ms through the API's create run (warm-up included): the peak.
 * 2. get: GET /integration/transactions/:uuid over 1,000 created rows vs the baseline's one-SELECT endpoint.
 * 3. list: seeds --rows transactions of the merchant in SQL, then GET /integration/transactions first page
 *    vs a page after all but the last 1,000 rows (a keyset cursor built from the row there), unfiltered,
 *    with status=paid and with search.
 *
 * Before each measured run the 1-minute load average is polled every 15 s until it is at most --max-load
 * (for at most --load-wait seconds); the load at the start of the run is reported with its figures.
 * It prints its report and records it in bench/results/<date>T<time>-api.md (bench/lib.ts, writeResult).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { encodeCursor, filterDigest } from '../../src/http/pagination.ts'
import {
  benchDatabase,
  benchEnv,
  benchMerchant,
  benchOptions,
  cpuSeconds,
  createBody as createRequestBody,
  fmt,
  postgresCpuSeconds,
  postgresCpuSince,
  RATE_LIMIT,
  round,
  rssMiB,
  type Server,
  sampleRss,
  seedTransactions,
  settledLoad,
  sleep,
  startServer,
  startService,
  writeResult,
} from '../lib.ts'

const values = benchOptions({
  duration: '20',
  warmup: '3',
  connections: '50',
  'list-connections': '10',
  rows: '1000000',
  only: 'create,get,list',
  'max-load': '1.5',
  'load-wait': '600',
  profile: false,
  'keep-database': false,
  source: false,
  'node-flags': '',
})
const DURATION = Number(values.duration)
const WARMUP = Number(values.warmup)
const CONNECTIONS = Number(values.connections)
const LIST_CONNECTIONS = Number(values['list-connections'])
const ROWS = Number(values.rows)
const ONLY = new Set((values.only ?? '').split(','))
const MAX_LOAD = Number(values['max-load'])
const LOAD_WAIT_S = Number(values['load-wait'])
const SEARCH = 'violet'
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const masterKey = randomBytes(32).toString('hex')

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
const log = (line: string) => process.stderr.write(`[bench:api] ${line}\n`)

// ---------------------------------------------------------------------------------------------- processes

// ---------------------------------------------------------------------------------------------- load runs

interface Target {
  server: Server
  connections: number
  /** One request, made anew for every request sent. */
  request: () => { method: 'GET' | 'POST'; path: string; body?: string }
  headers?: Record<string, string>
}

interface Measured {
  label: string
  server: string
  connections: number
  load: number
  loadSettled: boolean
  requests: number
  rps: number
  p50: number
  p90: number
  p99: number
  max: number
  non2xx: number
  errors: number
  serverCpuMsPerRequest: number
  postgresCpuMsPerRequest: number
  /** Checkpoints PostgreSQL began during the measured window. */
  checkpoints: number
}

function fire(target: Target, seconds: number, onLatency?: (ms: number, status: number) => void) {
  const instance = (
    autocannon as unknown as (o: autocannon.Options) => autocannon.Instance & Promise<autocannon.Result>
  )({
    url: target.server.base,
    connections: target.connections,
    duration: seconds,
    headers: { 'content-type': 'application/json', ...target.headers },
    requests: [
      {
        setupRequest: (req) => {
          const made = target.request()
          return { ...req, method: made.method, path: made.path, body: made.body }
        },
      },
    ],
  })
  if (onLatency)
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) =>
      onLatency(ms, status),
    )
  return instance.then((result) => result)
}

/** Monotonic microseconds, the clock V8's CPU profiles are stamped with. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

/**
 * The runner's own connection to the database. Each run starts right after a CHECKPOINT: the create runs
 * write about 250 MB of WAL each, and a checkpoint PostgreSQL starts for WAL volume (every ~530 MB at the
 * default max_wal_size) would otherwise fall into whichever server's window it happens to, with the full-page
 * images after it. From a checkpoint of its own each run writes its own first-touch images, and a timed one
 * (every checkpoint_timeout, 5 minutes by default) comes after a run shorter than that; the count of
 * checkpoints begun within the window shows whether one fell into it all the same.
 */
let control: pg.Client | undefined
let checkpointsQuery: string | undefined
async function checkpointsSoFar(): Promise<number> {
  if (!control) return 0
  if (checkpointsQuery === undefined) {
    const { rows } = await control.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")
    // PostgreSQL 17 moved the checkpointer's counts out of pg_stat_bgwriter.
    checkpointsQuery =
      Number(rows[0]?.v) >= 170000
        ? 'SELECT num_timed + num_requested AS n FROM pg_stat_checkpointer'
        : 'SELECT checkpoints_timed + checkpoints_req AS n FROM pg_stat_bgwriter'
  }
  return Number((await control.query<{ n: string }>(checkpointsQuery)).rows[0]?.n ?? 0)
}

async function measure(
  label: string,
  target: Target,
  hooks: { before?: () => Promise<void>; after?: () => Promise<void> } = {},
): Promise<Measured & { fromUs: number; toUs: number }> {
  const { load, settled } = await settledLoad(`${label} / ${target.server.name}`, MAX_LOAD, LOAD_WAIT_S, log)
  await control?.query('CHECKPOINT')
  const pid = target.server.child.pid as number
  await fire(target, WARMUP)
  const latencies: number[] = []
  let non2xx = 0
  await hooks.before?.()
  const checkpointsBefore = await checkpointsSoFar()
  const serverCpu = cpuSeconds(pid)
  const pgCpu = postgresCpuSeconds()
  const fromUs = monotonicUs()
  const started = performance.now()
  const result = await fire(target, DURATION, (ms, status) => {
    latencies.push(ms)
    if (status < 200 || status > 299) non2xx++
  })
  const seconds = (performance.now() - started) / 1000
  const toUs = monotonicUs()
  const serverCpuUsed = cpuSeconds(pid) - serverCpu
  const pgCpuUsed = postgresCpuSince(pgCpu)
  const checkpoints = (await checkpointsSoFar()) - checkpointsBefore
  await hooks.after?.()
  const requests = latencies.length
  const perRequest = (cpu: number) => round((cpu * 1000) / Math.max(1, requests), 3)
  latencies.sort((a, b) => a - b)
  const measured = {
    label,
    server: target.server.name,
    connections: target.connections,
    load,
    loadSettled: settled,
    requests,
    rps: round(requests / seconds),
    p50: round(percentile(latencies, 50), 2),
    p90: round(percentile(latencies, 90), 2),
    p99: round(percentile(latencies, 99), 2),
    max: round(latencies[latencies.length - 1] ?? Number.NaN, 2),
    non2xx,
    errors: result.errors + result.timeouts,
    serverCpuMsPerRequest: perRequest(serverCpuUsed),
    postgresCpuMsPerRequest: perRequest(pgCpuUsed),
    checkpoints,
    fromUs,
    toUs,
  }
  log(
    `${label} / ${target.server.name}: ${measured.rps} req/s, p50 ${measured.p50} ms, p99 ${measured.p99} ms, ` +
      `non-2xx ${non2xx}, errors ${measured.errors}, load at start ${load}, checkpoints in it ${checkpoints}`,
  )
  return measured
}

// ---------------------------------------------------------------------------------------------- seeding

/** A `next` cursor at the row `offset` places into the filtered list, as the API would have issued it. */
async function deepCursor(
  client: pg.Client,
  merchantUuid: string,
  where: string,
  filters: Record<string, string>,
): Promise<{ cursor: string; offset: number; total: number }> {
  const scope = `merchant_uuid = $1 AND mode = 'test'${where ? ` AND ${where}` : ''}`
  const { rows: counted } = await client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM transactions WHERE ${scope}`,
    [merchantUuid],
  )
  const total = counted[0]?.n ?? 0
  const offset = Math.max(0, total - 1000)
  const { rows } = await client.query<{ created_at: Date; uuid: string }>(
    `SELECT created_at, uuid FROM transactions WHERE ${scope}
     ORDER BY created_at DESC, uuid DESC OFFSET $2 LIMIT 1`,
    [merchantUuid, offset],
  )
  const row = rows[0]
  if (!row) throw new Error(`no row at offset ${offset}`)
  const cursor = encodeCursor(
    { direction: 'next', createdAt: row.created_at.toISOString(), uuid: row.uuid },
    filterDigest(filters),
  )
  return { cursor, offset, total }
}

// ---------------------------------------------------------------------------------------------- profile

/** Self time of a V8 .cpuprofile, by package or source file and by function. */
function summariseProfile(file: string, fromUs: number, toUs: number) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]
    startTime: number
    samples: number[]
    timeDeltas: number[]
  }
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  // Only the samples of the measured window: not start-up (module loading) nor shutdown.
  let at = profile.startTime
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0
    at += delta
    if (at >= fromUs && at <= toUs) self.set(id, (self.get(id) ?? 0) + delta)
  })
  const groups = new Map<string, number>()
  const functions = new Map<string, number>()
  let busy = 0
  for (const [id, us] of self) {
    const frame = byId.get(id)?.callFrame
    if (!frame || frame.functionName === '(idle)') continue
    busy += us
    const url = frame.url
    const group = !url
      ? frame.functionName || '(anonymous)'
      : url.startsWith('node:')
        ? 'node internals'
        : url.includes('/node_modules/')
          ? (/\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? url)
          : url.replace(/^.*\/(src|bench)\//, '$1/')
    groups.set(group, (groups.get(group) ?? 0) + us)
    const fn = `${frame.functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${frame.lineNumber + 1}`
    functions.set(fn, (functions.get(fn) ?? 0) + us)
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, ms: round(us / 1000), percent: round((100 * us) / busy) }))
  return { busyMs: round(busy / 1000), groups: top(groups, 15), functions: top(functions, 25) }
}

// ---------------------------------------------------------------------------------------------- report

interface Check {
  what: string
  measured: string
  ratio: number
  target: string
  met: boolean
}

function report(
  runs: Measured[],
  checks: Check[],
  rss: { idle: number; peak: number; hwm: number } | null,
  notes: string[],
): string {
  const lines: string[] = []
  lines.push(
    `Settings: ${DURATION} s measured after ${WARMUP} s of warm-up per run; ${CONNECTIONS} connections for create and get, ` +
      `${LIST_CONNECTIONS} for list; the API with \`LOG_LEVEL=warn\`, \`RATE_LIMIT_PER_SECOND=${RATE_LIMIT}\` and ` +
      `\`RATE_LIMIT_BURST=${RATE_LIMIT}\` (the limit raised out of the way), its default pool of 10 connections; ` +
      'the baselines with a pool of 10 too. Load generator, servers and PostgreSQL share the machine. Each run ' +
      'starts right after a CHECKPOINT (the last column counts the checkpoints PostgreSQL began within its window).',
  )
  lines.push('')
  lines.push(
    '| benchmark | server | conns | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | server CPU ms/req | PostgreSQL CPU ms/req | load at start | checkpoints in it |',
  )
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
  for (const r of runs) {
    lines.push(
      `| ${r.label} | ${r.server} | ${r.connections} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p90, 2)} | ${fmt(r.p99, 2)} | ` +
        `${fmt(r.max, 1)} | ${r.non2xx + r.errors} | ${fmt(r.serverCpuMsPerRequest, 3)} | ${fmt(r.postgresCpuMsPerRequest, 3)} | ` +
        `${r.load.toFixed(2)}${r.loadSettled ? '' : ' (did not settle)'} | ${r.checkpoints} |`,
    )
  }
  lines.push('')
  lines.push('| target | measured | ratio | target ratio | met |')
  lines.push('|---|---|---|---|---|')
  for (const c of checks)
    lines.push(
      `| ${c.what} | ${c.measured} | ${c.ratio.toFixed(2)} × | ${c.target} | ${c.met ? 'yes' : '**no**'} |`,
    )
  if (rss) {
    lines.push('')
    lines.push(
      `Server RSS: ${fmt(rss.idle)} MiB idle before the create run, peak ${fmt(rss.peak)} MiB sampled every 100 ms ` +
        `during it (VmHWM after it: ${fmt(rss.hwm)} MiB).`,
    )
  }
  for (const note of notes) {
    lines.push('')
    lines.push(note)
  }
  return lines.join('\n')
}

// ---------------------------------------------------------------------------------------------- main

async function main() {
  const database = await benchDatabase(adminUrl, 'mg_bench_api')
  const { name, info, autovacuum } = database
  const databaseUrl = database.url
  const client = new pg.Client({ connectionString: databaseUrl })
  client.on('error', () => {})
  const servers: Server[] = []
  const runs: Measured[] = []
  const checks: Check[] = []
  const notes: string[] = []
  let rss: { idle: number; peak: number; hwm: number } | null = null
  const profileDir = mkdtempSync(join(tmpdir(), 'bench-api-prof-'))
  if (autovacuum === 'off')
    notes.push(
      'autovacuum is off on this PostgreSQL: the runner runs ANALYZE on both tables after the create runs ' +
        '(and VACUUM ANALYZE after seeding), as autovacuum would have.',
    )
  log(`database ${name}`)

  try {
    // Schema, a merchant with a card fee, the RUB rate, and the baseline's table.
    const env = benchEnv(databaseUrl, masterKey)
    const { merchant, keys } = await benchMerchant(env, 'Bench')
    await client.connect()
    control = client
    await client.query('CREATE TABLE baseline_transactions (LIKE transactions INCLUDING ALL)')
    const apiKey = { 'x-api-key': keys.test.secret }

    // The API as production runs it, compiled (`npm run build`), unless --source asks for tsx.
    const nodeFlags = (values['node-flags'] ?? '').split(' ').filter(Boolean)
    const startApi = (nodeArgs: string[] = [], extraEnv: Record<string, string> = {}) =>
      startService(
        'api',
        { ...env, ...extraEnv },
        { source: values.source, nodeArgs: [...nodeFlags, ...nodeArgs] },
      )
    const startBaseline = (driver: 'pg' | 'postgres') =>
      startServer(
        `baseline (${driver})`,
        ['--import', 'tsx', 'bench/baselines/server.ts'],
        { DATABASE_URL: databaseUrl, DRIVER: driver, POOL_SIZE: '10', BASELINE_MERCHANT_UUID: merchant.uuid },
        '/baseline/health',
      )
    let api = await startApi()
    servers.push(api)
    const basePg = await startBaseline('pg')
    servers.push(basePg)
    const basePostgres = await startBaseline('postgres')
    servers.push(basePostgres)

    let seq = 0
    const createBody = (tag: string) => createRequestBody(tag, seq++)
    const runTag = randomBytes(3).toString('hex')
    const createOn = (server: Server, path: string, headers?: Record<string, string>): Target => ({
      server,
      connections: CONNECTIONS,
      headers,
      request: () => ({ method: 'POST', path, body: createBody(`b${runTag}`) }),
    })

    const driverGap = (kind: string, porsager: Measured, base: Measured): Check => ({
      what: `driver gap (information): baseline postgres vs baseline pg, ${kind}`,
      measured: `${fmt(porsager.rps)} vs ${fmt(base.rps)} req/s`,
      ratio: porsager.rps / base.rps,
      target: '—',
      met: true,
    })
    const ratioCheck = (what: string, app: Measured, base: Measured, min: number): Check => ({
      what,
      measured: `${fmt(app.rps)} vs ${fmt(base.rps)} req/s`,
      ratio: app.rps / base.rps,
      target: `≥ ${min} ×`,
      met: app.rps / base.rps >= min && app.non2xx + app.errors === 0,
    })

    if (ONLY.has('create')) {
      const base = await measure('create', createOn(basePg, '/baseline/transactions'))
      runs.push(base)
      const pid = api.child.pid as number
      const idle = round(rssMiB(pid))
      const sampler = sampleRss(pid)
      const app = await measure('create', createOn(api, '/integration/transactions', apiKey))
      const peak = sampler.stop()
      const hwm =
        Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
      rss = { idle, peak, hwm: round(hwm) }
      runs.push(app)
      const porsager = await measure('create', createOn(basePostgres, '/baseline/transactions'))
      runs.push(porsager)
      checks.push(ratioCheck('create: API req/s vs baseline (postgres)', app, porsager, 0.7))
      checks.push({
        what: `create: API p99 vs baseline (postgres) p99 at ${CONNECTIONS} connections`,
        measured: `${fmt(app.p99, 2)} vs ${fmt(porsager.p99, 2)} ms`,
        ratio: app.p99 / porsager.p99,
        target: '≤ 1.5 ×',
        met: app.p99 <= 1.5 * porsager.p99,
      })
      checks.push({
        ...ratioCheck('create (information): API req/s vs baseline (pg)', app, base, 0),
        target: '—',
      })
      checks.push({
        what: `RSS: API peak during its create run (${values.source ? 'from the sources, tsx' : 'compiled'})`,
        measured: `${fmt(peak)} MiB = ${fmt(peak * 1.048576)} MB`,
        ratio: (peak * 1.048576) / 200,
        target: '≤ 1 × 200 MB',
        met: peak * 1.048576 <= 200,
      })
      checks.push(driverGap('create', porsager, base))
    }

    // This PostgreSQL may run with autovacuum off (the sandbox's does): analyze what the create runs wrote, as
    // autovacuum would have. A never-analyzed transactions table makes the get query pick a merchant-scoped
    // index and filter every row of the merchant for the uuid (about 10 ms of PostgreSQL per request here).
    await client.query('ANALYZE transactions')
    await client.query('ANALYZE baseline_transactions')
    // Rows to read: 1,000 of each table (50 more of each made here, in case the create run was left out).
    for (const [server, path, headers] of [
      [api, '/integration/transactions', apiKey],
      [basePg, '/baseline/transactions', undefined],
    ] as const) {
      for (let n = 0; n < 50; n++)
        await fetch(`${server.base}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: createBody(`g${runTag}`),
        })
    }
    const pick = async (table: string) =>
      (
        await client.query<{ uuid: string }>(`SELECT uuid FROM ${table} ORDER BY random() LIMIT 1000`)
      ).rows.map((r) => r.uuid)
    const appIds = await pick('transactions')
    const baseIds = await pick('baseline_transactions')
    let next = 0
    const getOn = (
      server: Server,
      path: string,
      ids: string[],
      headers?: Record<string, string>,
    ): Target => ({
      server,
      connections: CONNECTIONS,
      headers,
      request: () => ({ method: 'GET', path: `${path}/${ids[next++ % ids.length]}` }),
    })

    if (ONLY.has('get')) {
      const base = await measure('get', getOn(basePg, '/baseline/transactions', baseIds))
      const app = await measure('get', getOn(api, '/integration/transactions', appIds, apiKey))
      const porsager = await measure('get', getOn(basePostgres, '/baseline/transactions', baseIds))
      runs.push(base, app, porsager)
      checks.push(ratioCheck('get: API req/s vs baseline (postgres)', app, porsager, 1.0))
      checks.push({
        ...ratioCheck('get (information): API req/s vs baseline (pg)', app, base, 0),
        target: '—',
      })
      checks.push(driverGap('get', porsager, base))
    }

    if (values.profile) {
      // The API again, with a CPU profile and a count of its statements, under the create and get loads;
      // the profile is cut to each measured window.
      await api.stop()
      const countFile = join(profileDir, 'queries.json')
      api = await startApi(
        [
          '--cpu-prof',
          '--cpu-prof-dir',
          profileDir,
          // The statement counter is TypeScript: the compiled server loads it through tsx.
          ...(values.source ? [] : ['--import', 'tsx']),
          '--import',
          './bench/api/count-queries.ts',
        ],
        { BENCH_QUERY_COUNT_FILE: countFile },
      )
      servers.push(api)
      type Counts = { total: number; byStatement: Record<string, number> }
      const counts = async (): Promise<Counts> => {
        api.child.kill('SIGUSR2')
        await sleep(300)
        return JSON.parse(readFileSync(countFile, 'utf8')) as Counts
      }
      const windows: {
        label: string
        run: Measured & { fromUs: number; toUs: number }
        statements: Counts
      }[] = []
      for (const [label, target] of [
        ['create (profiled)', createOn(api, '/integration/transactions', apiKey)],
        ['get (profiled)', getOn(api, '/integration/transactions', appIds, apiKey)],
      ] as const) {
        let before: Counts = { total: 0, byStatement: {} }
        let after: Counts = before
        const run = await measure(label, target, {
          before: async () => {
            before = await counts()
          },
          after: async () => {
            after = await counts()
          },
        })
        const byStatement = Object.fromEntries(
          Object.entries(after.byStatement)
            .map(([k, v]) => [k, round((v - (before.byStatement[k] ?? 0)) / run.requests, 2)] as const)
            .filter(([, v]) => v > 0),
        )
        windows.push({
          label,
          run,
          statements: { total: round((after.total - before.total) / run.requests, 2), byStatement },
        })
      }
      await api.stop()
      const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'))
      for (const w of windows) {
        console.log(
          JSON.stringify(
            {
              profiled: w.label,
              rps: w.run.rps,
              p50: w.run.p50,
              p99: w.run.p99,
              requests: w.run.requests,
              server_cpu_ms_per_request: w.run.serverCpuMsPerRequest,
              statements_per_request: w.statements.total,
              statements_by_kind_per_request: w.statements.byStatement,
              cpu_profile: file ? summariseProfile(join(profileDir, file), w.run.fromUs, w.run.toUs) : null,
            },
            null,
            2,
          ),
        )
      }
      api = await startApi()
      servers.push(api)
    }

    if (ONLY.has('list')) {
      await seedTransactions(client, merchant.uuid, ROWS, log)
      const variants: { label: string; query: string; where: string; filters: Record<string, string> }[] = [
        { label: 'list', query: '', where: '', filters: {} },
        {
          label: 'list status=paid',
          query: 'status=paid',
          where: "status = 'paid'",
          filters: { status: 'paid' },
        },
        {
          label: `list search=${SEARCH}`,
          query: `search=${SEARCH}`,
          where: `(lower(external_id) LIKE '${SEARCH}%' OR lower(description) LIKE '%${SEARCH}%')`,
          filters: { search: SEARCH },
        },
      ]
      for (const v of variants) {
        const deep = await deepCursor(client, merchant.uuid, v.where, v.filters)
        const firstPath = `/integration/transactions${v.query ? `?${v.query}` : ''}`
        const deepPath = `/integration/transactions?${v.query ? `${v.query}&` : ''}cursor=${deep.cursor}`
        for (const path of [firstPath, deepPath]) {
          const res = await fetch(`${api.base}${path}`, { headers: apiKey })
          const body = (await res.json()) as { data?: unknown[] }
          if (res.status !== 200 || body.data?.length !== 25)
            throw new Error(`${path}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`)
        }
        const listOn = (path: string): Target => ({
          server: api,
          connections: LIST_CONNECTIONS,
          headers: apiKey,
          request: () => ({ method: 'GET', path }),
        })
        const first = await measure(`${v.label}: first page`, listOn(firstPath))
        const deepRun = await measure(
          `${v.label}: page after ${deep.offset.toLocaleString('en-US')} of ${deep.total.toLocaleString('en-US')}`,
          listOn(deepPath),
        )
        runs.push(first, deepRun)
        checks.push({
          what: `${v.label}: deep page p50 vs first page p50`,
          measured: `${fmt(deepRun.p50, 2)} vs ${fmt(first.p50, 2)} ms`,
          ratio: deepRun.p50 / first.p50,
          target: '≤ 1.5 ×',
          met: deepRun.p50 / first.p50 <= 1.5 && first.non2xx + deepRun.non2xx === 0,
        })
      }
    }
  } finally {
    await client.end().catch(() => {})
    for (const server of servers) await server.stop()
    if (values['keep-database']) log(`kept database ${name}: drop it with DROP DATABASE ${name} WITH (FORCE)`)
    await database.close(Boolean(values['keep-database']))
    rmSync(profileDir, { recursive: true, force: true })
  }

  console.log(writeResult('api', info, report(runs, checks, rss, notes)))
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})

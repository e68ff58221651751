/**
 * Replicated PostgreSQL benchmark: the create path (bench:api's `POST /integration/transactions`) on the
 * three-node Patroni cluster of deploy/ha/cluster.sh (through HAProxy; every COMMIT waits for a synchronous
 * standby) against a single PostgreSQL server, on the same machine in the same run.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:ha -- \
 *     [--rounds 3] [--duration 15] [--warmup 3] [--connections 50] [--commits 500] [--source]
 *
 * The cluster is started with `deploy/ha/cluster.sh start` in HA_DIR (default /tmp/merchant-gateway-bench-ha) on
 * the ports from HA_PORT_BASE (default 26400), and stopped at the end, on a failure or a signal too. With
 * HA_DATABASE_URL (a running cluster's `cluster.sh url`) the runner uses that cluster and leaves it running.
 *
 * Each round measures both servers, the order alternating from one round to the next. For each: a fresh database,
 * the API on it (`serve --role api`, its pool of 10), `--warmup` s of creates, then `--duration` s measured at
 * `--connections`: req/s, p50, p99, the CPU per request of the API, of every PostgreSQL process and of HAProxy,
 * and the writing transactions per create (the distinct `xmin` of every row in the database over the rows of
 * `transactions`: read-only transactions commit without a WAL flush and wait for no standby). Then, with the API stopped, on one connection to the same database: `--commits` times
 * in turn a `SELECT 1` (a round trip without a commit) and a one-row INSERT in its own transaction at
 * `synchronous_commit` on, local and off: what the standby's acknowledgement (on − local) and the local WAL flush
 * (local − off) add to a commit, and what HAProxy adds to a round trip.
 *
 * It prints its report and records it in bench/results/<date>T<time>-ha.md (bench/lib.ts, writeResult).
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import {
  benchDatabase,
  benchEnv,
  benchMerchant,
  benchOptions,
  cpuSeconds,
  createBody,
  fmt,
  type LoadMeasured,
  loadRun,
  type Machine,
  postgresCpuSeconds,
  postgresCpuSince,
  round,
  sleep,
  startService,
  writeResult,
} from '../lib.ts'

const values = benchOptions({
  rounds: '3',
  duration: '15',
  warmup: '3',
  connections: '50',
  commits: '500',
  source: false,
})
const ROUNDS = Number(values.rounds)
const DURATION = Number(values.duration)
const WARMUP = Number(values.warmup)
const CONNECTIONS = Number(values.connections)
const COMMITS = Number(values.commits)
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const masterKey = randomBytes(32).toString('hex')
const log = (line: string) => process.stderr.write(`[bench:ha] ${line}\n`)

const CLUSTER_SH = fileURLToPath(new URL('../../deploy/ha/cluster.sh', import.meta.url))
const clusterEnv = {
  ...process.env,
  HA_DIR: process.env.HA_DIR ?? '/tmp/merchant-gateway-bench-ha',
  HA_PORT_BASE: process.env.HA_PORT_BASE ?? '26400',
}
const cluster = (command: string) =>
  execFileSync('bash', [CLUSTER_SH, command], {
    env: clusterEnv,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim()

/** What a signal must end besides the runner's child processes: the database the API runs on. */
const running: { database?: Awaited<ReturnType<typeof benchDatabase>> } = {}

/** The runner's child processes, from /proc/<pid>/stat's parent pid. */
const childPids = () =>
  readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid
      } catch {
        return false
      }
    })
    .map(Number)

type ServerName = 'single' | 'cluster'
const SERVERS: ServerName[] = ['single', 'cluster']
/** What each setting of `synchronous_commit` the probe commits at. */
const MODES = ['on', 'local', 'off'] as const
type Probe = 'select 1' | `commit, ${(typeof MODES)[number]}`
const PROBES: Probe[] = ['select 1', ...MODES.map((mode) => `commit, ${mode}` as const)]

interface Run extends LoadMeasured {
  round: number
  server: ServerName
  load: number
  apiCpuMsPerRequest: number
  postgresCpuMsPerRequest: number
  haproxyCpuMsPerRequest: number
  writersPerCreate: number
  probes: Record<Probe, number[]>
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

/**
 * The transactions that wrote the database's rows (each row's `xmin`, distinct, over every table: a row updated
 * since counts its last writer only) for each row of `transactions`.
 */
async function writersPerCreate(client: pg.Client): Promise<number> {
  const { rows: tables } = await client.query<{ t: string }>(
    "SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname = 'public'",
  )
  const union = tables.map((r) => `SELECT xmin::text AS x FROM ${r.t}`).join(' UNION ALL ')
  const { rows } = await client.query<{ writers: string; creates: string }>(
    `SELECT (SELECT count(DISTINCT x) FROM (${union}) AS w) AS writers,
            (SELECT count(*) FROM transactions) AS creates`,
  )
  return Number(rows[0]?.writers) / Math.max(1, Number(rows[0]?.creates))
}

/**
 * On one connection, `COMMITS` times: a `SELECT 1`, then a one-row INSERT in its own transaction at each
 * `synchronous_commit` setting (each SET untimed); the milliseconds of each.
 */
async function probeCommits(client: pg.Client): Promise<Record<Probe, number[]>> {
  await client.query(
    'CREATE TABLE bench_commit_probe (id bigserial PRIMARY KEY, at timestamptz DEFAULT now())',
  )
  const probes = Object.fromEntries(PROBES.map((probe) => [probe, [] as number[]])) as Record<Probe, number[]>
  const timed = async (sql: string) => {
    const started = performance.now()
    await client.query(sql)
    return performance.now() - started
  }
  for (let i = -20; i < COMMITS; i++) {
    const select = await timed('SELECT 1')
    if (i >= 0) probes['select 1'].push(select)
    for (const mode of MODES) {
      await client.query(`SET synchronous_commit = ${mode}`)
      const commit = await timed('INSERT INTO bench_commit_probe DEFAULT VALUES')
      if (i >= 0) probes[`commit, ${mode}`].push(commit)
    }
  }
  await client.query('RESET synchronous_commit')
  return probes
}

/** The settings that shape a commit and a write load, as each server has them. */
const SETTINGS = [
  'server_version',
  'synchronous_commit',
  'synchronous_standby_names',
  'fsync',
  'wal_sync_method',
  'shared_buffers',
  'max_wal_size',
  'autovacuum',
]

async function settingsOf(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ v: string }>(
    'SELECT current_setting(name) AS v FROM unnest($1::text[]) WITH ORDINALITY AS s(name, n) ORDER BY n',
    [SETTINGS],
  )
  return rows.map((r) => r.v || '(empty)')
}

/** One server's run of a round: a fresh database, the API's create load on it, then the commit probe. */
async function measureServer(
  roundNo: number,
  server: ServerName,
  serverUrl: string,
  settings: Map<ServerName, string[]>,
): Promise<{ run: Run; info: Machine }> {
  const database = await benchDatabase(serverUrl, 'mg_bench_ha')
  running.database = database
  const client = new pg.Client({ connectionString: database.url })
  client.on('error', () => {})
  try {
    const env = benchEnv(database.url, masterKey)
    const { keys } = await benchMerchant(env, `Bench HA ${server}`)
    await client.connect()
    if (!settings.has(server)) settings.set(server, await settingsOf(client))
    const api = await startService('api', env, { source: values.source })
    const load = round(loadavg()[0] ?? 0, 2)
    let measured: {
      run: LoadMeasured
      cpu: Record<'api' | 'postgres' | 'haproxy', number>
    }
    try {
      const tag = `${server[0]}${roundNo}${randomBytes(3).toString('hex')}`
      let n = 0
      const create = () => ({
        path: '/integration/transactions',
        headers: { 'x-api-key': keys.test.secret },
        body: createBody(tag, n++),
      })
      await loadRun(api.base, CONNECTIONS, WARMUP, create)
      const pid = api.child.pid as number
      const apiCpu = cpuSeconds(pid)
      const pgCpu = postgresCpuSeconds()
      const haproxyCpu = postgresCpuSeconds('haproxy')
      const run = await loadRun(api.base, CONNECTIONS, DURATION, create)
      measured = {
        run,
        cpu: {
          api: cpuSeconds(pid) - apiCpu,
          postgres: postgresCpuSince(pgCpu),
          haproxy: postgresCpuSince(haproxyCpu, postgresCpuSeconds('haproxy')),
        },
      }
    } finally {
      await api.stop()
    }
    const { run, cpu } = measured
    const perRequest = (seconds: number) => round((seconds * 1000) / Math.max(1, run.requests), 3)
    log(`round ${roundNo}, ${server}: ${fmt(run.rps)} creates/s, p99 ${run.p99} ms; commit probe`)
    const writers = await writersPerCreate(client)
    const probes = await probeCommits(client)
    return {
      run: {
        ...run,
        round: roundNo,
        server,
        load,
        apiCpuMsPerRequest: perRequest(cpu.api),
        postgresCpuMsPerRequest: perRequest(cpu.postgres),
        haproxyCpuMsPerRequest: perRequest(cpu.haproxy),
        writersPerCreate: round(writers, 2),
        probes,
      },
      info: database.info,
    }
  } finally {
    await client.end().catch(() => {})
    await database.close(false)
    running.database = undefined
  }
}

function report(runs: Run[], settings: Map<ServerName, string[]>, clusterNote: string): string {
  const of = (server: ServerName) => runs.filter((r) => r.server === server)
  const avg = (server: ServerName, pick: (r: Run) => number) => mean(of(server).map(pick))
  const ratio = (pick: (r: Run) => number) => avg('cluster', pick) / avg('single', pick)
  const perRound = (pick: (r: Run) => number) =>
    Array.from({ length: ROUNDS }, (_, i) => {
      const [single, clustered] = SERVERS.map((s) => runs.find((r) => r.round === i + 1 && r.server === s))
      return single && clustered ? `${(pick(clustered) / pick(single)).toFixed(2)} ×` : '—'
    }).join(', ')
  const lines: string[] = [
    `Settings: ${ROUNDS} rounds; in each, both servers one after the other (the single server first in odd ` +
      `rounds, the cluster first in even ones), each on a fresh database with the API started on it ` +
      `(\`LOG_LEVEL=warn\`, the rate limit raised out of the way, its pool of 10), ${WARMUP} s of warm-up, then ` +
      `${DURATION} s of creates measured at ${CONNECTIONS} connections. ${clusterNote} Load generator, API, the ` +
      'single server and the three cluster members share the machine.',
    '',
    '| round | server | req/s | p50 ms | p99 ms | max ms | non-2xx | API CPU ms/req | PostgreSQL CPU ms/req | HAProxy CPU ms/req | writing transactions/create | load at start |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...runs.map(
      (r) =>
        `| ${r.round} | ${r.server} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.max, 1)} | ` +
        `${r.non2xx} | ${fmt(r.apiCpuMsPerRequest, 3)} | ${fmt(r.postgresCpuMsPerRequest, 3)} | ` +
        `${fmt(r.haproxyCpuMsPerRequest, 3)} | ${fmt(r.writersPerCreate, 2)} | ${fmt(r.load, 2)} |`,
    ),
    '',
    '| create, mean of the rounds | single | cluster | cluster / single | per round |',
    '|---|---|---|---|---|',
    ...(
      [
        ['req/s', (r: Run) => r.rps, 1],
        ['p99 ms', (r: Run) => r.p99, 2],
        ['PostgreSQL CPU ms/req', (r: Run) => r.postgresCpuMsPerRequest, 3],
      ] as const
    ).map(
      ([what, pick, digits]) =>
        `| ${what} | ${fmt(avg('single', pick), digits)} | ${fmt(avg('cluster', pick), digits)} | ` +
        `${ratio(pick).toFixed(2)} × | ${perRound(pick)} |`,
    ),
  ]
  const pooled = (server: ServerName, probe: Probe) => of(server).flatMap((r) => r.probes[probe])
  lines.push(
    '',
    `Commit latency: on one connection, with the API stopped, ${fmt(COMMITS, 0)} times a round in turn: \`SELECT 1\`, ` +
      'then a one-row INSERT in its own transaction at each `synchronous_commit` (all rounds pooled; ms from ' +
      'sending to the answer, in the runner).',
    '',
    '| statement | single p50 | mean | p99 | cluster p50 | mean | p99 |',
    '|---|---|---|---|---|---|---|',
    ...PROBES.map((probe) => {
      const cells = SERVERS.flatMap((server) => {
        const xs = pooled(server, probe)
        return [percentile(xs, 50), mean(xs), percentile(xs, 99)].map((x) => fmt(x, 3))
      })
      const what = probe === 'select 1' ? '`SELECT 1`' : `INSERT, \`synchronous_commit = ${probe.slice(8)}\``
      return `| ${what} | ${cells.join(' | ')} |`
    }),
  )
  // Each difference is taken within one turn of the probe (the two statements a few ms apart), then the median.
  const paired = (server: ServerName, a: Probe, b: Probe) => {
    const [xs, ys] = [pooled(server, a), pooled(server, b)]
    return percentile(
      xs.map((x, i) => x - (ys[i] ?? Number.NaN)),
      50,
    )
  }
  const standby = paired('cluster', 'commit, on', 'commit, local')
  const writers = avg('cluster', (r) => r.writersPerCreate)
  const median = (server: ServerName, probe: Probe) => percentile(pooled(server, probe), 50)
  lines.push(
    '',
    `What synchronous commit costs (medians of the differences within a turn): waiting for the standby adds ` +
      `${fmt(standby, 3)} ms to a commit (cluster, on − local), against a local WAL flush of ` +
      `${fmt(paired('cluster', 'commit, local', 'commit, off'), 3)} ms on the cluster's primary and ` +
      `${fmt(paired('single', 'commit, local', 'commit, off'), 3)} ms on the single server (local − off). HAProxy ` +
      `and the other server add ${fmt(median('cluster', 'select 1') - median('single', 'select 1'), 3)} ms to a ` +
      `round trip (\`SELECT 1\` p50, cluster − single). A commit at \`on\` takes ` +
      `${(median('cluster', 'commit, on') / median('single', 'commit, on')).toFixed(2)} × as long on the cluster ` +
      `(p50). Writing transactions per create: ${fmt(writers, 2)} (a read-only one commits nothing to wait for), so ` +
      `the standby adds about ${fmt(standby * writers, 2)} ms to a create's time in PostgreSQL.`,
    '',
    '| setting | single | cluster (primary) |',
    '|---|---|---|',
    ...SETTINGS.map(
      (name, i) =>
        `| \`${name}\` | ${settings.get('single')?.[i] ?? '?'} | ${settings.get('cluster')?.[i] ?? '?'} |`,
    ),
  )
  return lines.join('\n')
}

async function main() {
  let clusterUrl = process.env.HA_DATABASE_URL
  let started = false
  let clusterNote = 'The cluster: a running one (HA_DATABASE_URL).'
  const stop = () => {
    if (!started) return
    started = false
    log(`stopping the cluster in ${clusterEnv.HA_DIR}`)
    cluster('stop')
  }
  // On a signal: the runner's child processes (the API, started or starting) and the cluster at once, then the
  // single server's database.
  const onSignal = (signal: NodeJS.Signals) => {
    for (const pid of childPids()) process.kill(pid, 'SIGKILL')
    stop()
    void Promise.race([running.database?.close(false), sleep(5_000)]).finally(() =>
      process.exit(signal === 'SIGINT' ? 130 : 143),
    )
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  const runs: Run[] = []
  const settings = new Map<ServerName, string[]>()
  let info: Machine | undefined
  try {
    if (!clusterUrl) {
      if (existsSync(`${clusterEnv.HA_DIR}/ports`))
        throw new Error(
          `a cluster is already in ${clusterEnv.HA_DIR}: stop it, or name it with HA_DATABASE_URL`,
        )
      log(`starting the cluster in ${clusterEnv.HA_DIR} (ports from ${clusterEnv.HA_PORT_BASE})`)
      started = true
      const startedAt = performance.now()
      clusterUrl = cluster('start').split('\n').at(-1) as string
      clusterNote = `The cluster: \`deploy/ha/cluster.sh start\`, ready in ${round((performance.now() - startedAt) / 1000)} s, stopped after the run.`
    }
    const urls: Record<ServerName, string> = { single: adminUrl, cluster: clusterUrl }
    for (let r = 1; r <= ROUNDS; r++) {
      const order = r % 2 === 1 ? SERVERS : [...SERVERS].reverse()
      for (const server of order) {
        log(`round ${r} of ${ROUNDS}: ${server}`)
        const measured = await measureServer(r, server, urls[server], settings)
        runs.push(measured.run)
        if (server === 'single') info ??= measured.info
      }
    }
  } finally {
    stop()
  }
  if (!info) throw new Error('no run of the single server')
  console.log(
    writeResult('ha', info, report(runs, settings, clusterNote), [
      ['duration', `${DURATION} s per measurement after ${WARMUP} s of warm-up, ${CONNECTIONS} connections`],
      ['server', values.source ? 'sources (tsx)' : 'production build'],
    ]),
  )
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})

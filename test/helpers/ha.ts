import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { eventually } from './eventually.ts'
import { ROOT } from './program.ts'

const run = promisify(execFile)
const SCRIPT = join(ROOT, 'deploy/ha/cluster.sh')
/** The cluster's ports: etcd client and peer, three REST APIs, three PostgreSQL servers, HAProxy rw and ro. */
const PORTS = 10

export interface Member {
  name: string
  role: string
  state: string
}

/** A cluster that deploy/ha/cluster.sh started for a suite, in a directory and on ports of its own. */
export interface Cluster {
  /** The service's URL (the `gateway` role, through HAProxy's read-write port). */
  url: string
  /** The superuser's URL of one node, straight to its PostgreSQL. */
  nodeUrl(node: string): string
  /** How long `start` took, in ms. */
  startMs: number
  dir: string
  /** Runs a command of the script (`leader`, `node stop n2`, …): its output, trimmed. */
  run(...args: string[]): Promise<string>
  members(): Promise<Member[]>
  leader(): Promise<string>
  pid(node: string, what: 'patroni' | 'postgres'): Promise<number>
  /** Stops everything and removes the directory; how long it took, in ms. */
  stop(): Promise<number>
}

/** Fails, naming the package, unless the tools the cluster runs on are installed. */
export function assertHaTools(): void {
  for (const tool of ['patroni', 'etcd', 'haproxy']) {
    const found = execFileSync('sh', ['-c', `command -v ${tool} || true`])
      .toString()
      .trim()
    assert.ok(
      found,
      `${tool} is missing: apt-get install patroni etcd-server etcd-client haproxy (.ci/run does)`,
    )
  }
}

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })

/** A first port such that it and the PORTS − 1 after it are free. */
async function freePortRange(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 2_000) * 10
    const free = await Promise.all(Array.from({ length: PORTS }, (_, i) => portFree(base + i)))
    if (free.every(Boolean)) return base
  }
  throw new Error(`no ${PORTS} free ports in a row`)
}

export async function startCluster(): Promise<Cluster> {
  assertHaTools()
  const parent = mkdtempSync(join(tmpdir(), 'mg-ha-'))
  // PostgreSQL runs as another user when this is root: it must reach the directory.
  chmodSync(parent, 0o755)
  const dir = join(parent, 'cluster')
  const env = { ...process.env, HA_DIR: dir, HA_PORT_BASE: String(await freePortRange()) }
  const script = async (...args: string[]) =>
    (await run('bash', [SCRIPT, ...args], { env, timeout: 120_000 })).stdout.trim()
  const started = Date.now()
  const url = await script('start').catch(async (error: { stderr?: string }) => {
    await script('stop').catch(() => {})
    throw new Error(`the cluster did not start: ${error.stderr}`)
  })
  const startMs = Date.now() - started
  const settings = Object.fromEntries(
    readFileSync(join(dir, 'ports'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split('=') as [string, string]),
  )
  const members = async (): Promise<Member[]> =>
    (await script('members'))
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [name = '', role = '', state = ''] = line.split(' ')
        return { name, role, state }
      })
  return {
    url,
    dir,
    startMs,
    nodeUrl: (node) =>
      `postgres://postgres:${settings.SUPERUSER_PASSWORD}@127.0.0.1:${Number(settings.PG_BASE) + Number(node.slice(1)) - 1}/postgres`,
    run: script,
    members,
    leader: () => script('leader'),
    pid: async (node, what) => Number(await script('pid', node, what)),
    async stop() {
      const at = Date.now()
      await script('stop')
      rmSync(parent, { recursive: true, force: true })
      return Date.now() - at
    },
  }
}

/**
 * Waits until the cluster is whole again: three members running, one leader, a synchronous standby that streams.
 * The members as they then are.
 */
export async function untilWhole(cluster: Cluster, timeoutMs = 90_000): Promise<Member[]> {
  return eventually(
    async () => {
      const members = await cluster.members().catch(() => [])
      const running = members.filter((m) => m.state === 'running' || m.state === 'streaming')
      const whole =
        running.length === 3 &&
        members.filter((m) => m.role === 'leader').length === 1 &&
        members.some((m) => m.role === 'sync_standby')
      return whole ? members : null
    },
    timeoutMs,
    250,
  )
}

/**
 * Whether a write through `url` is acknowledged within `timeoutMs`: a row inserted, so its commit waits for the
 * synchronous standby as every write does. The session is dropped, never reused.
 */
export async function writeAcknowledged(url: string, timeoutMs = 1_000): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs })
  client.on('error', () => {})
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      (async () => {
        await client.connect()
        // A row written: a commit that wrote nothing else does not wait for a standby.
        await client.query('CREATE TABLE IF NOT EXISTS ha_probe (at timestamptz NOT NULL)')
        await client.query('INSERT INTO ha_probe VALUES (now())')
        return true
      })(),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs)
      }),
    ]).catch(() => false)
  } finally {
    clearTimeout(timer)
    // A session left waiting (on a standby that is not there) is closed from this side.
    ;(client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
    client.end().catch(() => {})
  }
}

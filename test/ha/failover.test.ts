import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { type Cluster, startCluster, untilWhole, writeAcknowledged } from '../helpers/ha.ts'
import {
  createTestContext,
  eventually,
  postgresUrlOf,
  serviceEnv,
  startReceiver,
  type TestContext,
  workerEnv,
} from '../helpers/harness.ts'
import { assertLedgerVerifies, assertRunning, request, untilHealthy } from '../helpers/processes.ts'
import { freePort, type Program, programEnv, ROOT, spawnProgram, stopProgram } from '../helpers/program.ts'

/**
 * The failover drill: the real program, two processes of it, on a three-node Patroni cluster behind HAProxy
 * (deploy/ha/cluster.sh), under the load of three client processes (drill-client.ts) that create payments, have
 * them paid, refund them and pay out, each request with an Idempotency-Key and retried on 503. In each case the
 * cluster loses something; then the clients drain and the drill checks that every request answered 2xx is in the
 * database, that no key made two objects, that `ledger verify` is clean, that every status change has its event
 * and every event was delivered, that no answer was a 500 and none took longer than the documented bound; and
 * prints the statuses the clients saw, the time without a writable primary and the time the service answered no
 * 2xx.
 *
 * By default (`npm test`): a switchover and a SIGKILL of the primary's postmaster, once each (about 2 minutes).
 * The whole drill, every case five times (about 25 minutes on a 2-core machine):
 *
 *   HA_DRILL=full node --import tsx --test test/ha/failover.test.ts
 *
 * HA_DRILL_ROUNDS and HA_DRILL_CASES (comma-separated) choose otherwise.
 */

const CASES = ['switchover', 'kill-primary', 'hung-leader', 'one-standby', 'both-standbys', 'etcd'] as const
type Case = (typeof CASES)[number]
const FULL = process.env.HA_DRILL === 'full'
const ROUNDS = Number(process.env.HA_DRILL_ROUNDS ?? (FULL ? 5 : 1))
const CHOSEN = (process.env.HA_DRILL_CASES?.split(',') ??
  (FULL ? [...CASES] : ['switchover', 'kill-primary'])) as Case[]
/** DATABASE_QUERY_TIMEOUT of the drill's processes, and the bound on any answer: the pool's wait (5 s) + it. */
const QUERY_TIMEOUT_S = 4
const ANSWER_BOUND_MS = 5_000 + QUERY_TIMEOUT_S * 1000 + 3_000
const CLIENTS = 3

interface Attempt {
  what: 'create' | 'paid' | 'refund' | 'payout'
  key: string
  status: number
  uuid: string | null
  code: string | null
  sent: number
  ms: number
}

interface Client {
  child: ChildProcess
  attempts: Attempt[]
  done: Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

describe(`failover drill on Patroni (${CHOSEN.join(', ')}; ${ROUNDS} round${ROUNDS === 1 ? '' : 's'})`, () => {
  let cluster: Cluster
  let ctx: TestContext
  let databaseUrl: string
  const gateways: { program: Program; base: string }[] = []
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  let secret: string
  const all: Attempt[] = []
  const figures: string[] = []

  const alive = () => {
    for (const [i, g] of gateways.entries()) assertRunning(g.program, `gateway ${i + 1}`)
  }

  function startClient(prefix: string): Client {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/ha/drill-client.ts'], {
      cwd: ROOT,
      env: programEnv({
        GATEWAYS: gateways.map((g) => g.base).join(','),
        API_KEY_ID: ctx.merchant.keys.test.key_id,
        API_SECRET: secret,
        PREFIX: prefix,
        WORKERS: '3',
        REQUEST_TIMEOUT_MS: String(ANSWER_BOUND_MS + 10_000),
      }),
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const attempts: Attempt[] = []
    let buffered = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      for (const line of lines) {
        const parsed = JSON.parse(line) as Attempt | { done: true }
        if (!('done' in parsed)) attempts.push(parsed)
      }
    })
    const done = new Promise<void>((resolve) => child.on('exit', () => resolve()))
    return { child, attempts, done }
  }

  const acknowledged = (attempts: Attempt[]) => attempts.filter((a) => a.status >= 200 && a.status < 300)

  /** Runs the clients through `fault` (which returns when the cluster is whole again); their attempts. */
  async function underLoad(prefix: string, fault: (clients: Client[]) => Promise<void>): Promise<Attempt[]> {
    const clients = Array.from({ length: CLIENTS }, (_, i) => startClient(`${prefix}-c${i}`))
    const attempts = () => clients.flatMap((c) => c.attempts)
    const summary = () => {
      const all = attempts()
      return `${all.length} attempts so far, the last: ${JSON.stringify(all.slice(-3))}`
    }
    try {
      await eventually(async () => acknowledged(attempts()).length >= 12, 60_000, 50).catch((error) => {
        throw new Error(`the clients got no answers: ${summary()}`, { cause: error })
      })
      await fault(clients)
      // Load after the recovery too: the service writes again, through every process.
      const before = acknowledged(attempts()).length
      await eventually(
        async () => {
          alive()
          return acknowledged(attempts()).length >= before + 12
        },
        60_000,
        50,
      ).catch((error) => {
        const output = gateways.map((g, i) => `gateway ${i + 1}:\n${g.program.output().slice(-3000)}`)
        throw new Error(`the service did not come back: ${summary()}\n${output.join('\n')}`, { cause: error })
      })
    } finally {
      for (const c of clients) c.child.kill('SIGTERM')
      await Promise.all(clients.map((c) => c.done))
    }
    return attempts()
  }

  /** Probes the cluster's read-write port every 100 ms while `work` runs: the longest time no write was acknowledged. */
  async function withoutPrimary<T>(work: () => Promise<T>): Promise<{ result: T; gapMs: number }> {
    let probing = true
    let last = Date.now()
    let gapMs = 0
    const probe = (async () => {
      while (probing) {
        const at = Date.now()
        if (await writeAcknowledged(cluster.url, 1_000)) {
          gapMs = Math.max(gapMs, Date.now() - last)
          last = Date.now()
        }
        await sleep(Math.max(0, 100 - (Date.now() - at)))
      }
    })()
    try {
      const result = await work()
      return { result, gapMs }
    } finally {
      probing = false
      await probe
    }
  }

  /** The longest time between two 2xx answers (by when each arrived) from `from` on. */
  function serviceGap(attempts: Attempt[], from: number): number {
    const ends = acknowledged(attempts)
      .map((a) => a.sent + a.ms)
      .filter((end) => end >= from - 1_000)
      .sort((a, b) => a - b)
    let gap = 0
    for (let i = 1; i < ends.length; i++) gap = Math.max(gap, (ends[i] as number) - (ends[i - 1] as number))
    return gap
  }

  const healthOf = async (base: string) => {
    const reply = await request(base, 'GET', '/integration/health', { timeoutMs: 5_000 }).catch(() => null)
    return reply ? { status: reply.status, database: reply.json().database as string } : null
  }

  /** Every acknowledged request is in the database, once; the books, the events and their deliveries hold. */
  async function assertConsistent(label: string, attempts: Attempt[]): Promise<string> {
    const statuses = new Map<number, number>()
    for (const a of attempts) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1)
    const seen = [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${n}×${s || 'none'}`)
      .join(' ')
    const bad = attempts.filter((a) => a.status === 0 || (a.status >= 500 && a.status !== 503))
    if (bad.length) {
      const logs = gateways.map((g, i) => `gateway ${i + 1}:\n${g.program.output().slice(-6000)}`)
      assert.fail(
        `${label}: ${bad.length} answers a 5xx other than 503, or none (${seen}):\n${logs.join('\n')}`,
      )
    }
    const slowest = Math.max(...attempts.map((a) => a.ms))
    assert.ok(
      slowest <= ANSWER_BOUND_MS,
      `${label}: an answer took ${slowest} ms (bound ${ANSWER_BOUND_MS} ms)`,
    )
    const refused = attempts.filter((a) => a.status >= 400 && a.status < 500)
    const otherRefusals = refused.filter(
      (a) => !(a.status === 409 && a.code === 'idempotency_request_in_progress'),
    )
    assert.deepEqual(otherRefusals, [], `${label}: refusals other than a key in progress`)

    // One object per key, the one every 2xx named.
    const byKey = new Map<string, Set<string>>()
    for (const a of acknowledged(attempts)) {
      const set = byKey.get(a.key) ?? new Set<string>()
      if (a.uuid) set.add(a.uuid)
      byKey.set(a.key, set)
    }
    let lost = 0
    let duplicated = 0
    const merchant = ctx.merchant.uuid
    const keys = [...byKey]
    const creates = keys.filter(([key]) => key.endsWith('-create'))
    const externalIds = creates.map(([key]) => key.slice(0, -'-create'.length))
    const rows = externalIds.length
      ? await ctx.db
          .selectFrom('transactions')
          .select(['uuid', 'external_id', 'status'])
          .where('merchant_uuid', '=', merchant)
          .where('external_id', 'in', externalIds)
          .execute()
      : []
    const payouts = await ctx.db
      .selectFrom('payouts')
      .select(['uuid', 'external_id'])
      .where('merchant_uuid', '=', merchant)
      .execute()
    const refunds = await ctx.db.selectFrom('refunds').select(['uuid', 'transaction_uuid']).execute()
    for (const [key, uuids] of keys) {
      if (uuids.size !== 1) duplicated++
      const uuid = [...uuids][0]
      const id = key.slice(0, key.lastIndexOf('-'))
      const kind = key.slice(key.lastIndexOf('-') + 1)
      const stored =
        kind === 'create'
          ? rows.filter((r) => r.external_id === id).map((r) => r.uuid)
          : kind === 'paid'
            ? rows.filter((r) => r.external_id === id && r.status !== 'pending').map((r) => r.uuid)
            : kind === 'refund'
              ? refunds
                  .filter((r) => r.transaction_uuid === rows.find((t) => t.external_id === id)?.uuid)
                  .map((r) => r.uuid)
              : payouts.filter((p) => p.external_id === `${id}-payout`).map((p) => p.uuid)
      if (!uuid || !stored.includes(uuid)) lost++
      if (stored.length > 1) duplicated++
    }
    assert.equal(lost, 0, `${label}: acknowledged but not stored`)
    assert.equal(duplicated, 0, `${label}: a key made two objects`)

    await assertLedgerVerifies(workerEnv(databaseUrl))

    // Every status change has its event: versions 2..aggregate_version, each once.
    const events = await ctx.db
      .selectFrom('events')
      .select(['aggregate_uuid', 'aggregate_version'])
      .where('merchant_uuid', '=', merchant)
      .execute()
    const versions = new Map<string, number[]>()
    for (const e of events)
      versions.set(e.aggregate_uuid, [...(versions.get(e.aggregate_uuid) ?? []), e.aggregate_version])
    const aggregates = [
      ...(await ctx.db
        .selectFrom('transactions')
        .select(['uuid', 'aggregate_version'])
        .where('merchant_uuid', '=', merchant)
        .execute()),
      ...(await ctx.db
        .selectFrom('payouts')
        .select(['uuid', 'aggregate_version'])
        .where('merchant_uuid', '=', merchant)
        .execute()),
    ]
    for (const row of aggregates) {
      const got = (versions.get(row.uuid) ?? []).sort((a, b) => a - b)
      const want = Array.from({ length: row.aggregate_version - 1 }, (_, i) => i + 2)
      assert.deepEqual(got, want, `${label}: the events of ${row.uuid}`)
    }
    // And every event is delivered.
    await eventually(
      async () => {
        const pending = await ctx.db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('merchant_uuid', '=', merchant)
          .where('status', '!=', 'succeeded')
          .executeTakeFirstOrThrow()
        const delivered = new Set(receiver.events().map((body) => body.event_id as string))
        return Number(pending.n) === 0 && events.length <= delivered.size
      },
      60_000,
      250,
    )
    return seen
  }

  before(async () => {
    cluster = await startCluster()
    // The suite's database, on the cluster: made, migrated and seeded through HAProxy.
    process.env.TEST_DATABASE_URL = cluster.url
    ctx = await createTestContext('postgres')
    databaseUrl = await postgresUrlOf(ctx)
    secret = ctx.merchant.keys.test.secret
    receiver = await startReceiver()
    for (let i = 0; i < 2; i++) {
      const port = await freePort()
      const base = `http://127.0.0.1:${port}`
      const program = spawnProgram(
        ['serve', '--role', 'all'],
        serviceEnv(databaseUrl, port, {
          RATE_LIMIT_PER_SECOND: '100000',
          RATE_LIMIT_BURST: '100000',
          DATABASE_QUERY_TIMEOUT: `${QUERY_TIMEOUT_S}s`,
          DATABASE_POOL_SIZE: '8',
        }),
      )
      gateways.push({ program, base })
      await untilHealthy(program, base, `gateway ${i + 1}`)
    }
    const base = gateways[0]?.base as string
    const put = await request(base, 'PUT', '/integration/webhook', {
      secret,
      body: { url: `${receiver.url}/hooks` },
    })
    assert.equal(put.status, 200, put.text)
    // A large payment that funds the payouts (test mode settles into `available` at once).
    const funding = await request(base, 'POST', '/integration/transactions', {
      secret,
      body: { amount: 100_000_000, currency: 'USD', payment_method: 'card', external_id: 'ha-funding' },
    })
    assert.equal(funding.status, 201, funding.text)
    const paid = await request(
      base,
      'POST',
      `/integration/sandbox/transactions/${funding.json().uuid}/paid`,
      {
        secret,
      },
    )
    assert.equal(paid.status, 200, paid.text)
  })

  after(async () => {
    await Promise.all(gateways.map((g) => stopProgram(g.program)))
    await receiver?.close()
    if (existsSync(cluster?.dir ?? '')) {
      await ctx?.close().catch(() => {})
      await cluster.stop().catch(() => {})
    }
    for (const line of figures) process.stdout.write(`${line}\n`)
  })

  it('starts a fresh cluster in under a minute', () => {
    figures.push(`cluster started in ${seconds(cluster.startMs)}`)
    assert.ok(cluster.startMs < 60_000, `${cluster.startMs} ms`)
  })

  /** What each case does to the cluster, and waits for, until the cluster is whole again. */
  const faults: Record<Case, (label: string) => Promise<string>> = {
    switchover: async () => {
      await cluster.run('switchover')
      await untilWhole(cluster)
      return ''
    },
    'kill-primary': async () => {
      const old = await cluster.leader()
      process.kill(await cluster.pid(old, 'postgres'), 'SIGKILL')
      const at = Date.now()
      const members = await untilWhole(cluster)
      const role = members.find((m) => m.name === old)?.role
      return `${old} back as ${role} after ${seconds(Date.now() - at)}`
    },
    'hung-leader': async (label) => {
      const old = await cluster.leader()
      const patroni = await cluster.pid(old, 'patroni')
      process.kill(patroni, 'SIGSTOP')
      const at = Date.now()
      let promotedAfter = 0
      try {
        await eventually(
          async () => {
            const leader = await cluster.leader().catch(() => old)
            return leader !== old
          },
          90_000,
          250,
        )
        // Promoted: the new leader's server is out of recovery (until then it may still take the old primary's WAL).
        const leader = await cluster.leader()
        await eventually(
          async () => {
            const client = new pg.Client({
              connectionString: cluster.nodeUrl(leader),
              connectionTimeoutMillis: 1_000,
            })
            try {
              await client.connect()
              const { rows } = await client.query('SELECT pg_is_in_recovery() AS standby')
              return rows[0]?.standby === false
            } catch {
              return false
            } finally {
              await client.end().catch(() => {})
            }
          },
          60_000,
          100,
        )
        promotedAfter = Date.now() - at
        // Straight to the old primary, past HAProxy: no write is acknowledged there once another leads.
        assert.equal(
          await writeAcknowledged(cluster.nodeUrl(old), 3_000),
          false,
          `${label}: the hung leader acknowledged a write after the promotion`,
        )
      } finally {
        process.kill(patroni, 'SIGCONT')
      }
      const resumed = Date.now()
      await untilWhole(cluster)
      return `new leader after ${seconds(promotedAfter)}; ${old} rejoined ${seconds(Date.now() - resumed)} after it resumed`
    },
    'one-standby': async (label) => {
      const standby = (await cluster.members()).find((m) => m.role === 'sync_standby')?.name as string
      await cluster.run('node', 'stop', standby)
      const at = Date.now()
      // Writes go on: the other standby becomes the synchronous one.
      await eventually(async () => (await writeAcknowledged(cluster.url, 2_000)) || null, 30_000, 100)
      const resumedAfter = Date.now() - at
      await cluster.run('node', 'start', standby)
      await untilWhole(cluster)
      assert.ok(resumedAfter < 30_000, label)
      return `writes acknowledged ${seconds(resumedAfter)} after a standby stopped`
    },
    'both-standbys': async (label) => {
      const standbys = (await cluster.members()).filter((m) => m.role !== 'leader').map((m) => m.name)
      await Promise.all(standbys.map((name) => cluster.run('node', 'stop', name)))
      const stopped = Date.now()
      let restarting = 0
      try {
        // The service says so (the health check may not even get a connection: every one of the pool may be
        // waiting on a COMMIT), and no write is acknowledged while no standby streams.
        const health = await eventually(
          async () => {
            const h = await healthOf(gateways[0]?.base as string)
            return h?.status === 503 ? h : null
          },
          30_000,
          250,
        )
        assert.ok(
          ['no_sync_standby', 'unreachable'].includes(health.database),
          `${label}: ${health.database}`,
        )
        assert.equal(
          await writeAcknowledged(cluster.url, 2_000),
          false,
          `${label}: a write without a standby`,
        )
        await sleep(6_000)
      } finally {
        restarting = Date.now()
        await Promise.all(standbys.map((name) => cluster.run('node', 'start', name)))
      }
      await untilWhole(cluster)
      return `held ${seconds(restarting - stopped)} without standbys; window ${stopped}..${restarting}`
    },
    etcd: async (label) => {
      await cluster.run('etcd', 'stop')
      const stopped = Date.now()
      let demotedAfter = 0
      try {
        // The primary demotes itself once it cannot renew its lease; every node is then read-only.
        await eventually(
          async () => {
            const h = await healthOf(gateways[0]?.base as string)
            return h?.status === 503 || null
          },
          60_000,
          250,
        )
        demotedAfter = Date.now() - stopped
        assert.equal(await writeAcknowledged(cluster.url, 2_000), false, `${label}: a write without etcd`)
        await sleep(3_000)
      } finally {
        await cluster.run('etcd', 'start')
      }
      const back = Date.now()
      await untilWhole(cluster)
      await eventually(async () => (await writeAcknowledged(cluster.url, 2_000)) || null, 60_000, 100)
      return `writes stopped ${seconds(demotedAfter)} after etcd did; back ${seconds(Date.now() - back)} after it returned`
    },
  }

  for (let round = 1; round <= ROUNDS; round++)
    for (const name of CHOSEN)
      it(`${name}, round ${round}: every acknowledged write kept, once; no 500; the service comes back`, async () => {
        const label = `${name} #${round}`
        let faultAt = 0
        let note = ''
        const { result: attempts, gapMs } = await withoutPrimary(() =>
          underLoad(`${name}-${round}`, async () => {
            faultAt = Date.now()
            note = await faults[name](label)
          }),
        )
        all.push(...attempts)
        if (name === 'both-standbys') {
          // None acknowledged between the stop (and a moment for answers already on their way) and the restart.
          const [, from, to] = /window (\d+)\.\.(\d+)/.exec(note) ?? []
          const during = acknowledged(attempts).filter(
            (a) => a.sent + a.ms > Number(from) + 500 && a.sent + a.ms < Number(to),
          )
          assert.deepEqual(during, [], `${label}: acknowledged while no standby streamed`)
          note = note.replace(/; window .*/, '')
        }
        await eventually(async () => {
          alive()
          const h = await Promise.all(gateways.map((g) => healthOf(g.base)))
          return h.every((x) => x?.status === 200)
        }, 60_000)
        const seen = await assertConsistent(label, attempts)
        figures.push(
          `${label}: ${acknowledged(attempts).length} acknowledged of ${attempts.length} attempts (${seen}); ` +
            `lost 0, duplicated 0; no writable primary for ${seconds(gapMs)}; ` +
            `no 2xx for ${seconds(serviceGap(attempts, faultAt))}${note ? `; ${note}` : ''}`,
        )
      })

  it('the stopped cluster leaves nothing behind', async () => {
    await Promise.all(gateways.map((g) => stopProgram(g.program)))
    await ctx.close()
    const dir = cluster.dir
    const took = await cluster.stop()
    figures.push(`cluster stopped in ${seconds(took)}; ${all.length} attempts in all`)
    assert.equal(existsSync(dir), false)
    // A process killed a moment ago may still be on its way out.
    const left = () => {
      try {
        return execFileSync('pgrep', ['-a', '-f', '--', dir]).toString().trim()
      } catch {
        return '' // pgrep exits 1 when it finds nothing
      }
    }
    await eventually(async () => left() === '', 10_000, 100).catch(() => {
      assert.equal(left(), '', 'processes left')
    })
  })
})

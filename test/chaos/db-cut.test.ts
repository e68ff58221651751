import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import {
  createTestContext,
  eventually,
  newTransaction,
  postgresUrlOf,
  serviceEnv,
  startReceiver,
  type TestContext,
} from '../helpers/harness.ts'
import { listenerPids, onPostgres, terminateSessions } from '../helpers/postgres.ts'
import { assertRunning, type Reply, request as send } from '../helpers/processes.ts'
import { freePort, type Program, spawnProgram, stopProgram } from '../helpers/program.ts'

/**
 * Database loss is survived: the real program (`serve`) on PostgreSQL has its connections cut by
 * the server (`pg_terminate_backend`, as a failover or a restart does) while clients create transactions, and
 * then loses its database for a moment. It stays up, answers what it cannot do with 503 `unavailable` (never
 * a 500, never a hang), loses nothing it acknowledged, and comes back by itself: health, requests, and the
 * LISTEN session that wakes the webhook dispatcher.
 */

const ADMIN_URL = onPostgres()

/** The program compiles with tsx at start: generous, as CI machines can be busy. */
const START_DEADLINE_MS = 30_000
/** Longer than the pool's wait for a connection (5 s): a request still unanswered by then hangs. */
const REQUEST_TIMEOUT_MS = 8_000
const CLIENTS = 20
const CUTS = 4
/** Between two cuts: at least this long, and until the service has created a few transactions again. */
const CUT_SPACING_MS = 300
const CREATED_BETWEEN_CUTS = 10
/** The dispatcher's poll interval: a delivery sooner than this was woken by NOTIFY, not found by a poll. */
const POLL_INTERVAL_MS = 1000

/** One real HTTP request, given up after REQUEST_TIMEOUT_MS. */
const request = (
  base: string,
  method: string,
  path: string,
  options: { secret?: string; body?: unknown } = {},
) => send(base, method, path, { ...options, timeoutMs: REQUEST_TIMEOUT_MS })

/** The contract's 503: the envelope with code `unavailable`, retryable after a second. */
function assertUnavailable(reply: Reply, what: string): void {
  assert.equal(reply.status, 503, `${what}: ${reply.text}`)
  const { error } = reply.json()
  assert.equal(error.code, 'unavailable', what)
  assert.equal(typeof error.message, 'string')
  assert.equal(error.request_id, reply.headers.get('x-request-id'))
  assert.equal(reply.headers.get('retry-after'), '1', what)
  // Nothing of the database's own words reaches the client.
  assert.doesNotMatch(reply.text, /terminat|connection|postgres|SQL/i, what)
}

describe('database loss: cut connections and an unreachable database are survived', () => {
  let ctx: TestContext
  let admin: pg.Client
  let database: string
  let program: Program
  let base: string
  let secret: string
  let receiver: Awaited<ReturnType<typeof startReceiver>>

  /** Fails with the program's output when it has exited. */
  const alive = (): void => assertRunning(program)

  /** Ends every session on the test database (the program's, and this process's idle ones): how many. */
  const cut = (): Promise<number> => terminateSessions(admin, database)

  /** The program's sessions that LISTEN for new webhook deliveries, by pid. */
  const listeners = (): Promise<number[]> => listenerPids(admin, database)
  const listening = async (): Promise<number> => (await listeners()).length

  /** Waits for the one LISTEN session to be another than `old` (a terminated backend lingers a moment). */
  const relistened = (old: number | undefined) =>
    eventually(
      async () => {
        alive()
        const pids = await listeners()
        return pids.length === 1 && pids[0] !== old
      },
      10_000,
      20,
    )

  /** Polls health until it answers `status`: that answer. */
  const healthAnswering = (status: number) =>
    eventually(
      async () => {
        alive()
        const health = await request(base, 'GET', '/integration/health')
        return health.status === status ? health : null
      },
      10_000,
      20,
    )

  const healthy = async (): Promise<boolean> => {
    alive()
    const health = await request(base, 'GET', '/integration/health').catch(() => null)
    return health?.status === 200
  }

  /**
   * Creates a transaction, simulates its payment, and measures from the sandbox call to the receiver getting
   * its `transaction.paid`: under POLL_INTERVAL_MS only when the dispatcher was woken by the NOTIFY.
   */
  async function webhookLatency(): Promise<number> {
    const created = await request(base, 'POST', '/integration/transactions', {
      secret,
      body: newTransaction(),
    })
    assert.equal(created.status, 201, created.text)
    const uuid: string = created.json().uuid
    const sent = Date.now()
    const paid = await request(base, 'POST', `/integration/sandbox/transactions/${uuid}/paid`, { secret })
    assert.equal(paid.status, 200, paid.text)
    const received = await eventually(
      async () => {
        alive()
        return receiver.received.find((r) => {
          const body = JSON.parse(r.body)
          return body.event === 'transaction.paid' && body.transaction?.uuid === uuid
        })
      },
      5_000,
      5,
    )
    return received.at - sent
  }

  /** Three deliveries in a row, each under the poll interval: the LISTEN session is there and heard. */
  async function assertWokenByNotify(when: string): Promise<number[]> {
    await eventually(async () => (await listening()) === 1, 10_000, 20)
    const latencies: number[] = []
    for (let i = 0; i < 3; i++) latencies.push(await webhookLatency())
    assert.ok(
      latencies.every((ms) => ms < POLL_INTERVAL_MS),
      `${when}: deliveries took ${latencies.join(', ')} ms; the dispatcher's poll would take up to ${POLL_INTERVAL_MS} ms`,
    )
    return latencies
  }

  before(async () => {
    // A fresh database, migrated, with rates, requisites and merchants (this process's API is not used).
    ctx = await createTestContext('postgres')
    const databaseUrl = await postgresUrlOf(ctx)
    database = new URL(databaseUrl).pathname.slice(1)
    secret = ctx.merchant.keys.test.secret
    // Cuts and checks go through a session on another database, out of reach of the cuts.
    admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    receiver = await startReceiver()

    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    program = spawnProgram(
      ['serve'],
      serviceEnv(databaseUrl, port, { RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '100000' }),
    )
    await eventually(async () => (await healthy()) && (await listening()) === 1, START_DEADLINE_MS, 100)
    const put = await request(base, 'PUT', '/integration/webhook', {
      secret,
      body: { url: `${receiver.url}/hooks`, events: ['transaction.paid'] },
    })
    assert.equal(put.status, 200, put.text)
  })

  after(async () => {
    await admin
      ?.query(`ALTER DATABASE ${pg.escapeIdentifier(database)} ALLOW_CONNECTIONS true`)
      .catch(() => {})
    if (program) await stopProgram(program)
    await receiver?.close()
    await admin?.end()
    await ctx?.close()
  })

  it('cuts under load: no crash, no 500, no hang; every 201 is stored; the LISTEN session comes back', async () => {
    interface Outcome {
      method: string
      externalId: string
      reply: Reply | null
      failure: string | null
    }
    const outcomes: Outcome[] = []
    let loading = true
    const created = () => outcomes.filter((o) => o.reply?.status === 201).length
    const client = async (i: number) => {
      // Half pay by card (one INSERT), half host-to-host (requisites taken and the row written in one
      // transaction, the connection checked out between its statements).
      const method = i % 2 === 0 ? 'card' : 'p2p_card'
      while (loading) {
        const body = newTransaction({ payment_method: method })
        const outcome: Outcome = { method, externalId: body.external_id, reply: null, failure: null }
        try {
          outcome.reply = await request(base, 'POST', '/integration/transactions', { secret, body })
        } catch (error) {
          outcome.failure = String((error as Error).cause ?? error)
        }
        outcomes.push(outcome)
      }
    }
    const [initialListener] = await listeners()
    const clients = Array.from({ length: CLIENTS }, (_, i) => client(i))
    const ended: number[] = []
    try {
      await eventually(async () => created() >= CREATED_BETWEEN_CUTS, 10_000)
      for (let i = 0; i < CUTS; i++) {
        ended.push(await cut())
        const at = Date.now()
        const before = created()
        // Spaced in time, and only once the service creates transactions again.
        await eventually(
          async () => {
            alive()
            return Date.now() - at >= CUT_SPACING_MS && created() - before >= CREATED_BETWEEN_CUTS
          },
          10_000,
          10,
        )
      }
    } finally {
      loading = false
      await Promise.all(clients)
    }
    alive()

    const failures = outcomes.filter((o) => o.failure !== null)
    assert.deepEqual(
      failures.map((o) => o.failure),
      [],
      'every request was answered (none hung, none lost its connection)',
    )
    const byStatus = new Map<number, number>()
    for (const o of outcomes) {
      const status = o.reply?.status as number
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1)
    }
    const refused = outcomes.filter((o) => o.reply?.status !== 201)
    for (const o of refused) assertUnavailable(o.reply as Reply, `${o.method} ${o.externalId}`)
    assert.ok(
      ended.every((n) => n > 0),
      `every cut ended sessions (${ended.join(', ')})`,
    )
    // The cuts landed on transactions at work: some requests failed, as they must have.
    assert.ok(refused.length > 0, `no request failed during ${CUTS} cuts of ${ended.join(', ')} sessions`)

    // Every acknowledged transaction is stored, whole.
    const acknowledged = outcomes.filter((o) => o.reply?.status === 201).map((o) => o.reply?.json())
    const stored = await ctx.db
      .selectFrom('transactions')
      .select(['uuid', 'external_id', 'payment_method', 'requisite_uuid'])
      .where('merchant_uuid', '=', ctx.merchant.uuid)
      .execute()
    const storedByUuid = new Map(stored.map((row) => [row.uuid, row]))
    for (const tx of acknowledged) {
      const row = storedByUuid.get(tx.uuid)
      assert.ok(row, `transaction ${tx.uuid} was acknowledged (201) but is not stored`)
      assert.equal(row.external_id, tx.external_id)
    }
    // No partial write: a host-to-host transaction is stored with its requisites, and no requisites were
    // taken (assigned_count) by a transaction that was not stored.
    const h2h = stored.filter((row) => row.payment_method === 'p2p_card')
    for (const row of h2h) assert.ok(row.requisite_uuid, `${row.uuid} has its requisites`)
    const requisites = await ctx.db
      .selectFrom('requisites')
      .select((eb) => eb.fn.sum<number>('assigned_count').as('n'))
      .where('payment_method', '=', 'p2p_card')
      .executeTakeFirstOrThrow()
    assert.ok(
      Number(requisites.n) <= h2h.length,
      `requisites were taken ${requisites.n} times for ${h2h.length} stored host-to-host transactions`,
    )

    assert.ok(await eventually(healthy, 10_000, 20))
    await relistened(initialListener)
    const latencies = await assertWokenByNotify('after the cuts under load')
    assert.match(program.output(), /LISTEN session lost; reconnecting/)
    process.stdout.write(
      `# ${CUTS} cuts (${ended.join(', ')} sessions ended), ${outcomes.length} requests: ` +
        `${[...byStatus].map(([s, n]) => `${n} × ${s}`).join(', ')}; webhook after: ${latencies.join(', ')} ms\n`,
    )
  })

  it('a cut while idle: the next requests succeed and the LISTEN session comes back', async () => {
    const [old] = await eventually(async () => {
      const pids = await listeners()
      return pids.length === 1 ? pids : null
    }, 10_000)
    assert.ok((await cut()) > 0)
    // The LISTEN session is gone until the program opens it again, on another backend.
    await relistened(old)
    // A request that picks up a pooled connection whose end has not been read yet fails with 503: poll.
    await eventually(healthy, 10_000, 20)
    const latencies = await assertWokenByNotify('after a cut while idle')
    process.stdout.write(`# idle cut: webhook after ${latencies.join(', ')} ms\n`)
  })

  it('an unreachable database: health 503 and requests 503 unavailable, then 200 again without a restart', async () => {
    const name = pg.escapeIdentifier(database)
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
    try {
      await cut()
      const down = await healthAnswering(503)
      assert.equal(down.json().database, 'unreachable')
      assert.equal(down.json().status, 'degraded')
      const refused = await request(base, 'POST', '/integration/transactions', {
        secret,
        body: newTransaction(),
      })
      assertUnavailable(refused, 'a transaction while the database refuses connections')
      await eventually(async () => (await listening()) === 0, 10_000, 20)
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
    }
    const up = await healthAnswering(200)
    assert.equal(up.json().database, 'ok')
    const created = await request(base, 'POST', '/integration/transactions', {
      secret,
      body: newTransaction(),
    })
    assert.equal(created.status, 201, created.text)
    // The LISTEN session, retried with backoff while the database refused it, is back too.
    const latencies = await assertWokenByNotify('after the database came back')
    process.stdout.write(`# unreachable: webhook after ${latencies.join(', ')} ms\n`)
  })

  it('the program stops cleanly after all of it', async () => {
    alive()
    const code = await stopProgram(program)
    assert.equal(code, 0, program.output())
  })
})

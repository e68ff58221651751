import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { hostname } from 'node:os'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { Webhook } from 'standardwebhooks'
import {
  createTestContext,
  eventually,
  newTransaction,
  postgresUrlOf,
  startReceiver,
  TEST_MASTER_KEY,
  type TestContext,
} from '../helpers/harness.ts'
import { listeningSessions, onPostgres } from '../helpers/postgres.ts'
import { assertRunning, type Reply, request, START_DEADLINE_MS } from '../helpers/processes.ts'
import { freePort, type Program, programEnv, ROOT, spawnProgram, stopProgram } from '../helpers/program.ts'

/**
 * Scale-out (docs/OPERATIONS.md, Topology): two `serve --role api` processes and one `serve --role worker`, as an
 * operator runs them behind a load balancer, on one PostgreSQL database and one Redis. Everything below goes over
 * real HTTP to the real programs: idempotency, rate limits and webhook deliveries hold across the processes.
 */

// Several processes on one database only make sense on PostgreSQL.
onPostgres()
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** Small limits so that one bucket and two buckets differ plainly. */
const PER_SECOND = 2
const BURST = 30
/** The worker's PostgreSQL pool: smaller than the default of 10. */
const WORKER_POOL_SIZE = 4
/** The worker's pool for its jobs, besides WORKER_POOL_SIZE: other than the default of 3. */
const WORKER_JOBS_POOL_SIZE = 2

const run = promisify(execFile)

/** The Prometheus text of a process's metrics port. */
async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`)
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/)
  return res.text()
}

/** The value of the first sample of `metric` whose labels include every `label="value"` given. */
function sample(text: string, metric: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line)
    if (!match || match[1] !== metric) continue
    const set = match[2] ?? ''
    if (Object.entries(labels).every(([name, value]) => set.includes(`${name}="${value}"`)))
      return Number(match[3])
  }
  return null
}

describe('scale-out: two API processes and one worker on one PostgreSQL and one Redis', () => {
  let ctx: TestContext
  let databaseUrl: string
  const programs: Program[] = []
  const receivers: Awaited<ReturnType<typeof startReceiver>>[] = []
  const apis: { program: Program; base: string; port: number; metricsPort: number }[] = []
  let worker: Program
  let workerMetricsPort: number
  let stoppedCleanly = false
  /** API process `i % 2`'s base URL: consecutive requests alternate between the two. */
  const baseOf = (i: number): string => {
    const api = apis[i % 2]
    assert.ok(api, 'the API processes run')
    return api.base
  }

  const env = (extra: Record<string, string>) =>
    programEnv({
      APP_ENV: 'development',
      DATABASE_URL: databaseUrl,
      REDIS_URL,
      MASTER_KEY: TEST_MASTER_KEY,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: String(PER_SECOND),
      RATE_LIMIT_BURST: String(BURST),
      HOST: '127.0.0.1',
      ...extra,
    })

  /** `merchants create --json` on the shared database, as an operator runs it: the merchant's keys. */
  async function cliMerchant(name: string): Promise<{ uuid: string; test: string; keyId: string }> {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', 'src/main.ts', 'merchants', 'create', '--name', name, '--json'],
      { cwd: ROOT, env: env({}), timeout: START_DEADLINE_MS },
    )
    const created = JSON.parse(stdout.trim().split('\n').at(-1) as string)
    return { uuid: created.merchant_uuid, test: created.keys.test.secret, keyId: created.keys.test.key_id }
  }

  before(async () => {
    // The database: fresh, migrated, with rates and requisites (the API of this process is not used).
    ctx = await createTestContext('postgres')
    databaseUrl = await postgresUrlOf(ctx)

    for (let i = 0; i < 2; i++) {
      const port = await freePort()
      const metricsPort = await freePort()
      const program = spawnProgram(
        ['serve', '--role', 'api'],
        env({ PORT: String(port), METRICS_PORT: String(metricsPort) }),
      )
      programs.push(program)
      apis.push({ program, base: `http://127.0.0.1:${port}`, port, metricsPort })
    }
    workerMetricsPort = await freePort()
    // The worker with smaller pools than the defaults, as an operator sizes them (DATABASE_POOL_SIZE, and
    // DATABASE_WORKER_POOL_SIZE for its jobs).
    worker = spawnProgram(
      ['serve', '--role', 'worker'],
      env({
        METRICS_PORT: String(workerMetricsPort),
        DATABASE_POOL_SIZE: String(WORKER_POOL_SIZE),
        DATABASE_WORKER_POOL_SIZE: String(WORKER_JOBS_POOL_SIZE),
      }),
    )
    programs.push(worker)

    // Ready: both API processes answer, and the worker's dispatcher listens (the only listener).
    await eventually(
      async () => {
        for (const [i, api] of apis.entries()) assertRunning(api.program, `API process ${i + 1}`)
        assertRunning(worker, 'the worker')
        const health = await Promise.all(
          apis.map((api) => request(api.base, 'GET', '/integration/health').catch(() => null)),
        )
        return health.every((h) => h?.status === 200) && (await listeningSessions(ctx.db)) === 1
      },
      START_DEADLINE_MS,
      100,
    )
  })

  after(async () => {
    // A failing test may leave them running: SIGTERM, SIGKILL when one does not stop.
    if (!stoppedCleanly) await Promise.all(programs.map((p) => stopProgram(p)))
    await Promise.all(receivers.map((r) => r.close()))
    await ctx?.close()
  })

  it('one Idempotency-Key sent to both API processes at once: one transaction, one stored answer', async () => {
    const merchant = await cliMerchant('Idempotency Shop')
    const body = newTransaction()
    const key = `scale-out-${body.external_id}`
    const PER_PROCESS = 10
    const replies = await Promise.all(
      Array.from({ length: PER_PROCESS * 2 }, (_, i) =>
        request(baseOf(i), 'POST', '/integration/transactions', {
          secret: merchant.test,
          body,
          idempotencyKey: key,
        }).then((reply) => ({ reply, process: i % 2 })),
      ),
    )

    const created = replies.filter((r) => r.reply.status === 201)
    const inProgress = replies.filter((r) => r.reply.status === 409)
    assert.equal(
      created.length + inProgress.length,
      replies.length,
      replies.map((r) => r.reply.status).join(),
    )
    const originals = created.filter((r) => r.reply.headers.get('idempotent-replayed') !== 'true')
    assert.equal(originals.length, 1, 'exactly one request created the transaction')
    const original = originals[0]?.reply as Reply
    for (const { reply } of created) assert.equal(reply.text, original.text, 'a replay is byte for byte')
    for (const { reply } of inProgress) {
      assert.equal(reply.json().error.code, 'idempotency_request_in_progress')
      assert.equal(reply.headers.get('retry-after'), '1')
    }

    // Once done, either process replays the stored answer.
    for (const api of apis) {
      const again = await request(api.base, 'POST', '/integration/transactions', {
        secret: merchant.test,
        body,
        idempotencyKey: key,
      })
      assert.equal(again.status, 201, again.text)
      assert.equal(again.headers.get('idempotent-replayed'), 'true')
      assert.equal(again.text, original.text)
    }
    // The same key with another body, at the other process: refused.
    const other = await request(baseOf(1), 'POST', '/integration/transactions', {
      secret: merchant.test,
      body: { ...body, amount: body.amount + 1 },
      idempotencyKey: key,
    })
    assert.equal(other.status, 422, other.text)
    assert.equal(other.json().error.code, 'idempotency_key_reused')

    const rows = await ctx.db
      .selectFrom('transactions')
      .select(['uuid'])
      .where('merchant_uuid', '=', merchant.uuid)
      .execute()
    assert.deepEqual(
      rows.map((r) => r.uuid),
      [original.json().uuid],
      'one transaction row',
    )
    process.stdout.write(
      `# idempotency: ${created.length} × 201 (1 original), ${inProgress.length} × 409 in progress\n`,
    )
  })

  it('rate limits: requests alternating between the processes draw on one bucket per key', async () => {
    const merchant = await cliMerchant('Rate Limit Shop')
    const TOTAL = BURST * 3
    const started = Date.now()
    const replies: { reply: Reply; process: number }[] = []
    for (let i = 0; i < TOTAL; i++) {
      const reply = await request(baseOf(i), 'GET', '/integration/transactions?per_page=1', {
        secret: merchant.test,
      })
      replies.push({ reply, process: i % 2 })
    }
    const elapsedSeconds = (Date.now() - started) / 1000

    const allowed = replies.filter((r) => r.reply.status === 200)
    const limited = replies.filter((r) => r.reply.status === 429)
    assert.equal(allowed.length + limited.length, TOTAL, replies.map((r) => r.reply.status).join())
    // One bucket: the burst, plus what refilled while the requests ran; two buckets would allow twice the burst.
    const ceiling = BURST + Math.ceil(elapsedSeconds * PER_SECOND) + 1
    assert.ok(
      allowed.length >= BURST && allowed.length <= ceiling,
      `${allowed.length} allowed in ${elapsedSeconds.toFixed(2)} s (one bucket: ${BURST}..${ceiling}; two: ≥ ${2 * BURST})`,
    )
    assert.ok(allowed.length < 2 * BURST)
    // The first BURST requests, half at each process, emptied the bucket: both processes refuse after it.
    assert.ok(
      replies.slice(0, BURST).every((r) => r.reply.status === 200),
      'the burst is allowed',
    )
    for (const p of [0, 1])
      assert.ok(
        limited.some((r) => r.process === p),
        `API process ${p + 1} refused nothing`,
      )
    // Every answer carries the bucket's state; the first drew one token from a full bucket.
    assert.equal(replies[0]?.reply.headers.get('ratelimit-limit'), String(BURST))
    assert.equal(replies[0]?.reply.headers.get('ratelimit-remaining'), String(BURST - 1))
    for (const { reply } of allowed) assert.ok(reply.headers.get('ratelimit-reset'))

    for (const { reply } of limited) {
      const retryAfter = Number(reply.headers.get('retry-after'))
      assert.ok(
        Number.isInteger(retryAfter) && retryAfter >= 1,
        `Retry-After ${reply.headers.get('retry-after')}`,
      )
      assert.equal(reply.headers.get('ratelimit-limit'), String(BURST))
      assert.equal(reply.headers.get('ratelimit-remaining'), '0')
      assert.ok(reply.headers.get('ratelimit-reset'))
      assert.ok(reply.headers.get('x-request-id'))
      const { error } = reply.json()
      assert.equal(error.code, 'rate_limited')
      assert.equal(typeof error.message, 'string')
      assert.equal(error.request_id, reply.headers.get('x-request-id'))
      assert.deepEqual(error.details, { limit_per_second: PER_SECOND, burst: BURST })
    }

    // A request refused by the rate limit never owns its Idempotency-Key: once a token is back, the same key
    // with another body is a new request, not a reuse. The POST goes out right after a refusal emptied the
    // bucket; should a token have come back meanwhile, the round is repeated with a fresh key.
    const { body, key } = await eventually(
      async () => {
        for (;;) {
          const drain = await request(baseOf(1), 'GET', '/integration/transactions?per_page=1', {
            secret: merchant.test,
          })
          if (drain.status === 429) break
        }
        const body = newTransaction()
        const key = `rate-limited-${body.external_id}`
        const refused = await request(baseOf(0), 'POST', '/integration/transactions', {
          secret: merchant.test,
          body,
          idempotencyKey: key,
        })
        return refused.status === 429 ? { body, key } : null
      },
      10_000,
      0,
    )
    const changed = { ...body, amount: body.amount + 100 }
    const accepted = await eventually(
      async () => {
        const reply = await request(baseOf(1), 'POST', '/integration/transactions', {
          secret: merchant.test,
          body: changed,
          idempotencyKey: key,
        })
        return reply.status === 429 ? null : reply
      },
      10_000,
      100,
    )
    assert.equal(accepted.status, 201, accepted.text)
    assert.equal(accepted.json().amount, changed.amount)
    process.stdout.write(
      `# rate limit: ${allowed.length} of ${TOTAL} allowed in ${elapsedSeconds.toFixed(2)} s (burst ${BURST}, ${PER_SECOND}/s), ` +
        `${allowed.filter((r) => r.process === 0).length} + ${allowed.filter((r) => r.process === 1).length} per process\n`,
    )
  })

  it('deliveries: the worker sends every event caused through either API process; the API processes send none', async () => {
    const COUNT = 10
    const merchant = await cliMerchant('Webhook Shop')
    const target = await startReceiver()
    receivers.push(target)
    const put = await request(baseOf(0), 'PUT', '/integration/webhook', {
      secret: merchant.test,
      body: { url: `${target.url}/hooks` },
    })
    assert.equal(put.status, 200, put.text)
    // The configuration written through one process is what the other reads.
    const config = await request(baseOf(1), 'GET', '/integration/webhook', { secret: merchant.test })
    assert.equal(config.json().url, `${target.url}/hooks`)
    const secret: string = config.json().secret

    // Created at one process, paid at the other.
    const uuids: string[] = []
    for (let i = 0; i < COUNT; i++) {
      const created = await request(baseOf(i), 'POST', '/integration/transactions', {
        secret: merchant.test,
        body: newTransaction(),
      })
      assert.equal(created.status, 201, created.text)
      uuids.push(created.json().uuid)
    }
    for (const [i, uuid] of uuids.entries()) {
      const paid = await request(baseOf(i + 1), 'POST', `/integration/sandbox/transactions/${uuid}/paid`, {
        secret: merchant.test,
      })
      assert.equal(paid.status, 200, paid.text)
      assert.equal(paid.json().status, 'paid')
    }

    const events = await ctx.db
      .selectFrom('events')
      .innerJoin('webhook_deliveries', 'webhook_deliveries.event_id', 'events.uuid')
      .select([
        'events.uuid as event_id',
        'events.aggregate_uuid',
        'webhook_deliveries.uuid as delivery_uuid',
      ])
      .where('events.aggregate_uuid', 'in', uuids)
      .where('webhook_deliveries.event', '=', 'transaction.paid')
      .execute()
    assert.equal(events.length, COUNT, 'one transaction.paid event and delivery per payment')

    // Every event received at least once, each signed with the merchant's secret.
    await eventually(
      async () => {
        assertRunning(worker, 'the worker')
        const got = new Set(target.received.map((r) => r.headers['webhook-id']))
        return events.every((e) => got.has(e.event_id))
      },
      START_DEADLINE_MS,
      50,
    )
    const verifier = new Webhook(secret)
    for (const received of target.received) {
      const payload = verifier.verify(received.body, {
        'webhook-id': received.headers['webhook-id'] as string,
        'webhook-timestamp': received.headers['webhook-timestamp'] as string,
        'webhook-signature': received.headers['webhook-signature'] as string,
      }) as { event: string; event_id: string; transaction: { uuid: string; status: string } }
      assert.equal(payload.event, 'transaction.paid')
      assert.equal(payload.event_id, received.headers['webhook-id'])
      assert.ok(uuids.includes(payload.transaction.uuid))
      assert.equal(payload.transaction.status, 'paid')
    }

    // The delivery log, read through either process once the worker has recorded its attempts (polled in the
    // database, not through the API: the merchant's requests are rate limited), shows every delivery succeeded.
    await eventually(async () => {
      const pending = await ctx.db
        .selectFrom('webhook_deliveries')
        .select('uuid')
        .where(
          'uuid',
          'in',
          events.map((e) => e.delivery_uuid),
        )
        .where('status', '!=', 'succeeded')
        .execute()
      return pending.length === 0
    }, 10_000)
    const expectedIds = events.map((e) => e.event_id).sort()
    for (const api of apis) {
      const res = await request(
        api.base,
        'GET',
        '/integration/webhook/deliveries?event=transaction.paid&per_page=100',
        { secret: merchant.test },
      )
      assert.equal(res.status, 200, res.text)
      const log = res.json().data as { event_id: string; status: string; attempts: number }[]
      assert.deepEqual(log.map((d) => d.event_id).sort(), expectedIds)
      for (const d of log) assert.equal(d.status, 'succeeded')
    }

    // Every attempt was made by the worker process; neither API process made one, nor listens for work.
    const attempts = await ctx.db
      .selectFrom('webhook_attempts')
      .select(['delivery_uuid', 'worker', 'response_status'])
      .where(
        'delivery_uuid',
        'in',
        events.map((e) => e.delivery_uuid),
      )
      .execute()
    assert.ok(attempts.length >= COUNT)
    const workerPrefix = `${hostname()}-${worker.child.pid}-`
    for (const attempt of attempts) {
      assert.ok(attempt.worker.startsWith(workerPrefix), `attempt made by ${attempt.worker}, not the worker`)
      for (const api of apis) assert.ok(!attempt.worker.includes(`-${api.program.child.pid}-`))
    }
    assert.equal(await listeningSessions(ctx.db), 1, 'only the worker listens for deliveries')
    process.stdout.write(
      `# deliveries: ${COUNT} events, ${target.received.length} requests received, ${attempts.length} attempts, all by the worker\n`,
    )
  })

  it('metrics: each process serves its own on METRICS_PORT, and the API port does not serve them', async () => {
    const merchant = await cliMerchant('Metrics Shop')
    const [api] = apis
    assert.ok(api)
    const created = await request(api.base, 'POST', '/integration/transactions', {
      secret: merchant.test,
      body: newTransaction(),
    })
    assert.equal(created.status, 201, created.text)

    const apiText = await scrape(api.metricsPort)
    assert.match(
      apiText,
      /^http_request_duration_seconds_bucket\{[^}]*route="\/integration\/transactions"[^}]*\} \d+$/m,
    )
    assert.ok(
      (sample(apiText, 'http_request_duration_seconds_count', {
        method: 'POST',
        route: '/integration/transactions',
        status: '201',
      }) ?? 0) >= 1,
    )
    const workerFirst = await scrape(workerMetricsPort)
    // Each process's pools have the sizes its environment gave them; an API process has no pool for jobs.
    assert.equal(sample(apiText, 'db_pool_connections', { state: 'max' }), 10)
    assert.equal(
      sample(workerFirst, 'db_pool_connections', { state: 'max' }),
      WORKER_POOL_SIZE + WORKER_JOBS_POOL_SIZE,
    )
    for (const text of [apiText, workerFirst]) {
      assert.ok((sample(text, 'webhook_outbox_depth') ?? -1) >= 0, 'webhook_outbox_depth')
      assert.ok(
        (sample(text, 'webhook_outbox_oldest_age_seconds') ?? -1) >= 0,
        'webhook_outbox_oldest_age_seconds',
      )
      for (const state of ['total', 'idle', 'waiting'])
        assert.notEqual(sample(text, 'db_pool_connections', { state }), null, `db_pool_connections ${state}`)
      // No payment is handed to a provider and no route is set: nothing overdue, nothing unserved.
      assert.equal(sample(text, 'provider_status_sync_lag_seconds'), 0)
      assert.equal(sample(text, 'provider_routes_without_account'), 0)
    }
    // An API process runs no jobs and delivers nothing: those series have no samples there.
    assert.equal(sample(apiText, 'worker_job_lag_seconds', { job: 'expiry' }), null)
    assert.equal(sample(apiText, 'webhook_delivery_attempts_total'), null)

    // The worker: its jobs' lag, and the delivery attempts it made (the previous test's, and this one).
    const target = await startReceiver()
    receivers.push(target)
    const put = await request(api.base, 'PUT', '/integration/webhook', {
      secret: merchant.test,
      body: { url: `${target.url}/hooks` },
    })
    assert.equal(put.status, 200, put.text)
    const paid = await request(
      api.base,
      'POST',
      `/integration/sandbox/transactions/${created.json().uuid}/paid`,
      { secret: merchant.test },
    )
    assert.equal(paid.status, 200, paid.text)
    await eventually(async () => target.received.length >= 1, START_DEADLINE_MS)
    const workerText = await eventually(async () => {
      const text = await scrape(workerMetricsPort)
      return (sample(text, 'webhook_delivery_attempts_total', { outcome: 'succeeded' }) ?? 0) >= 1
        ? text
        : null
    }, 10_000)
    for (const job of ['expiry', 'settlement', 'payouts'])
      assert.ok(
        (sample(workerText, 'worker_job_lag_seconds', { job }) ?? -1) >= 0,
        `worker_job_lag_seconds ${job}`,
      )
    assert.match(workerText, /^# TYPE webhook_delivery_attempts_total counter$/m)

    // The merchant API never exposes them.
    for (const { base } of apis) {
      const res = await request(base, 'GET', '/metrics')
      assert.equal(res.status, 404)
    }
    // The metrics port serves nothing else.
    const other = await fetch(`http://127.0.0.1:${api.metricsPort}/integration/health`)
    assert.equal(other.status, 404)
    await other.arrayBuffer()
  })

  it('every process stops on SIGTERM and exits 0', async () => {
    const codes = await Promise.all(programs.map((p) => stopProgram(p)))
    stoppedCleanly = true
    assert.deepEqual(
      codes,
      programs.map(() => 0),
      programs.map((p, i) => `process ${i + 1} (exit ${codes[i]}):\n${p.output()}`).join('\n'),
    )
    await eventually(async () => (await listeningSessions(ctx.db)) === 0)
  })
})

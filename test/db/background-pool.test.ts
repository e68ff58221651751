import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { createServices, type Services } from '../../src/app.ts'
import { connect, type DbHandle } from '../../src/db/index.ts'
import { startWorkers } from '../../src/workers/index.ts'
import { call, eventually, newTransaction, postgresUrlOf, testDriver } from '../helpers/harness.ts'
import { onPostgres } from '../helpers/postgres.ts'
import { beforeClose, suiteContext, suiteReceiver } from '../helpers/suite.ts'

/**
 * The workers have connections of their own on PostgreSQL: with every connection of the requests' pool taken
 * (as when a server starts under a burst of creates), the expiry and settlement jobs and the outbox dispatcher
 * still do their work at once, rather than queueing behind the requests until they give up. The embedded
 * database has one session for everything, so there is nothing to show there.
 */

onPostgres()

/**
 * The requests' pool: with the driver layer, 3 connections for transactions and 1 shared by single statements;
 * without it, 4 for both (see connectPostgres).
 */
const POOL_SIZE = 4
const WORKER_POOL_SIZE = 2
/** Below the 5 s a query waits for a connection before it fails: a job stuck behind requests cannot meet it. */
const DEADLINE_MS = 3_000

describe("the workers' own connections (postgres)", () => {
  const ctx = suiteContext('postgres')
  const receiver = suiteReceiver(ctx)
  let handle: DbHandle
  let jobServices: Services | undefined
  let workers: ReturnType<typeof startWorkers> | undefined
  let locker: pg.Client
  let release: () => void = () => {}
  const holding: Promise<unknown>[] = []

  before(async () => {
    const url = await postgresUrlOf(ctx)
    // A process of its own on the suite's database, configured as `serve` connects.
    handle = await connect({
      databaseUrl: url,
      dataDir: null,
      poolSize: POOL_SIZE,
      workerPoolSize: WORKER_POOL_SIZE,
      driver: testDriver(),
    })
    locker = new pg.Client({ connectionString: url })
    await locker.connect()
  })

  beforeClose(ctx, async () => {
    await workers?.stop()
    await jobServices?.close()
    release()
    await locker.query('COMMIT').catch(() => {})
    await Promise.all(holding)
    await locker.end()
    await handle.close()
  })

  it('expiry, settlement and webhook deliveries complete while requests hold every other connection', async (t) => {
    const put = await call(ctx, 'PUT', '/integration/webhook', { url: `${receiver.url}/hooks` })
    assert.equal(put.statusCode, 200, put.body)
    // A payment paid in test mode: its transaction.paid event waits in the outbox for the dispatcher.
    const paid = (await call(ctx, 'POST', '/integration/transactions', newTransaction())).json()
    const simulated = await call(ctx, 'POST', `/integration/sandbox/transactions/${paid.uuid}/paid`)
    assert.equal(simulated.statusCode, 200, simulated.body)
    // A pending payment past its expiry: for the expiry job.
    const overdue = (await call(ctx, 'POST', '/integration/transactions', newTransaction())).json()
    await ctx.db
      .updateTable('transactions')
      .set({ expires_at: new Date(Date.now() - 60_000) })
      .where('uuid', '=', overdue.uuid)
      .execute()
    // A live payment whose hold has ended: for the settlement job.
    const live = { as: { merchant: ctx.merchant, mode: 'live' as const } }
    const held = (await call(ctx, 'POST', '/integration/transactions', newTransaction(), live)).json()
    const heldPaid = await call(
      ctx,
      'POST',
      `/integration/sandbox/transactions/${held.uuid}/paid`,
      undefined,
      live,
    )
    assert.equal(heldPaid.statusCode, 200, heldPaid.body)
    await ctx.db
      .updateTable('transactions')
      .set({ settle_available_at: new Date(Date.now() - 1000) })
      .where('uuid', '=', held.uuid)
      .execute()

    // Every connection of the requests' pool busy: the transactions' ones held open, and the shared one (or,
    // without the driver layer, the pool's last) stuck behind a table lock.
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    for (let i = 0; i < POOL_SIZE - 1; i++)
      holding.push(
        handle.db.transaction().execute(async (trx) => {
          await sql`SELECT 1`.execute(trx)
          await gate
        }),
      )
    await sql`CREATE TABLE held_by_test (id int)`.execute(ctx.db)
    await locker.query('BEGIN')
    await locker.query('LOCK TABLE held_by_test IN ACCESS EXCLUSIVE MODE')
    holding.push(sql`SELECT count(*) FROM held_by_test`.execute(handle.db))
    // One more request: it can only wait for a connection (and gives up after 5 s).
    holding.push(
      handle.db
        .transaction()
        .execute((trx) => sql`SELECT 1`.execute(trx))
        .catch((error: unknown) => error),
    )
    await eventually(async () => {
      const stats = handle.poolStats()
      return stats && stats.total === POOL_SIZE && stats.idle === 0 && stats.waiting >= 1
    })
    // No pool for jobs until the workers ask for it.
    assert.deepEqual(handle.poolStats()?.background, { total: 0, idle: 0, waiting: 0, max: 0 })
    assert.equal(handle.poolStats()?.max, POOL_SIZE)

    // The workers as `serve` runs them: on services of their own, over the workers' connections.
    jobServices = createServices(handle.background, ctx.config)
    const started = Date.now()
    workers = startWorkers(handle, jobServices, ctx.app.log, {
      jobIntervalMs: 100,
      payoutIntervalMs: 100,
      dispatcher: { pollMs: 50 },
    })
    const status = async (uuid: string) =>
      ctx.db
        .selectFrom('transactions')
        .select(['status', 'settled_at'])
        .where('uuid', '=', uuid)
        .executeTakeFirstOrThrow()
    const delivered = (uuid: string, event: string) =>
      receiver.events().some((e) => e.transaction?.uuid === uuid && e.event === event)
    await eventually(
      async () =>
        (await status(overdue.uuid)).status === 'expired' &&
        (await status(held.uuid)).settled_at !== null &&
        delivered(paid.uuid, 'transaction.paid') &&
        delivered(overdue.uuid, 'transaction.expired'),
      DEADLINE_MS,
    )
    const elapsedMs = Date.now() - started
    assert.ok(elapsedMs < DEADLINE_MS, `the jobs took ${elapsedMs} ms`)
    t.diagnostic(`expired, settled and delivered ${elapsedMs} ms after the workers started`)

    // The workers' connections count among the process's, and the requests' pool is still full.
    const stats = handle.poolStats()
    assert.ok(stats)
    assert.ok(stats.background.total >= 1 && stats.background.total <= WORKER_POOL_SIZE)
    assert.equal(stats.background.max, WORKER_POOL_SIZE)
    assert.equal(stats.total, POOL_SIZE + stats.background.total)
    assert.equal(stats.max, POOL_SIZE + WORKER_POOL_SIZE)
    assert.deepEqual(
      ctx.logs.filter((line) => /(expiry|settlement|payouts|refunds|maintenance) failed|claiming/.test(line)),
      [],
    )
  })
})

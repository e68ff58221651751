import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  backends,
  call,
  createTestContext,
  eventually,
  newTransaction,
  postgresUrlOf,
  startReceiver,
  type TestContext,
  transactionRow,
  workerEnv,
} from '../helpers/harness.ts'
import { listeningSessions } from '../helpers/postgres.ts'
import { START_DEADLINE_MS } from '../helpers/processes.ts'
import { type Program, spawnProgram, stopProgram } from '../helpers/program.ts'

type Worker = Program

/**
 * `merchant-gateway serve --role worker` as an operator runs it, on the test's own PostgreSQL database.
 * Nothing of the caller's environment that configures the program leaks in.
 */
function startWorker(databaseUrl: string, env: Record<string, string> = {}): Worker {
  return spawnProgram(['serve', '--role', 'worker'], workerEnv(databaseUrl, env))
}

/** Ends a worker if it still runs: SIGTERM (it gives back its claims), SIGKILL if it does not stop. */
async function stopWorker(worker: Worker): Promise<void> {
  await stopProgram(worker, 'SIGTERM', 15_000)
}

/** Waits until `count` workers listen; fails with their output when one exits first. */
async function ready(ctx: TestContext, workers: Worker[], count = workers.length): Promise<void> {
  await eventually(async () => {
    for (const w of workers)
      if (w.child.exitCode !== null) throw new Error(`a worker exited (${w.child.exitCode}):\n${w.output()}`)
    // One LISTEN session per running worker.
    return (await listeningSessions(ctx.db)) === count
  }, START_DEADLINE_MS)
}

// PostgreSQL only: several processes on one embedded PGlite directory are refused by design.
for (const backend of backends().filter((b) => b === 'postgres')) {
  describe(`worker processes on one PostgreSQL (${backend})`, () => {
    let ctx: TestContext
    let databaseUrl: string
    const workers: Worker[] = []
    const receivers: Awaited<ReturnType<typeof startReceiver>>[] = []
    const spawnWorker = (env: Record<string, string> = {}) => {
      const worker = startWorker(databaseUrl, env)
      workers.push(worker)
      return worker
    }
    const receiver = async (...args: Parameters<typeof startReceiver>) => {
      const r = await startReceiver(...args)
      receivers.push(r)
      return r
    }

    before(async () => {
      // The API side runs in this process; only the workers are separate programs.
      ctx = await createTestContext(backend)
      databaseUrl = await postgresUrlOf(ctx)
    })
    after(async () => {
      await Promise.all(workers.map(stopWorker))
      await Promise.all(receivers.map((r) => r.close()))
      await ctx?.close()
    })

    it('a worker killed mid-attempt loses nothing: another worker delivers after the lease', async () => {
      let answer = false
      const target = await receiver(() => (answer ? { status: 200 } : 'hang'))
      // The merchant's configured URL: it must get nothing, as the transaction has its own callback_url.
      const bystander = await receiver()
      const put = await call(ctx, 'PUT', '/integration/webhook', { url: `${bystander.url}/hooks` })
      assert.equal(put.statusCode, 200, put.body)

      const env = { WEBHOOK_LEASE_MS: '2000', WEBHOOK_TIMEOUT_MS: '60000' }
      const first = spawnWorker(env)
      await ready(ctx, [first])
      const created = await call(
        ctx,
        'POST',
        '/integration/transactions',
        newTransaction({ callback_url: `${target.url}/callbacks` }),
      )
      assert.equal(created.statusCode, 201, created.body)
      const tx = created.json()
      const paid = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`)
      assert.equal(paid.statusCode, 200, paid.body)

      // The first worker holds the claim while the receiver sits on its request.
      await eventually(async () => target.received.length === 1, START_DEADLINE_MS)
      const claimed = await ctx.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('url', '=', `${target.url}/callbacks`)
        .executeTakeFirstOrThrow()
      assert.equal(claimed.status, 'pending')
      assert.equal(claimed.attempts, 0)
      assert.ok(claimed.locked_by && claimed.locked_until, 'claimed by the first worker')
      const lockedUntil = (claimed.locked_until as Date).getTime()

      first.child.kill('SIGKILL')
      await first.exited
      answer = true
      const second = spawnWorker(env)

      const delivered = await eventually(async () => {
        if (second.child.exitCode !== null)
          throw new Error(`the second worker exited (${second.child.exitCode}):\n${second.output()}`)
        const row = await ctx.db
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('uuid', '=', claimed.uuid)
          .executeTakeFirstOrThrow()
        return row.status === 'succeeded' ? row : null
      }, START_DEADLINE_MS)

      // The killed worker recorded nothing; the second made attempt 1 and succeeded.
      assert.equal(delivered.attempts, 1)
      assert.equal(delivered.response_status, 200)
      assert.equal(delivered.locked_by, null)
      const attempts = await ctx.db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('delivery_uuid', '=', claimed.uuid)
        .orderBy('attempt')
        .execute()
      const [only] = attempts
      assert.ok(attempts.length === 1 && only, `${attempts.length} attempts recorded`)
      assert.notEqual(only.worker, claimed.locked_by)
      assert.equal(only.response_status, 200)

      // The same event twice, the second not before the first claim's lease ran out; nothing anywhere else.
      assert.equal(target.received.length, 2)
      assert.deepEqual(
        target.received.map((r) => r.headers['webhook-id']),
        [claimed.event_id, claimed.event_id],
      )
      const [hung, redelivered] = target.received
      assert.ok(hung && redelivered, 'two requests')
      assert.equal(hung.body, redelivered.body)
      assert.ok(
        redelivered.at >= lockedUntil,
        `redelivered ${lockedUntil - redelivered.at} ms before the lease ended`,
      )
      assert.equal(bystander.received.length, 0)

      // A worker asked to stop gives back its claims and exits cleanly.
      second.child.kill('SIGTERM')
      assert.equal(await second.exited, 0, second.output())
      await call(ctx, 'PUT', '/integration/webhook', { url: null })
    })

    it('two workers deliver 2,000 events: each received, no first attempt made twice, none missing', async () => {
      const COUNT = 2000
      const target = await receiver()
      const put = await call(ctx, 'PUT', '/integration/webhook', { url: `${target.url}/hooks` })
      assert.equal(put.statusCode, 200, put.body)

      const pair = [spawnWorker(), spawnWorker()]
      await ready(ctx, pair)

      // Pending transactions written directly; the payments go through the API (sandbox, provider callback).
      const rows = Array.from({ length: COUNT }, () => transactionRow(ctx.merchant.uuid))
      for (let i = 0; i < rows.length; i += 500)
        await ctx.db
          .insertInto('transactions')
          .values(rows.slice(i, i + 500))
          .execute()
      const started = Date.now()
      const countBy = async (status: 'pending' | 'succeeded') =>
        Number(
          (
            await ctx.db
              .selectFrom('webhook_deliveries')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('status', '=', status)
              .where('url', '=', `${target.url}/hooks`)
              .executeTakeFirstOrThrow()
          ).n,
        )
      let next = 0
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let row = rows[next++]; row; row = rows[next++]) {
            const { uuid } = row
            const res = await call(ctx, 'POST', `/integration/sandbox/transactions/${uuid}/paid`)
            assert.equal(res.statusCode, 200, res.body)
          }
        }),
      )
      const paidMs = Date.now() - started
      process.stdout.write(`# paid ${paidMs} ms, delivered so far ${await countBy('succeeded')}\n`)
      await eventually(
        async () => {
          for (const w of pair)
            if (w.child.exitCode !== null)
              throw new Error(`a worker exited (${w.child.exitCode}):\n${w.output()}`)
          return (await countBy('succeeded')) === COUNT
        },
        90_000,
        100,
      )
      const deliveredMs = Date.now() - started

      const events = await ctx.db
        .selectFrom('events')
        .innerJoin('webhook_deliveries', 'webhook_deliveries.event_id', 'events.uuid')
        .select(['events.uuid as event_id', 'webhook_deliveries.uuid as delivery_uuid'])
        .where(
          'events.aggregate_uuid',
          'in',
          rows.map((r) => r.uuid),
        )
        .execute()
      assert.equal(events.length, COUNT, 'one event and one delivery per payment')
      assert.equal(await countBy('pending'), 0)

      // Every event arrived; nothing arrived that is not one of them.
      const received = target.received.map((r) => r.headers['webhook-id'] as string)
      const distinct = new Set(received)
      const expected = new Set(events.map((e) => e.event_id))
      const missing = [...expected].filter((id) => !distinct.has(id))
      assert.deepEqual(missing, [], `${missing.length} event(s) never received`)
      assert.deepEqual(
        [...distinct].filter((id) => !expected.has(id)),
        [],
      )

      // SKIP LOCKED: no delivery had its first attempt made by two workers (or twice by one).
      const firsts = await ctx.db
        .selectFrom('webhook_attempts')
        .select(['delivery_uuid', (eb) => eb.fn.countAll().as('n')])
        .where('attempt', '=', 1)
        .where(
          'delivery_uuid',
          'in',
          events.map((e) => e.delivery_uuid),
        )
        .groupBy('delivery_uuid')
        .execute()
      assert.equal(firsts.length, COUNT, 'every delivery has its first attempt recorded')
      const twice = firsts.filter((f) => Number(f.n) !== 1)
      assert.deepEqual(twice, [], `${twice.length} deliveries had their first attempt made more than once`)

      // Both processes took part.
      const byWorker = await ctx.db
        .selectFrom('webhook_attempts')
        .select(['worker', (eb) => eb.fn.countAll().as('n')])
        .where(
          'delivery_uuid',
          'in',
          events.map((e) => e.delivery_uuid),
        )
        .groupBy('worker')
        .execute()
      assert.equal(byWorker.length, 2, JSON.stringify(byWorker))

      const summary = `${COUNT} events: paid through the API in ${paidMs} ms, all delivered ${deliveredMs} ms after the first payment; ${received.length} requests received (${received.length - COUNT} repeated), attempts per worker ${byWorker.map((w) => w.n).join(' + ')}`
      process.stdout.write(`# ${summary}\n`)
    })
  })
}

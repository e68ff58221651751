import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { outcomeUnknown } from '../../src/db/bounded.ts'
import { connectPostgres, type DbHandle } from '../../src/db/index.ts'
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts'
import { eventually, testDriver } from '../helpers/harness.ts'
import { listenerPids, onPostgres, terminateSessions } from '../helpers/postgres.ts'

/**
 * The PostgreSQL connection layer when the server ends its sessions (a failover, a restart, an administrator):
 * a transaction cut between two statements fails and rolls back without taking the process down, and the
 * LISTEN session comes back by itself. Only PostgreSQL has sessions to lose; without TEST_DATABASE_URL the
 * local server .ci/run uses is taken.
 */

const ADMIN_URL = onPostgres()
const CHANNEL = 'mg_test_wake'

describe('connection loss (postgres)', () => {
  const name = `mg_test_${randomBytes(6).toString('hex')}`
  let admin: pg.Client
  let handle: DbHandle
  const logged: string[] = []

  /** Ends the sessions on the test database that match `where` (SQL over pg_stat_activity): how many. */
  const terminate = (where?: string): Promise<number> => terminateSessions(admin, name, where)

  /** The LISTEN sessions on the test database, by pid. */
  const listeners = (): Promise<number[]> => listenerPids(admin, name)

  before(async () => {
    admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    const url = new URL(ADMIN_URL)
    url.pathname = `/${name}`
    handle = await connectPostgres(
      url.toString(),
      4,
      {
        warn: (_fields, message) => logged.push(`warn ${message}`),
        info: (_fields, message) => logged.push(`info ${message}`),
      },
      undefined,
      testDriver(),
    )
    await sql`CREATE TABLE notes (id int PRIMARY KEY)`.execute(handle.db)
  })

  after(async () => {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
    await handle?.close()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  })

  it('a transaction cut between statements fails as unavailable, rolls back, and the pool goes on', async () => {
    const failure = await handle.db
      .transaction()
      .execute(async (trx) => {
        await sql`INSERT INTO notes (id) VALUES (1)`.execute(trx)
        const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx)
        // The connection is checked out and idle in its transaction: the server ends it now.
        assert.equal(await terminate(`pid = ${Number(rows[0]?.pid)}`), 1)
        await eventually(async () => {
          const alive = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [rows[0]?.pid])
          return alive.rowCount === 0
        })
        await sql`INSERT INTO notes (id) VALUES (2)`.execute(trx)
      })
      .then(
        () => null,
        (error: unknown) => error,
      )
    assert.ok(failure, 'the transaction failed')
    assert.ok(isDatabaseUnavailable(failure), `unavailable: ${(failure as Error).message}`)
    // Nothing of it was written, and the next statement gets a working connection.
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM notes`.execute(handle.db)
    assert.equal(rows[0]?.n, 0)
  })

  it('a statement past DATABASE_QUERY_TIMEOUT fails as unavailable; its connection never serves again', async () => {
    const url = new URL(ADMIN_URL)
    url.pathname = `/${name}`
    const holder = new pg.Client({ connectionString: url.toString() })
    url.searchParams.set('application_name', 'mg_bounded')
    const bounded = await connectPostgres(url.toString(), 4, undefined, undefined, testDriver(), 1_000)
    await holder.connect()
    try {
      await sql`INSERT INTO notes (id) VALUES (100)`.execute(bounded.db)
      // Another session holds the row, as a transaction waiting for a synchronous standby holds its locks.
      await holder.query('BEGIN')
      await holder.query('SELECT id FROM notes WHERE id = 100 FOR UPDATE')
      const started = Date.now()
      const hung = Array.from({ length: 6 }, (_, i) =>
        bounded.db
          .transaction()
          .execute(async (trx) => {
            await sql`INSERT INTO notes (id) VALUES (${200 + i})`.execute(trx)
            await sql`UPDATE notes SET id = ${300 + i} WHERE id = 100`.execute(trx)
          })
          .then(
            () => null,
            (error: unknown) => error,
          ),
      )
      // Six transactions on a pool of four: the first wait out the bound on the lock, the rest for a connection.
      const failures = await Promise.all(hung)
      for (const failure of failures) {
        assert.ok(failure, 'the transaction failed')
        assert.ok(isDatabaseUnavailable(failure), `unavailable: ${(failure as Error).message}`)
      }
      assert.ok(
        failures.some((failure) => (failure as Error).message.includes('did not answer within 1000 ms')),
      )
      assert.ok(Date.now() - started < 20_000)
      // While the statements wait, the process holds no more connections than its pool allows.
      const open = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'mg_bounded'`,
        [name],
      )
      assert.ok((open.rows[0]?.n ?? 0) <= 4, `${open.rows[0]?.n} connections`)
      // The lock goes: the waiting UPDATEs end inside transactions nobody will commit. Their connections are
      // closed, not handed out: nothing of them is written, and the pool serves the next request.
      await holder.query('ROLLBACK')
      await eventually(async () => {
        const { rows } = await admin.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND state LIKE 'idle in transaction%'`,
          [name],
        )
        return rows[0]?.n === 0
      })
      const { rows } = await sql<{ id: number }>`SELECT id FROM notes ORDER BY id`.execute(bounded.db)
      assert.deepEqual(
        rows.map((row) => row.id),
        [100],
      )
    } finally {
      await holder.end().catch(() => {})
      await bounded.close()
      await sql`DELETE FROM notes`.execute(handle.db)
    }
  })

  it('a write outside a transaction past the bound is marked as of unknown outcome, and may yet apply', async () => {
    const url = new URL(ADMIN_URL)
    url.pathname = `/${name}`
    const holder = new pg.Client({ connectionString: url.toString() })
    await holder.connect()
    const bounded = await connectPostgres(url.toString(), 4, undefined, undefined, testDriver(), 1_000)
    try {
      await sql`INSERT INTO notes (id) VALUES (100)`.execute(bounded.db)
      await holder.query('BEGIN')
      await holder.query('SELECT id FROM notes WHERE id = 100 FOR UPDATE')
      const inTransaction = await bounded.db
        .transaction()
        .execute((trx) => sql`UPDATE notes SET id = 101 WHERE id = 100`.execute(trx))
        .then(
          () => null,
          (error: unknown) => error,
        )
      const alone = await sql`UPDATE notes SET id = 102 WHERE id = 100`.execute(bounded.db).then(
        () => null,
        (error: unknown) => error,
      )
      assert.ok(isDatabaseUnavailable(inTransaction) && isDatabaseUnavailable(alone))
      // The transaction's UPDATE can never commit (its connection is closed once it ends); the lone one can.
      assert.equal(outcomeUnknown(inTransaction), false)
      assert.equal(outcomeUnknown(alone), true)
      await holder.query('ROLLBACK')
      await eventually(async () => {
        const { rows } = await sql<{ id: number }>`SELECT id FROM notes`.execute(handle.db)
        return rows.length === 1 && rows[0]?.id === 102
      })
    } finally {
      await holder.end().catch(() => {})
      await bounded.close()
      await sql`DELETE FROM notes`.execute(handle.db)
    }
  })

  it('idle connections cut by the server are replaced', async () => {
    await Promise.all([1, 2, 3].map((id) => sql`INSERT INTO notes (id) VALUES (${id})`.execute(handle.db)))
    assert.ok((handle.poolStats()?.idle ?? 0) >= 1)
    assert.ok((await terminate()) >= 1)
    // The pool drops each as its end arrives (a query sent on one before that fails as unavailable, 503).
    await eventually(async () => handle.poolStats()?.total === 0)
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM notes`.execute(handle.db)
    assert.equal(rows[0]?.n, 3)
  })

  it('the LISTEN session comes back after a cut, says so once, and hears NOTIFY again', async () => {
    let notified = 0
    const off = await handle.listen(CHANNEL, () => notified++)
    try {
      const [first] = await eventually(async () => {
        const pids = await listeners()
        return pids.length === 1 ? pids : null
      })
      await sql`SELECT pg_notify(${CHANNEL}, '')`.execute(handle.db)
      await eventually(async () => notified === 1)

      assert.equal(await terminate(`pid = ${Number(first)}`), 1)
      // Back on another session, and one call for whatever was notified while it was away.
      const [second] = await eventually(async () => {
        const pids = await listeners()
        return pids.length === 1 && pids[0] !== first ? pids : null
      }, 5_000)
      await eventually(async () => notified === 2)
      assert.ok(second)
      await sql`SELECT pg_notify(${CHANNEL}, '')`.execute(handle.db)
      await eventually(async () => notified === 3)
      assert.deepEqual(
        logged.filter((line) => line.includes('LISTEN')),
        ['warn LISTEN session lost; reconnecting', 'info LISTEN session reconnected'],
      )
    } finally {
      await off()
    }
    await eventually(async () => (await listeners()).length === 0)
  })

  it('while the database refuses connections the session retries; unsubscribing stops it', async () => {
    let notified = 0
    const off = await handle.listen(CHANNEL, () => notified++)
    await eventually(async () => (await listeners()).length === 1)
    logged.length = 0
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
    try {
      assert.ok((await terminate()) >= 1)
      await eventually(async () => logged.includes('warn LISTEN session lost; reconnecting'))
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
    }
    // Back once the database takes connections again (the delay has grown by then, up to 5 s).
    await eventually(async () => (await listeners()).length === 1 && notified === 1, 10_000)

    // Cut again, and unsubscribed while it waits to reconnect: it stays away.
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
    try {
      assert.ok((await terminate()) >= 1)
      await eventually(async () => logged.filter((line) => line.startsWith('warn')).length === 2)
      await off()
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
    }
    // Longer than the first delays of the backoff (100 ms, then 200 ms, 400 ms, each at most): no session.
    const deadline = Date.now() + 800
    while (Date.now() < deadline) {
      assert.deepEqual(await listeners(), [])
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.equal(notified, 1)
  })
})

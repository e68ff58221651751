import assert from 'node:assert/strict'
import { Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import type { Db } from '../../src/db/index.ts'
import { backends, freshDatabase, postgresUrlOf } from '../helpers/harness.ts'

/**
 * On PostgreSQL, statements outside a transaction share a few pipelined connections
 * (src/db/driver/prepared.ts); a transaction has a connection of its own. The embedded database has one
 * connection and no sharing.
 */
const pid = (db: Db, tag: number) =>
  sql<{ pid: number; tag: number }>`SELECT pg_backend_pid() AS pid, ${tag}::int AS tag`
    .execute(db)
    .then((result) => result.rows[0] as { pid: number; tag: number })

if (backends().includes('postgres'))
  describe('shared connections (postgres)', () => {
    let fresh: Awaited<ReturnType<typeof freshDatabase>>
    let db: Db
    let admin: pg.Client

    before(async () => {
      fresh = await freshDatabase('postgres', 'prepared')
      db = fresh.handle.db
      await sql`CREATE TABLE items (id int PRIMARY KEY, note text NOT NULL)`.execute(db)
      await sql`INSERT INTO items VALUES (1, 'one')`.execute(db)
      // On the suite's own database: advisory locks are a database's, and the lock test below needs another
      // session of this one.
      admin = new pg.Client({ connectionString: await postgresUrlOf({ db }) })
      await admin.connect()
    })
    after(async () => {
      await admin?.end()
      await fresh?.drop()
    })

    it('concurrent statements get their own answers, over the few shared connections', async () => {
      const answers = await Promise.all(Array.from({ length: 300 }, (_, n) => pid(db, n)))
      assert.deepEqual(
        answers.map((answer) => answer.tag),
        answers.map((_, n) => n),
      )
      // The harness's pool of 20: 5 shared.
      const pids = new Set(answers.map((answer) => answer.pid))
      assert.ok(pids.size >= 1 && pids.size <= 5, `${pids.size} connections`)
    })

    it('the statements one turn of the event loop sends to a shared connection leave in one write', async () => {
      // Every shared connection open first, so that none of the statements below waits for one to connect.
      await Promise.all(Array.from({ length: 300 }, (_, n) => pid(db, n)))
      // The writes each socket makes to the kernel meanwhile (only the database's sockets write in this test).
      const writes = new Map<Socket, number>()
      const counted = <T extends (...args: never[]) => unknown>(original: T) =>
        function (this: Socket, ...args: Parameters<T>) {
          writes.set(this, (writes.get(this) ?? 0) + 1)
          return original.apply(this, args)
        }
      const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (...args: never[]) => unknown>
      const { _write: write, _writev: writev } = proto
      proto._write = counted(write)
      proto._writev = counted(writev)
      let answers: { pid: number; tag: number }[]
      try {
        answers = await Promise.all(Array.from({ length: 40 }, (_, n) => pid(db, n)))
      } finally {
        proto._write = write
        proto._writev = writev
      }
      assert.deepEqual(
        answers.map((answer) => answer.tag),
        answers.map((_, n) => n),
      )
      // One write per shared connection that took statements (the harness's pool of 20: 5 shared), not one per
      // statement.
      const connections = new Set(answers.map((answer) => answer.pid)).size
      assert.deepEqual(
        [...writes.values()],
        Array.from({ length: connections }, () => 1),
        `writes per socket for 40 statements on ${connections} connections`,
      )
    })

    it('a transaction runs on a connection of its own, and the shared ones go on meanwhile', async () => {
      const shared = new Set(
        (await Promise.all(Array.from({ length: 50 }, (_, n) => pid(db, n)))).map((a) => a.pid),
      )
      let release: () => void = () => {}
      const held = new Promise<void>((resolve) => {
        release = resolve
      })
      let inside = 0
      const transaction = db.transaction().execute(async (trx) => {
        inside = (await pid(trx as unknown as Db, 0)).pid
        await sql`UPDATE items SET note = 'locked' WHERE id = 1`.execute(trx)
        await held
      })
      // While the transaction holds its row lock, statements outside it run (and read the committed row).
      const deadline = Date.now() + 5_000
      while (inside === 0 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve))
      assert.ok(inside !== 0, 'the transaction started')
      assert.ok(!shared.has(inside), 'the transaction is not on a shared connection')
      const { rows } = await sql<{ note: string }>`SELECT note FROM items WHERE id = ${1}`.execute(db)
      assert.deepEqual(rows, [{ note: 'one' }])
      release()
      await transaction
      const after = await sql<{ note: string }>`SELECT note FROM items WHERE id = ${1}`.execute(db)
      assert.deepEqual(after.rows, [{ note: 'locked' }])
    })

    it('a statement that fails, fails alone: the ones pipelined beside it succeed', async () => {
      const results = await Promise.allSettled(
        Array.from({ length: 60 }, (_, n) =>
          // Every fifth inserts the existing id 1 (a unique violation).
          sql`INSERT INTO items VALUES (${n % 5 === 0 ? 1 : 100 + n}, ${`n${n}`})`.execute(db),
        ),
      )
      results.forEach((result, n) => {
        if (n % 5 === 0) {
          assert.equal(result.status, 'rejected', `statement ${n}`)
          assert.equal((result as PromiseRejectedResult).reason.code, '23505')
        } else assert.equal(result.status, 'fulfilled', `statement ${n}`)
      })
      const { rows } = await sql<{
        n: number
      }>`SELECT count(*)::int AS n FROM items WHERE id >= ${100}`.execute(db)
      assert.equal(rows[0]?.n, 48)
    })

    it('a shared connection that is cut fails the statements on it; the next ones run on a new one', async () => {
      const before = new Set(
        (await Promise.all(Array.from({ length: 50 }, (_, n) => pid(db, n)))).map((a) => a.pid),
      )
      // Statements in flight (each waits 0.2 s in PostgreSQL) when every shared connection is ended.
      const inFlight = Array.from({ length: 10 }, (_, n) =>
        sql`SELECT pg_sleep(0.2), ${n}::int AS tag`.execute(db).then(
          () => 'answered',
          () => 'failed',
        ),
      )
      await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [[...before]])
      const outcomes = await Promise.all(inFlight)
      assert.ok(outcomes.includes('failed'), JSON.stringify(outcomes))
      // The next statements are answered, on connections other than the ended ones.
      const deadline = Date.now() + 10_000
      for (;;) {
        const answers = await Promise.allSettled(Array.from({ length: 20 }, (_, n) => pid(db, n)))
        const answered = answers.filter((a) => a.status === 'fulfilled').map((a) => a.value)
        if (answered.length === answers.length) {
          for (const answer of answered) assert.ok(!before.has(answer.pid))
          break
        }
        assert.ok(Date.now() < deadline, 'statements still fail 10 s after the connections were cut')
      }
    })

    it("a session-level lock, a transaction, then the unlock: one connection, as Kysely's migrator needs", async () => {
      await db.connection().execute(async (conn) => {
        await sql`SELECT pg_advisory_lock(4242)`.execute(conn)
        await conn.transaction().execute((trx) => sql`SELECT 1`.execute(trx))
        const { rows } = await sql<{ ok: boolean }>`SELECT pg_advisory_unlock(4242) AS ok`.execute(conn)
        assert.equal(rows[0]?.ok, true, 'unlocked on the session that holds the lock')
      })
      // Nothing is left holding it: another session takes it at once.
      const { rows } = await admin.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(4242) AS ok')
      assert.equal(rows[0]?.ok, true)
      await admin.query('SELECT pg_advisory_unlock(4242)')
    })

    it('a connection taken with db.connection() keeps its statements in order, and a transaction on it', async () => {
      await db.connection().execute(async (conn) => {
        await sql`INSERT INTO items VALUES (${2}, 'two')`.execute(conn)
        const { rows } = await sql<{ note: string }>`SELECT note FROM items WHERE id = ${2}`.execute(conn)
        assert.deepEqual(rows, [{ note: 'two' }])
        await assert.rejects(
          conn.transaction().execute(async (trx) => {
            await sql`UPDATE items SET note = 'changed' WHERE id = ${2}`.execute(trx)
            throw new Error('roll back')
          }),
          /roll back/,
        )
        const again = await sql<{ note: string }>`SELECT note FROM items WHERE id = ${2}`.execute(conn)
        assert.deepEqual(again.rows, [{ note: 'two' }])
      })
    })
  })

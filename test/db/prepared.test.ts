import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { mapValue } from '../../src/db/driver/shaped-query.ts'
import type { Db } from '../../src/db/index.ts'
import { backends, suiteDatabase } from '../helpers/harness.ts'

/** Counts the Describe messages node-postgres sends, from now until stop(). */
function countDescribes() {
  const proto = (pg as unknown as { Connection: { prototype: { describe: (...a: unknown[]) => unknown } } })
    .Connection.prototype
  const original = proto.describe
  let count = 0
  proto.describe = function (this: unknown, ...args: unknown[]) {
    count++
    return original.apply(this, args)
  }
  return {
    count: () => count,
    stop: () => {
      proto.describe = original
    },
  }
}

interface Prepared {
  name: string
  statement: string
}

for (const backend of backends()) {
  describe(`prepared statements (${backend})`, () => {
    const database = suiteDatabase(backend, 'prepared')
    let db: Db

    before(async () => {
      db = database()
      await sql`CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL)`.execute(db)
    })

    it('a statement with parameters is prepared once on its connection and reused', async () => {
      await db.connection().execute(async (conn) => {
        for (let id = 1; id <= 3; id++)
          await conn
            .insertInto('notes' as never)
            .values({ id, body: `note ${id}` } as never)
            .execute()
        const { rows } = await sql<Prepared>`SELECT name, statement FROM pg_prepared_statements`.execute(conn)
        const inserts = rows.filter((row) => row.statement.startsWith('insert into "notes"'))
        assert.equal(inserts.length, 1, JSON.stringify(rows))
        assert.match(inserts[0]?.name ?? '', /^mg_\d+$/)
      })
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM notes`.execute(db)
      assert.equal(rows[0]?.n, 3)
    })

    it('a failing execution leaves the prepared statement usable, in and out of a transaction', async () => {
      const insert = (trx: Db, id: number) =>
        trx
          .insertInto('notes' as never)
          .values({ id, body: 'again' } as never)
          .execute()
      await assert.rejects(insert(db, 1), /duplicate key/)
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await insert(trx as unknown as Db, 10)
          await insert(trx as unknown as Db, 1)
        }),
        /duplicate key/,
      )
      await insert(db, 11)
      const { rows } = await sql<{ id: number }>`SELECT id FROM notes ORDER BY id`.execute(db)
      assert.deepEqual(
        rows.map((row) => row.id),
        [1, 2, 3, 11],
      )
    })

    /** A table of one row, and a prepared `SELECT *` of that row. */
    const shapes = async (table: string) => {
      await sql`CREATE TABLE ${sql.table(table)} (id int PRIMARY KEY, a text NOT NULL)`.execute(db)
      await sql`INSERT INTO ${sql.table(table)} VALUES (1, 'x')`.execute(db)
      return (executor: Db) =>
        executor
          .selectFrom(table as never)
          .selectAll()
          .where('id' as never, '=', 1 as never)
          .executeTakeFirst()
    }

    it('after a column is added, a prepared SELECT * runs again prepared anew, outside a transaction', async () => {
      const read = await shapes('shapes')
      await db.connection().execute(async (conn) => {
        assert.deepEqual(await read(conn), { id: 1, a: 'x' })
        await sql`ALTER TABLE shapes ADD COLUMN b text NOT NULL DEFAULT 'y'`.execute(conn)
        // The same connection still holds the statement prepared for two columns.
        assert.deepEqual(await read(conn), { id: 1, a: 'x', b: 'y' })
        assert.deepEqual(await read(conn), { id: 1, a: 'x', b: 'y' })
      })
    })

    it('inside a transaction the stale statement fails that transaction once; its retry succeeds', async () => {
      const read = await shapes('shapes2')
      await db.connection().execute(async (conn) => {
        // Prepared in a transaction: on PostgreSQL this connection is then one of the pool's, not a shared one,
        // and keeps it for the statements after.
        assert.deepEqual(await conn.transaction().execute((trx) => read(trx as unknown as Db)), {
          id: 1,
          a: 'x',
        })
        await sql`ALTER TABLE shapes2 ADD COLUMN b int NOT NULL DEFAULT 2`.execute(conn)
        await assert.rejects(
          conn.transaction().execute((trx) => read(trx as unknown as Db)),
          /cached plan must not change result type/,
        )
        assert.deepEqual(await conn.transaction().execute((trx) => read(trx as unknown as Db)), {
          id: 1,
          a: 'x',
          b: 2,
        })
      })
    })

    it('a repeated statement reads its rows with the shape it learned: every type, null, key order', async () => {
      await sql`CREATE TABLE typed (id int PRIMARY KEY, big bigint, at timestamptz, doc jsonb, ok boolean, n numeric)`.execute(
        db,
      )
      await sql`INSERT INTO typed VALUES (1, 9007199254740991, '2026-01-02T03:04:05.678Z', '{"k":[1,"x"]}', true, 1.50),
        (2, NULL, NULL, NULL, NULL, NULL)`.execute(db)
      const read = (id: number) =>
        db
          .selectFrom('typed' as never)
          .selectAll()
          .where('id' as never, '=', id as never)
          .executeTakeFirst() as Promise<Record<string, unknown> | undefined>
      const describes = countDescribes()
      try {
        for (let round = 0; round < 3; round++) {
          const full = await read(1)
          assert.deepEqual(full, {
            id: 1,
            big: 9007199254740991,
            at: new Date('2026-01-02T03:04:05.678Z'),
            doc: { k: [1, 'x'] },
            ok: true,
            n: '1.50',
          })
          assert.deepEqual(Object.keys(full ?? {}), ['id', 'big', 'at', 'doc', 'ok', 'n'])
          assert.deepEqual(await read(2), { id: 2, big: null, at: null, doc: null, ok: null, n: null })
          assert.equal(await read(3), undefined)
        }
        // A column named twice keeps the last value, as node-postgres' own rows do.
        for (let round = 0; round < 2; round++) {
          const { rows } = await sql<{ a: number }>`SELECT ${1}::int AS a, 2 AS a`.execute(db)
          assert.deepEqual(rows, [{ a: 2 }])
        }
      } finally {
        describes.stop()
      }
      // Described while the shape is learned (once per connection at most), not on every execution. (The
      // embedded database's adapter writes its messages without node-postgres' Connection: nothing to count.)
      if (backend === 'postgres')
        assert.ok(
          describes.count() >= 1 && describes.count() <= 4,
          `${describes.count()} Describe messages for 11 executions`,
        )
    })

    it('a Date parameter goes as its ISO text in UTC, the same instant; one outside years 1-9999 as node-postgres writes it', async () => {
      const at = new Date('2026-01-02T03:04:05.678Z')
      assert.equal(mapValue(at, 0), '2026-01-02T03:04:05.678Z')
      // The years toISOString writes as PostgreSQL reads them, 1 to 9999; outside, node-postgres' text.
      const first = Date.parse('0001-01-01T00:00:00.000Z')
      const last = Date.parse('9999-12-31T23:59:59.999Z')
      assert.equal(mapValue(new Date(first), 0), '0001-01-01T00:00:00.000Z')
      assert.equal(mapValue(new Date(last), 0), '9999-12-31T23:59:59.999Z')
      assert.match(String(mapValue(new Date(first - 1), 0)), / BC$/)
      assert.doesNotMatch(String(mapValue(new Date(last + 1), 0)), /^\+/)
      assert.match(String(mapValue(new Date(last + 1), 0)), /^10000-01-01/)
      assert.equal(mapValue('text', 0), 'text')
      assert.equal(mapValue(null, 0), null)
      assert.equal(mapValue(12, 0), '12')

      await sql`CREATE TABLE dated (id int PRIMARY KEY, at timestamptz NOT NULL)`.execute(db)
      // Repeated, so that the later executions bind with the shape learned (and this mapping).
      for (let id = 1; id <= 4; id++) {
        const when = new Date(at.getTime() + id)
        await sql`INSERT INTO dated VALUES (${id}, ${when})`.execute(db)
        const { rows } = await sql<{
          id: number
          at: Date
        }>`SELECT id, at FROM dated WHERE at = ${when}`.execute(db)
        assert.deepEqual(rows, [{ id, at: when }])
      }
    })

    it('a column whose type changes is read with its new type', async () => {
      const read = await shapes('shapes3')
      await db.connection().execute(async (conn) => {
        assert.deepEqual(await read(conn), { id: 1, a: 'x' })
        assert.deepEqual(await read(conn), { id: 1, a: 'x' })
        await sql`ALTER TABLE shapes3 ALTER COLUMN a TYPE int USING 7`.execute(conn)
        assert.deepEqual(await read(conn), { id: 1, a: 7 })
        assert.deepEqual(await read(conn), { id: 1, a: 7 })
      })
    })

    it('a statement without parameters is not prepared', async () => {
      await db.connection().execute(async (conn) => {
        await sql`SELECT count(*) FROM notes WHERE body <> 'x'`.execute(conn)
        const { rows } = await sql<Prepared>`SELECT name, statement FROM pg_prepared_statements`.execute(conn)
        assert.ok(!rows.some((row) => row.statement.includes("<> 'x'")), JSON.stringify(rows))
      })
    })
  })
}

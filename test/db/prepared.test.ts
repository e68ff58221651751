import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import type { Db } from '../../src/db/index.ts'
import { backends, suiteDatabase } from '../helpers/harness.ts'

interface Prepared {
  name: string
  statement: string
}

for (const backend of backends()) {
  describe(`prepared statements (${backend})`, () => {
    const database = suiteDatabase(backend)
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
        assert.deepEqual(await read(conn), { id: 1, a: 'x' })
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

    it('a statement without parameters is not prepared', async () => {
      await db.connection().execute(async (conn) => {
        await sql`SELECT count(*) FROM notes WHERE body <> 'x'`.execute(conn)
        const { rows } = await sql<Prepared>`SELECT name, statement FROM pg_prepared_statements`.execute(conn)
        assert.ok(!rows.some((row) => row.statement.includes("<> 'x'")), JSON.stringify(rows))
      })
    })
  })
}

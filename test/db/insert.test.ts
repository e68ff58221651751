import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { insertReturning, selectOneBy } from '../../src/db/driver/insert.ts'
import type { Db } from '../../src/db/index.ts'
import { backends, suiteDatabase } from '../helpers/harness.ts'

// The helper is typed by the service's tables; this table stands in for one of them.
const TABLE = 'insert_probe' as 'merchants'
type Row = Record<string, unknown>
const ALL = ['id', 'label', 'note', 'at']
const insert = (db: Db, row: Row, returning = ALL) =>
  insertReturning(db, TABLE, row as never, returning as never) as Promise<Row>

for (const backend of backends()) {
  describe(`insertReturning (${backend})`, () => {
    const database = suiteDatabase(backend, 'prepared')
    let db: Db

    before(async () => {
      db = database()
      await sql`CREATE TABLE insert_probe (
        id int PRIMARY KEY,
        label text NOT NULL DEFAULT 'unnamed',
        note text,
        at timestamptz NOT NULL DEFAULT now()
      )`.execute(db)
    })

    it('inserts the row and returns it whole, with the same statement each time', async () => {
      const at = new Date('2026-01-02T03:04:05.678Z')
      for (let id = 1; id <= 3; id++) {
        const row = await insert(db, { id, label: `row ${id}`, note: null, at })
        assert.deepEqual(row, { id, label: `row ${id}`, note: null, at })
      }
    })

    it('returns only the columns named, whichever were inserted', async () => {
      const at = new Date('2026-01-02T03:04:05.678Z')
      // The same columns inserted as above: a statement of its own for each list of returned columns.
      assert.deepEqual(await insert(db, { id: 4, label: 'four', note: null, at }, ['label']), {
        label: 'four',
      })
      assert.deepEqual(await insert(db, { id: 5, label: 'five', note: 'n5', at }, ['note', 'id']), {
        note: 'n5',
        id: 5,
      })
      assert.deepEqual(await insert(db, { id: 6, label: 'six', note: null, at }), {
        id: 6,
        label: 'six',
        note: null,
        at,
      })
    })

    it('leaves out a column whose value is undefined, so its default applies', async () => {
      const row = await insert(db, { id: 10, label: undefined, note: 'n', at: new Date(0) })
      assert.equal(row.label, 'unnamed')
      assert.equal(row.note, 'n')
    })

    it('gives a row with the same columns in another order, fewer of them or more, a statement of its own', async () => {
      const at = new Date('2026-01-02T03:04:05.678Z')
      assert.deepEqual(await insert(db, { note: 'n11', at, id: 11, label: 'eleven' }), {
        id: 11,
        label: 'eleven',
        note: 'n11',
        at,
      })
      const fewer = await insert(db, { id: 12, label: 'twelve' })
      assert.equal(fewer.label, 'twelve')
      assert.equal(fewer.note, null)
      assert.equal((await insert(db, { id: 13 })).label, 'unnamed')
      assert.deepEqual(await insert(db, { id: 14, label: 'fourteen', note: 'n14', at }, ['id', 'note']), {
        id: 14,
        note: 'n14',
      })
      assert.deepEqual(await insert(db, { id: 15, label: 'fifteen', note: 'n15', at }, ['id']), { id: 15 })
    })

    it('goes through Kysely when a value is an SQL expression', async () => {
      for (const id of [20, 21]) {
        const row = await insert(db, { id, label: sql`upper(${'x'})`, note: null, at: sql`now()` })
        assert.equal(row.label, 'X')
        assert.ok(row.at instanceof Date)
      }
    })

    it('runs inside a transaction and rolls back with it; a duplicate key is the database error', async () => {
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await insert(trx as unknown as Db, { id: 30, label: 'a', note: null, at: new Date() })
          await insert(trx as unknown as Db, { id: 1, label: 'b', note: null, at: new Date() })
        }),
        /duplicate key/,
      )
      const { rows } = await sql<{
        n: number
      }>`SELECT count(*)::int AS n FROM insert_probe WHERE id = 30`.execute(db)
      assert.equal(rows[0]?.n, 0)
    })

    it('selectOneBy reads the row by a key column, as Kysely reads it, with the same statement each time', async () => {
      const by = (column: string, value: string) =>
        selectOneBy(db, TABLE, column as never, value) as Promise<Row | undefined>
      for (const id of [1, 2, 3]) {
        const kysely = await db
          .selectFrom(TABLE)
          .selectAll()
          .where('id' as never, '=', String(id) as never)
          .executeTakeFirst()
        assert.deepEqual(await by('id', String(id)), kysely)
        assert.equal((await by('id', String(id)))?.label, `row ${id}`)
      }
      // Another column is a statement of its own; a value that matches nothing is undefined.
      assert.equal((await by('label', 'row 2'))?.id, 2)
      assert.equal(await by('id', '999'), undefined)
      assert.equal(await by('label', 'no such label'), undefined)
    })
  })
}

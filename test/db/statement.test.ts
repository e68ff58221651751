import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { compiledOnce, isKept } from '../../src/db/driver/statement.ts'
import type { Db } from '../../src/db/index.ts'
import { backends, suiteDatabase } from '../helpers/harness.ts'

// The builder is typed by the service's tables; this table stands in for one of them.
const TABLE = 'statement_probe' as 'merchants'
type Row = { id: number; label: string; note: string | null; at: Date }
// biome-ignore lint/suspicious/noExplicitAny: a table the service's types do not know
const probe = (db: Db) => db as any
/** A key of its own for each backend's suite: the statements are kept per process. */
let suite = 0

for (const backend of backends()) {
  describe(`compiledOnce (${backend})`, () => {
    const database = suiteDatabase(backend, 'prepared')
    let db: Db
    const key = (name: string) => `test.${suite}.${name}`

    before(async () => {
      suite++
      db = database()
      await sql`CREATE TABLE statement_probe (id int PRIMARY KEY, label text NOT NULL, note text, at timestamptz NOT NULL)`.execute(
        db,
      )
      await sql`INSERT INTO statement_probe VALUES
        (1, 'one', null, '2026-01-01T00:00:00Z'), (2, 'two', 'n2', '2026-01-02T00:00:00Z'),
        (3, 'three', 'n3', '2026-01-03T00:00:00Z'), (4, 'two', 'n4', '2026-01-04T00:00:00Z')`.execute(db)
    })

    /** Rows with this label and an id above `above`, by id: two values, in the order the statement takes them. */
    const labelledQuery = (label: unknown, above: unknown) =>
      probe(db).selectFrom(TABLE).selectAll().where('label', '=', label).where('id', '>', above).orderBy('id')
    const labelled = (label: unknown, above: number) =>
      compiledOnce(db, key('labelled'), [label, above] as const, labelledQuery)

    it('builds the statement once and reuses its text with each call’s values, as Kysely would build it', async () => {
      const first = labelled('two', 0)
      assert.ok(isKept(key('labelled')))
      const again = labelled('two', 2)
      const kysely = labelledQuery('two', 2).compile()
      assert.equal(again.sql, kysely.sql)
      assert.deepEqual(again.parameters, ['two', 2])
      assert.equal(again.sql, first.sql)
      const ids = async (statement: typeof first) =>
        (await db.executeQuery<Row>(statement)).rows.map((r) => r.id)
      assert.deepEqual(await ids(first), [2, 4])
      assert.deepEqual(await ids(again), [4])
      assert.deepEqual(await ids(labelled('one', 0)), [1])
      assert.deepEqual(await ids(labelled('three', 3)), [])
      // A later call with an SQL expression for a value: built by Kysely, not sent as a parameter.
      const expression = labelled(sql<string>`'t' || 'wo'`, 3)
      assert.deepEqual(expression.parameters, [3])
      assert.deepEqual(await ids(expression), [4])
    })

    it('keeps a constant of the statement and puts a value used twice in both places', async () => {
      const update = (id: number, label: string, at: Date) =>
        compiledOnce(db, key('update'), [id, label, at] as const, (id, label, at) =>
          probe(db)
            .updateTable(TABLE)
            .set({ label, note: 'updated', at })
            .where('id', '=', id)
            .where('at', '<', at)
            .returningAll(),
        )
      const at = new Date('2026-02-01T00:00:00.000Z')
      const [row] = (await db.executeQuery<Row>(update(3, 'THREE', at))).rows
      assert.deepEqual(row, { id: 3, label: 'THREE', note: 'updated', at })
      assert.ok(isKept(key('update')))
      const later = new Date('2026-03-01T00:00:00.000Z')
      const kept = update(1, 'ONE', later)
      assert.deepEqual(kept.parameters, ['ONE', 'updated', later, 1, later])
      assert.deepEqual((await db.executeQuery<Row>(kept)).rows, [
        { id: 1, label: 'ONE', note: 'updated', at: later },
      ])
      // Its own condition still holds: not earlier than the row's time, so nothing changes.
      assert.deepEqual((await db.executeQuery<Row>(update(1, 'again', later))).rows, [])
    })

    it('does not keep a statement whose text depends on a value, and builds it right each time', async () => {
      const byNote = (note: string | null) =>
        compiledOnce(db, key('byNote'), [note] as const, (note) =>
          probe(db)
            .selectFrom(TABLE)
            .select('id')
            .where('note', note === null ? 'is' : '=', note)
            .orderBy('id'),
        )
      const ids = async (note: string | null) =>
        (await db.executeQuery<{ id: number }>(byNote(note))).rows.map((r) => r.id)
      assert.deepEqual(await ids(null), [])
      assert.equal(isKept(key('byNote')), false)
      assert.deepEqual(await ids('n4'), [4])
      assert.deepEqual(await ids(null), [])
    })

    it('does not keep a statement that makes a value of its own in each build', async () => {
      let built = 0
      const stamped = (id: number) =>
        compiledOnce(db, key('stamped'), [id] as const, (id) => {
          built++
          return probe(db)
            .selectFrom(TABLE)
            .select('id')
            .where('id', '=', id)
            .where('at', '<', new Date(Date.UTC(2027, 0, 1) + built))
        })
      assert.deepEqual((await db.executeQuery(stamped(2))).rows, [{ id: 2 }])
      assert.equal(isKept(key('stamped')), false)
      const before = built
      assert.deepEqual((await db.executeQuery(stamped(4))).rows, [{ id: 4 }])
      assert.equal(built, before + 1, 'built again on the next call')
    })

    it('builds through Kysely every time when a value is not a plain one (a list)', async () => {
      let built = 0
      const among = (ids: readonly number[]) =>
        compiledOnce(db, key('among'), [ids] as const, (ids) => {
          built++
          return probe(db).selectFrom(TABLE).select('id').where('id', 'in', ids).orderBy('id')
        })
      assert.deepEqual((await db.executeQuery(among([1, 2]))).rows, [{ id: 1 }, { id: 2 }])
      assert.deepEqual((await db.executeQuery(among([2, 3, 4]))).rows, [{ id: 2 }, { id: 3 }, { id: 4 }])
      assert.equal(built, 2)
      assert.equal(isKept(key('among')), false)
    })

    it('builds every statement of an executor with a plugin, so that the plugin sees each one', async () => {
      const seen: string[] = []
      const watched = db.withPlugin({
        transformQuery: ({ node }) => {
          seen.push(node.kind)
          return node
        },
        transformResult: async ({ result }) => result,
      })
      const byId = (id: number) =>
        compiledOnce(watched, key('watched'), [id] as const, (id) =>
          probe(watched).selectFrom(TABLE).select('id').where('id', '=', id),
        )
      for (const id of [1, 2, 3]) assert.deepEqual((await watched.executeQuery(byId(id))).rows, [{ id }])
      assert.deepEqual(seen, ['SelectQueryNode', 'SelectQueryNode', 'SelectQueryNode'])
      assert.equal(isKept(key('watched')), false)
      // The same statement without the plugin is kept.
      compiledOnce(db, key('watched'), [1] as const, (id) =>
        probe(db).selectFrom(TABLE).select('id').where('id', '=', id),
      )
      assert.ok(isKept(key('watched')))
    })
  })
}

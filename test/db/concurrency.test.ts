import assert from 'node:assert/strict'
import { before, beforeEach, describe, it } from 'node:test'
import { sql } from 'kysely'
import type { Db } from '../../src/db/index.ts'
import { deferred } from '../helpers/deferred.ts'
import { backends, suiteDatabase } from '../helpers/harness.ts'

/** Lets every other ready promise and I/O callback run, so concurrent transactions get a chance to interleave. */
const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

async function counterValue(db: Db): Promise<number> {
  const { rows } = await sql<{ value: number }>`SELECT value FROM counters WHERE id = 1`.execute(db)
  return rows[0]?.value ?? Number.NaN
}

async function ownersOf(db: Db): Promise<{ owner: number; n: number }[]> {
  const { rows } = await sql<{
    owner: number
    n: number
  }>`SELECT owner, n FROM items ORDER BY owner, n`.execute(db)
  return rows
}

for (const backend of backends()) {
  describe(`database transactions (${backend})`, () => {
    const database = suiteDatabase(backend)
    let db: Db

    before(async () => {
      db = database()
      await sql`CREATE TABLE counters (id int PRIMARY KEY, value int NOT NULL)`.execute(db)
      await sql`CREATE TABLE items (owner int NOT NULL, n int NOT NULL)`.execute(db)
    })
    beforeEach(async () => {
      await sql`DELETE FROM items`.execute(db)
      await sql`DELETE FROM counters`.execute(db)
      await sql`INSERT INTO counters (id, value) VALUES (1, 0)`.execute(db)
    })

    it('20 concurrent read-modify-write transactions with SELECT … FOR UPDATE lose no update', async () => {
      const order: number[] = []
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          db.transaction().execute(async (trx) => {
            const { rows } = await sql<{
              value: number
            }>`SELECT value FROM counters WHERE id = 1 FOR UPDATE`.execute(trx)
            const read = rows[0]?.value as number
            // The write is computed from the read, not `value + 1` in SQL: a lost update would show.
            await yieldTurn()
            await sql`UPDATE counters SET value = ${read + 1} WHERE id = 1`.execute(trx)
            order.push(i)
          }),
        ),
      )
      assert.equal(order.length, 20)
      assert.equal(await counterValue(db), 20)
    })

    it('a transaction that throws leaves no rows, while concurrent ones that commit keep theirs', async () => {
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          db.transaction().execute(async (trx) => {
            await sql`INSERT INTO items (owner, n) VALUES (${i}, 1)`.execute(trx)
            await yieldTurn()
            await sql`INSERT INTO items (owner, n) VALUES (${i}, 2)`.execute(trx)
            await yieldTurn()
            if (i % 2 === 1) throw new Error(`roll back ${i}`)
            return i
          }),
        ),
      )
      results.forEach((result, i) => {
        if (i % 2 === 1) {
          assert.equal(result.status, 'rejected', `transaction ${i}`)
          assert.match(String((result as PromiseRejectedResult).reason), new RegExp(`roll back ${i}$`))
        } else {
          assert.deepEqual(result, { status: 'fulfilled', value: i })
        }
      })
      const expected = Array.from({ length: 10 }, (_, k) => [
        { owner: 2 * k, n: 1 },
        { owner: 2 * k, n: 2 },
      ]).flat()
      assert.deepEqual(await ownersOf(db), expected)
    })

    it('an open transaction is invisible to a concurrent reader, and its rollback undoes only itself', async () => {
      const { promise: inserted, resolve: signalInserted } = deferred()
      const { promise: gate, resolve: release } = deferred()
      const failing = db.transaction().execute(async (trx) => {
        await sql`INSERT INTO items (owner, n) VALUES (100, 1)`.execute(trx)
        await sql`UPDATE counters SET value = 999 WHERE id = 1`.execute(trx)
        signalInserted()
        await gate
        throw new Error('boom')
      })
      await inserted

      // Started while `failing` is open: on PostgreSQL they run beside it; on PGlite (one session) they
      // must wait for it to end rather than run inside it.
      const reader = sql<{
        n: number
      }>`SELECT count(*)::int AS n FROM items WHERE owner = 100`.execute(db)
      const committer = db.transaction().execute(async (trx) => {
        await sql`INSERT INTO items (owner, n) VALUES (101, 1)`.execute(trx)
        await sql`UPDATE counters SET value = value + 1 WHERE id = 1`.execute(trx)
      })
      if (backend === 'postgres') {
        // The reader does not wait for the open transaction and must not see its uncommitted row.
        assert.equal((await reader).rows[0]?.n, 0)
        release()
      } else {
        release()
        assert.equal((await reader).rows[0]?.n, 0)
      }
      await assert.rejects(failing, /boom/)
      await committer

      assert.deepEqual(await ownersOf(db), [{ owner: 101, n: 1 }])
      assert.equal(await counterValue(db), 1)
    })

    it('a statement error inside one transaction does not poison the next one', async () => {
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await sql`INSERT INTO items (owner, n) VALUES (200, 1)`.execute(trx)
          await sql`INSERT INTO items (owner, n) VALUES (200, NULL)`.execute(trx)
        }),
        /null value/,
      )
      await db.transaction().execute(async (trx) => {
        await sql`INSERT INTO items (owner, n) VALUES (201, 1)`.execute(trx)
      })
      assert.deepEqual(await ownersOf(db), [{ owner: 201, n: 1 }])
    })
  })
}

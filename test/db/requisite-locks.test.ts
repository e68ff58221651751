import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import type { Trx } from '../../src/db/index.ts'
import { newId, newPaymentToken } from '../../src/lib/ids.ts'
import { takeLeastRecentlyUsed } from '../../src/modules/requisites/repository.ts'
import { insertTransaction } from '../../src/modules/transactions/repository.ts'
import { backends, call, eventually, newTransaction } from '../helpers/harness.ts'
import { suiteContext } from '../helpers/suite.ts'

interface Deferred {
  promise: Promise<void>
  resolve: () => void
}
const deferred = (): Deferred => {
  let resolve = () => {}
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

// Two sessions that interleave: only PostgreSQL has them (the embedded database runs one transaction at a time).
for (const backend of backends().filter((b) => b === 'postgres')) {
  describe(`requisite assignment and row locks (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('a create sharing a requisite another create is assigning does not deadlock with it over one external_id', async () => {
      // One active p2p_card requisite, so the second create finds it being assigned and shares it.
      const template = (
        await call(ctx, 'POST', '/integration/transactions', newTransaction({ payment_method: 'p2p_card' }))
      ).json()
      const row = await ctx.db
        .selectFrom('transactions')
        .selectAll()
        .where('uuid', '=', template.uuid)
        .executeTakeFirstOrThrow()
      await ctx.db
        .updateTable('requisites')
        .set({ active: false })
        .where('payment_method', '=', 'p2p_card')
        .where('uuid', '!=', row.requisite_uuid as string)
        .execute()
      const externalId = `lock-${newId()}`
      const insert = (trx: Trx, requisiteUuid: string) =>
        insertTransaction(trx, {
          ...row,
          uuid: newId(),
          external_id: externalId,
          payment_token: newPaymentToken(),
          requisite_uuid: requisiteUuid,
          metadata: row.metadata === null ? null : JSON.stringify(row.metadata),
          requisites: row.requisites === null ? null : JSON.stringify(row.requisites),
        })

      /**
       * Whether a session of this suite's database running a statement like `pattern` waits for a lock (not one of
       * another suite's, which `npm test` may be running beside this one on the same server).
       */
      const sessionsWaitingOnLock = async (pattern: string) => {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'
            AND query LIKE ${pattern}`.execute(ctx.db)
        return (rows[0]?.n ?? 0) > 0
      }

      const took = deferred()
      const go = deferred()
      let taken = ''
      // B takes the requisite (row-locked until B ends), then waits.
      const b = ctx.db.transaction().execute(async (trx) => {
        taken = (await takeLeastRecentlyUsed(trx, 'p2p_card', new Date()))?.uuid ?? ''
        took.resolve()
        await go.promise
        await insert(trx, taken)
      })
      await took.promise
      // A finds it locked, shares it, and inserts the external_id first: its foreign key check must not wait
      // for B's lock.
      let aInserted = false
      const a = ctx.db.transaction().execute(async (trx) => {
        const shared = await takeLeastRecentlyUsed(trx, 'p2p_card', new Date())
        assert.equal(shared?.uuid, taken)
        await insert(trx, taken)
        aInserted = true
        // A commits only once B is waiting for A's external_id.
        await go.promise
        await eventually(() => sessionsWaitingOnLock('insert into "transactions"%'), 10_000)
      })
      // Wait until A has inserted (fixed) or is stuck waiting on a lock (the deadlock's first half).
      await eventually(async () => aInserted || sessionsWaitingOnLock('%'), 10_000)
      go.resolve()
      const [resultA, resultB] = await Promise.allSettled([a, b])
      assert.equal(resultA.status, 'fulfilled', String((resultA as PromiseRejectedResult).reason))
      assert.equal(resultB.status, 'rejected')
      const reason = (resultB as PromiseRejectedResult).reason as { code?: string; constraint?: string }
      assert.equal(reason.code, '23505', String(reason))
      assert.equal(reason.constraint, 'transactions_external_id_key')
    })
  })
}

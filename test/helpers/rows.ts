import type { Db } from '../../src/db/index.ts'
import type { Database } from '../../src/db/types.ts'

/** What the gateway recorded of each provider callback about a transaction, oldest first. */
export const providerCallbacks = (db: Db, transactionUuid: string) =>
  db
    .selectFrom('provider_callbacks')
    .selectAll()
    .where('transaction_uuid', '=', transactionUuid)
    .orderBy('received_at')
    .execute()

/** What the gateway recorded of each provider callback about a payout, oldest first. */
export const payoutCallbacks = (db: Db, payoutUuid: string) =>
  db
    .selectFrom('payout_callbacks')
    .selectAll()
    .where('payout_uuid', '=', payoutUuid)
    .orderBy('received_at')
    .orderBy('uuid')
    .execute()

/** How many rows `table` holds. */
export const rowCount = async (db: Db, table: keyof Database) =>
  Number(
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )

/** How many rows each of `tables` holds, in their order. */
export const rowCounts = (db: Db, tables: readonly (keyof Database)[]) =>
  Promise.all(tables.map((table) => rowCount(db, table)))

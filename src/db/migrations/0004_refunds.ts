import { type Kysely, sql } from 'kysely'
import { createIndex, createOwnedTable, withTimestamps } from './tables.ts'

export async function up(db: Kysely<unknown>): Promise<void> {
  await createOwnedTable(db, 'refunds')
    .addColumn('transaction_uuid', 'uuid', (c) => c.notNull().references('transactions.uuid'))
    .addColumn('amount_minor', 'bigint', (c) => c.notNull().check(sql`amount_minor > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    /** What leaves the merchant's available balance, in its settlement currency. */
    .addColumn('settlement_debit', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status IN ('pending', 'succeeded', 'failed')`))
    .addColumn('reason', 'text')
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('action_request_id', 'uuid', (c) => c.notNull())
    .addColumn('succeeded_at', sql`timestamptz(3)`)
    .addColumn('failed_at', sql`timestamptz(3)`)
    .$call(withTimestamps)
    .execute()
  await createIndex(db, 'refunds_transaction_idx', 'refunds', ['transaction_uuid', 'status'])
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('refunds').ifExists().execute()
}

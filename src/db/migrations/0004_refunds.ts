import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('refunds')
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    .addColumn('merchant_uuid', 'uuid', (c) => c.notNull().references('merchants.uuid'))
    .addColumn('mode', 'text', (c) => c.notNull())
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
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('refunds_transaction_idx')
    .on('refunds')
    .columns(['transaction_uuid', 'status'])
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('refunds').ifExists().execute()
}

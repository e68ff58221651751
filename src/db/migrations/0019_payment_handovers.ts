import { type Kysely, sql } from 'kysely'
import { createChildTable, createIndex, TIMESTAMP, uniqueIndex, withTimestamps } from './tables.ts'

/**
 * Payments handed to a provider (docs/OPERATIONS.md, Hand-over and status sync).
 *
 * `payment_attempts` is every try along a payment's route, in order: `started` is written before the provider is
 * called, so a process killed during the call leaves a row that status sync finishes; the try then ends
 * `accepted` (with the provider's reference), `refused` or `no_answer`.
 *
 * `payment_handovers` is the one account a payment is with, and the provider's reference once known. A payment
 * has at most one, and `(account_uuid, provider_reference)` finds the payment a callback is about. `sync_due_at`
 * is when status sync next asks the provider (null: never again), `sync_count` how many times it has asked.
 *
 * The callback log's results grow by `stale` (an outcome past which the payment has moved) and `review`.
 *
 * `payment_reviews` keeps a provider's outcome that does not match the payment (another amount or currency):
 * the payment is not changed by it until the operator resolves the review.
 */
const RESULTS = (results: string[]) =>
  sql`ALTER TABLE connector_callbacks DROP CONSTRAINT connector_callbacks_result_check,
    ADD CONSTRAINT connector_callbacks_result_check CHECK (result IN (${sql.join(results.map((r) => sql.lit(r)))}))`

export async function up(db: Kysely<unknown>): Promise<void> {
  await RESULTS(['applied', 'duplicate', 'stale', 'review', 'unmatched', 'refused', 'malformed']).execute(db)
  await withTimestamps(
    createChildTable(db, 'payment_attempts', 'transaction_uuid', 'transactions.uuid')
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('account_uuid', 'uuid', (c) => c.notNull().references('connector_accounts.uuid'))
      .addColumn('result', 'text', (c) =>
        c.notNull().check(sql`result IN ('started', 'accepted', 'refused', 'no_answer')`),
      )
      .addColumn('provider_reference', 'text')
      .addColumn('detail', 'text', (c) => c.notNull()),
  ).execute()
  await uniqueIndex(db, 'payment_attempts_position', 'payment_attempts', [
    'transaction_uuid',
    'position',
  ]).execute()
  await withTimestamps(
    db.schema
      .createTable('payment_handovers')
      .addColumn('transaction_uuid', 'uuid', (c) => c.primaryKey().references('transactions.uuid'))
      .addColumn('account_uuid', 'uuid', (c) => c.notNull().references('connector_accounts.uuid'))
      .addColumn('state', 'text', (c) =>
        c.notNull().check(sql`state IN ('handing_over', 'handed_over', 'failed', 'final')`),
      )
      .addColumn('provider_reference', 'text')
      .addColumn('redirect_url', 'text')
      .addColumn('sync_due_at', TIMESTAMP)
      .addColumn('sync_count', 'integer', (c) => c.notNull().defaultTo(0)),
  ).execute()
  await uniqueIndex(db, 'payment_handovers_reference', 'payment_handovers', [
    'account_uuid',
    'provider_reference',
  ])
    .where(sql.ref('provider_reference'), 'is not', null)
    .execute()
  await db.schema
    .createIndex('payment_handovers_sync_due')
    .on('payment_handovers')
    .column('sync_due_at')
    .where(sql.ref('sync_due_at'), 'is not', null)
    .execute()
  await withTimestamps(
    createChildTable(db, 'payment_reviews', 'transaction_uuid', 'transactions.uuid')
      .addColumn('account_uuid', 'uuid', (c) => c.notNull().references('connector_accounts.uuid'))
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('reported_amount', 'bigint', (c) => c.notNull())
      .addColumn('reported_currency', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull().check(sql`status IN ('open', 'accepted', 'refunded')`))
      .addColumn('resolution', 'text'),
  ).execute()
  // One open review per payment: a provider that repeats itself adds nothing.
  await uniqueIndex(db, 'payment_reviews_open', 'payment_reviews', ['transaction_uuid'])
    .where(sql.ref('status'), '=', 'open')
    .execute()
  await createIndex(db, 'payment_reviews_transaction', 'payment_reviews', ['transaction_uuid', 'created_at'])
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db
    .deleteFrom('connector_callbacks' as never)
    .where('result' as never, 'in', ['stale', 'review'] as never)
    .execute()
  await RESULTS(['applied', 'duplicate', 'unmatched', 'refused', 'malformed']).execute(db)
  await db.schema.dropTable('payment_reviews').execute()
  await db.schema.dropTable('payment_handovers').execute()
  await db.schema.dropTable('payment_attempts').execute()
}

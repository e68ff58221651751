import { type Kysely, sql } from 'kysely'
import { requiredColumns } from './columns.ts'
import {
  createChildTable,
  createIndex,
  createOwnedTable,
  createProviderLog,
  createSettingsTable,
  TIMESTAMP,
  withTimestamps,
} from './tables.ts'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Every provider callback as received, and what it did: applied, or recorded as a duplicate or a stale one.
  await createProviderLog(db, 'provider_callbacks', {
    column: 'transaction_uuid',
    references: 'transactions.uuid',
    index: 'provider_callbacks_tx_idx',
  })

  // The transactional outbox: one row per event, written in the transaction of the change that caused it.
  await createOwnedTable(db, 'events')
    .$call(
      requiredColumns({
        event: 'text',
        aggregate_type: 'text',
        aggregate_uuid: 'uuid',
        aggregate_version: 'integer',
        body: 'text',
        occurred_at: TIMESTAMP,
      }),
    )
    .addUniqueConstraint('events_aggregate_version_key', [
      'aggregate_type',
      'aggregate_uuid',
      'aggregate_version',
    ])
    .execute()
  await createIndex(db, 'events_merchant_idx', 'events', ['merchant_uuid', 'mode', 'occurred_at'])

  await createSettingsTable(db, 'webhook_configs', 'mode', (table) =>
    table
      .addColumn('url', 'text')
      .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
      .addColumn('events', 'jsonb', (c) => c.notNull())
      .addColumn('secret_sealed', 'text', (c) => c.notNull())
      .addColumn('previous_secret_sealed', 'text')
      .addColumn('previous_secret_expires_at', sql`timestamptz(3)`)
      .addColumn('disabled_reason', 'text'),
  )

  // The work queue of deliveries, claimed by workers with FOR UPDATE SKIP LOCKED and a lease.
  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    .addColumn('event_id', 'uuid', (c) => c.notNull())
    .addColumn('merchant_uuid', 'uuid', (c) => c.notNull().references('merchants.uuid'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    /** host:port of the url: the unit of the per-target concurrency cap. */
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status IN ('pending', 'succeeded', 'failed')`))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', sql`timestamptz(3)`)
    .addColumn('locked_until', sql`timestamptz(3)`)
    .addColumn('locked_by', 'text')
    .addColumn('last_attempt_at', sql`timestamptz(3)`)
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('duration_ms', 'integer')
    .addColumn('error', 'text')
    .addColumn('is_test', 'boolean', (c) => c.notNull().defaultTo(false))
    .$call(withTimestamps)
    .execute()
  await sql`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`.execute(
    db,
  )
  await sql`CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (merchant_uuid, mode, created_at DESC, uuid DESC)`.execute(
    db,
  )
  await createIndex(db, 'webhook_deliveries_event_idx', 'webhook_deliveries', ['event_id'])

  await createChildTable(db, 'webhook_attempts', 'delivery_uuid', 'webhook_deliveries.uuid')
    .$call(
      requiredColumns({
        attempt: 'integer',
        worker: 'text',
        started_at: TIMESTAMP,
        duration_ms: 'integer',
      }),
    )
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('error', 'text')
    .execute()
  await createIndex(db, 'webhook_attempts_delivery_idx', 'webhook_attempts', ['delivery_uuid', 'attempt'])
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'webhook_attempts',
    'webhook_deliveries',
    'webhook_configs',
    'events',
    'provider_callbacks',
  ]) {
    await db.schema.dropTable(table).ifExists().execute()
  }
}

import { type Kysely, sql } from 'kysely'
import { createChildTable, createIndex, TIMESTAMP, uniqueIndex, withTimestamps } from './tables.ts'

/**
 * Connector accounts: the operator's configured instances of a connector kind (docs/OPERATIONS.md, Connector
 * accounts). `settings` holds what may be shown (a provider's base URL, a time-out); `secrets_sealed` the API
 * keys, sealed with the master key as one JSON object. An account belongs to one mode: a provider's sandbox
 * credentials are a test account, its production ones a live account.
 *
 * The secrets a provider signs its callbacks with are rows of their own, so that a rotation keeps the old one
 * valid for an overlap: a secret is accepted until its `retires_at` (none while it is the current one).
 *
 * `connector_routes` says which accounts take a merchant's payments of a method (and currency), or its payouts of a
 * method (and network), in which order; a route without a merchant is the operator's default for every merchant
 * without one of its own (docs/OPERATIONS.md, Routes).
 *
 * `connector_callbacks` keeps every callback an account's endpoint received, as received (headers without
 * credentials, the body), with whether its signature verified and what it did (docs/OPERATIONS.md, The callback
 * log).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await withTimestamps(
    db.schema
      .createTable('connector_accounts')
      .addColumn('uuid', 'uuid', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('mode', 'text', (c) => c.notNull().check(sql`mode IN ('test', 'live')`))
      .addColumn('settings', 'jsonb', (c) => c.notNull())
      .addColumn('secrets_sealed', 'text')
      .addColumn('status', 'text', (c) => c.notNull().check(sql`status IN ('enabled', 'disabled')`)),
  ).execute()
  await createChildTable(db, 'connector_callback_secrets', 'account_uuid', 'connector_accounts.uuid')
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', TIMESTAMP, (c) => c.notNull())
    .addColumn('retires_at', TIMESTAMP)
    .execute()
  await createIndex(db, 'connector_callback_secrets_account', 'connector_callback_secrets', [
    'account_uuid',
    'created_at',
  ])
  await db.schema
    .createTable('connector_routes')
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    .addColumn('merchant_uuid', 'uuid', (c) => c.references('merchants.uuid'))
    .addColumn('mode', 'text', (c) => c.notNull().check(sql`mode IN ('test', 'live')`))
    .addColumn('subject', 'text', (c) => c.notNull().check(sql`subject IN ('payment', 'payout')`))
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('currency', 'text')
    .addColumn('network', 'text')
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('account_uuid', 'uuid', (c) => c.notNull().references('connector_accounts.uuid'))
    .addColumn('created_at', TIMESTAMP, (c) => c.notNull())
    .execute()
  // One account per place in a route, and each account once in it.
  const route = ['merchant_uuid', 'mode', 'subject', 'method', 'currency', 'network']
  for (const [name, last] of [
    ['connector_routes_position', 'position'],
    ['connector_routes_account', 'account_uuid'],
  ] as const)
    await uniqueIndex(db, name, 'connector_routes', [...route, last])
      .nullsNotDistinct()
      .execute()
  await createChildTable(db, 'connector_callbacks', 'account_uuid', 'connector_accounts.uuid')
    .addColumn('received_at', TIMESTAMP, (c) => c.notNull())
    .addColumn('headers', 'jsonb', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('verification', 'text', (c) =>
      c.notNull().check(sql`verification IN ('verified', 'unsigned', 'stale', 'mismatch')`),
    )
    .addColumn('event_type', 'text')
    .addColumn('provider_reference', 'text')
    .addColumn('result', 'text', (c) =>
      c.notNull().check(sql`result IN ('applied', 'duplicate', 'unmatched', 'refused', 'malformed')`),
    )
    .addColumn('detail', 'text', (c) => c.notNull())
    .execute()
  await createIndex(db, 'connector_callbacks_account', 'connector_callbacks', ['account_uuid', 'received_at'])
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('connector_routes').execute()
  await db.schema.dropTable('connector_callbacks').execute()
  await db.schema.dropTable('connector_callback_secrets').execute()
  await db.schema.dropTable('connector_accounts').execute()
}

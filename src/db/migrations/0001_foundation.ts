import { type Kysely, sql } from 'kysely'
import { requiredColumns } from './columns.ts'
import {
  createChildTable,
  createIndex,
  createOwnedTable,
  createSettingsTable,
  TIMESTAMP,
  withTimestamps,
} from './tables.ts'

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db)

  await db.schema
    .createTable('merchants')
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('settlement_currency', 'text', (c) => c.notNull().defaultTo('USDT'))
    .addColumn('settlement_hold_seconds', 'integer', (c) => c.notNull().defaultTo(86400))
    .addColumn('transaction_ttl_seconds', 'integer', (c) => c.notNull().defaultTo(1800))
    .addColumn('fx_markup_bps', 'integer', (c) => c.notNull().defaultTo(0))
    .$call(withTimestamps)
    .execute()

  await createChildTable(db, 'api_keys', 'merchant_uuid', 'merchants.uuid')
    .addColumn('key_id', 'text', (c) => c.notNull().unique())
    .addColumn('mode', 'text', (c) => c.notNull().check(sql`mode IN ('test', 'live')`))
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('secret_last4', 'text', (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('revoked_at', sql`timestamptz(3)`)
    .execute()
  await createIndex(db, 'api_keys_merchant_idx', 'api_keys', ['merchant_uuid'])

  await createSettingsTable(db, 'merchant_fees', 'payment_method', (table) =>
    table
      .addColumn('fee_bps', 'integer', (c) => c.notNull().check(sql`fee_bps BETWEEN 0 AND 10000`))
      .addColumn('merchant_fee_share_bps', 'integer', (c) =>
        c.notNull().check(sql`merchant_fee_share_bps BETWEEN 0 AND 10000`),
      ),
  )

  await db.schema
    .createTable('fx_rates')
    .addColumn('currency', 'text', (c) => c.primaryKey())
    .addColumn('market_rate', 'numeric', (c) => c.notNull().check(sql`market_rate > 0`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('requisites')
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    .addColumn('payment_method', 'text', (c) => c.notNull())
    .addColumn('fields', 'jsonb', (c) => c.notNull())
    .addColumn('active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('assigned_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_assigned_at', sql`timestamptz(3)`)
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    .execute()
  await sql`CREATE INDEX requisites_rotation_idx ON requisites (payment_method, last_assigned_at NULLS FIRST) WHERE active`.execute(
    db,
  )

  await createOwnedTable(db, 'transactions')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull().check(sql`amount > 0`))
    .$call(
      requiredColumns({
        gross_amount: 'bigint',
        net_amount: 'bigint',
        fee_amount: 'bigint',
        fee_bps: 'integer',
        fee_payer: 'text',
        merchant_fee_share_bps: 'integer',
        merchant_fee_merchant_amount: 'bigint',
        merchant_fee_customer_amount: 'bigint',
        currency: 'text',
        settlement_currency: 'text',
        settlement_amount: 'bigint',
        fx_rate: 'text',
        fx_rate_updated_at: TIMESTAMP,
        payment_method: 'text',
        status: 'text',
      }),
    )
    .addColumn('description', 'text')
    .addColumn('metadata', 'jsonb')
    .addColumn('callback_url', 'text')
    .addColumn('success_url', 'text')
    .addColumn('fail_url', 'text')
    .addColumn('payment_token', 'text', (c) => c.notNull().unique())
    .addColumn('requisites', 'jsonb')
    .addColumn('requisite_uuid', 'uuid', (c) => c.references('requisites.uuid'))
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('paid_at', sql`timestamptz(3)`)
    .addColumn('settle_available_at', sql`timestamptz(3)`)
    .addColumn('aggregate_version', 'integer', (c) => c.notNull().defaultTo(1))
    .$call(withTimestamps)
    .addUniqueConstraint('transactions_external_id_key', ['merchant_uuid', 'mode', 'external_id'])
    .execute()
  // The list: newest first, keyset on (created_at, uuid), per merchant and mode, optionally by status.
  await sql`CREATE INDEX transactions_list_idx ON transactions (merchant_uuid, mode, created_at DESC, uuid DESC)`.execute(
    db,
  )
  await sql`CREATE INDEX transactions_status_idx ON transactions (merchant_uuid, mode, status, created_at DESC, uuid DESC)`.execute(
    db,
  )
  await sql`CREATE INDEX transactions_method_idx ON transactions (merchant_uuid, mode, payment_method, created_at DESC, uuid DESC)`.execute(
    db,
  )
  await sql`CREATE INDEX transactions_currency_idx ON transactions (merchant_uuid, mode, currency, created_at DESC, uuid DESC)`.execute(
    db,
  )
  // search: a case-insensitive prefix of external_id, a substring of description (trigram indexes).
  await sql`CREATE INDEX transactions_external_id_prefix_idx ON transactions (merchant_uuid, mode, lower(external_id) text_pattern_ops)`.execute(
    db,
  )
  await sql`CREATE INDEX transactions_description_trgm_idx ON transactions USING gin (lower(description) gin_trgm_ops)`.execute(
    db,
  )
  await sql`CREATE INDEX transactions_expiry_idx ON transactions (expires_at) WHERE status = 'pending'`.execute(
    db,
  )

  await db.schema
    .createTable('idempotency_keys')
    .$call(
      requiredColumns({
        merchant_uuid: 'uuid',
        mode: 'text',
        key: 'text',
        fingerprint: 'text',
        state: 'text',
        owner: 'text',
        locked_until: TIMESTAMP,
      }),
    )
    .addColumn('response_status', 'integer')
    .addColumn('response_headers', 'jsonb')
    .addColumn('response_body', 'text')
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['merchant_uuid', 'mode', 'key'])
    .execute()
  await createIndex(db, 'idempotency_keys_expiry_idx', 'idempotency_keys', ['expires_at'])
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'idempotency_keys',
    'transactions',
    'requisites',
    'fx_rates',
    'merchant_fees',
    'api_keys',
    'merchants',
  ]) {
    await db.schema.dropTable(table).ifExists().execute()
  }
}

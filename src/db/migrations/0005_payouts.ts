import { type Kysely, sql } from 'kysely'
import { requiredColumns } from './columns.ts'
import { createIndex, createOwnedTable, createProviderLog, TIMESTAMP, withTimestamps } from './tables.ts'

export async function up(db: Kysely<unknown>): Promise<void> {
  // What a payout costs the merchant on top of its amount: a share in basis points and a fixed part in USDT.
  await db.schema
    .alterTable('merchants')
    .addColumn('payout_fee_bps', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('payout_fixed_fee_micro', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()

  // A quote holds its figures (rate, amounts, fee) for 60 s; a payout that names it pays at those figures.
  await createOwnedTable(db, 'payout_quotes')
    .$call(
      requiredColumns({
        amount: 'bigint',
        currency: 'text',
        method: 'text',
        fx_rate: 'text',
        fx_rate_updated_at: TIMESTAMP,
        amount_usdt_micro: 'bigint',
        fee_usdt_micro: 'bigint',
        payout_usdt_amount_micro: 'bigint',
        expires_at: TIMESTAMP,
        created_at: TIMESTAMP,
      }),
    )
    .execute()
  await createIndex(db, 'payout_quotes_expiry_idx', 'payout_quotes', ['expires_at'])

  await createOwnedTable(db, 'payouts')
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull().check(sql`method IN ('usdt_wallet', 'card')`))
    /** As shown: a card number only ever masked. */
    .addColumn('destination', 'jsonb', (c) => c.notNull())
    .addColumn('card_brand', 'text')
    .addColumn('wallet_uuid', 'uuid')
    .addColumn('quote_uuid', 'uuid')
    .$call(
      requiredColumns({
        fx_rate: 'text',
        fx_rate_updated_at: TIMESTAMP,
        amount_usdt_micro: 'bigint',
        fee_usdt_micro: 'bigint',
      }),
    )
    /** What the merchant's USDT balance gives: reserved at creation, then paid out or released. */
    .addColumn('payout_usdt_amount_micro', 'bigint', (c) =>
      c.notNull().check(sql`payout_usdt_amount_micro > 0`),
    )
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status IN ('pending', 'processing', 'completed', 'failed')`),
    )
    .addColumn('failure_reason', 'text')
    .addColumn('provider_reference', 'text')
    .addColumn('metadata', 'jsonb')
    .addColumn('callback_url', 'text')
    .addColumn('action_request_id', 'uuid', (c) => c.notNull())
    .addColumn('aggregate_version', 'integer', (c) => c.notNull())
    /** When the processing job next asks the provider how the payout stands. */
    .addColumn('next_check_at', sql`timestamptz(3)`)
    .addColumn('submitted_at', sql`timestamptz(3)`)
    .addColumn('completed_at', sql`timestamptz(3)`)
    .addColumn('failed_at', sql`timestamptz(3)`)
    .$call(withTimestamps)
    .addUniqueConstraint('payouts_external_id_key', ['merchant_uuid', 'mode', 'external_id'])
    .execute()
  await createIndex(db, 'payouts_list_idx', 'payouts', ['merchant_uuid', 'mode', 'created_at', 'uuid'])
  await sql`CREATE INDEX payouts_open_idx ON payouts (next_check_at) WHERE status IN ('pending', 'processing')`.execute(
    db,
  )

  // Every provider word about a payout, as for payments: applied, or recorded as a duplicate or a stale one.
  await createProviderLog(db, 'payout_callbacks', {
    column: 'payout_uuid',
    references: 'payouts.uuid',
    index: 'payout_callbacks_payout_idx',
  })
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['payout_callbacks', 'payouts', 'payout_quotes'])
    await db.schema.dropTable(table).ifExists().execute()
  await db.schema
    .alterTable('merchants')
    .dropColumn('payout_fixed_fee_micro')
    .dropColumn('payout_fee_bps')
    .execute()
}

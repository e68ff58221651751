import { type Kysely, sql } from 'kysely'

/**
 * The columns of a payment that ANALYZE no longer keeps statistics for (`SET STATISTICS 0`): those no query filters,
 * joins, groups or sorts by, and the unique keys `uuid` and `payment_token`, which queries only look up by equality.
 * Every ANALYZE of `transactions` (autovacuum's, each time a tenth of the table has changed) computed them for its
 * 30,000 sampled rows all the same, and they were about half of its work: on 45,527 payments 570–780 ms of one core
 * before, 290–410 ms after. The columns the service's queries name keep their statistics, and so do the indexes'
 * expressions (`lower(external_id)`, `lower(description)`) that the search's estimates read. The planner knows `uuid`
 * and `payment_token` to be unique from their unique indexes, without statistics. A query that comes to filter by one
 * of these columns should take it off the list.
 *
 * ALTER TABLE … SET STATISTICS takes a SHARE UPDATE EXCLUSIVE lock: it waits for a running vacuum or analysis of the
 * table, never for reads or writes, and rewrites no table data. The statistics already gathered for these columns
 * stay as they were (dropping them needs a superuser); the planner still reads the keys' null fraction and
 * correlation from them, which stay true of a unique NOT NULL key. `down` sets the default target back.
 */
export const COLUMNS_WITHOUT_STATISTICS = [
  'uuid',
  'type',
  'amount',
  'gross_amount',
  'net_amount',
  'fee_amount',
  'fee_bps',
  'fee_payer',
  'merchant_fee_share_bps',
  'merchant_fee_merchant_amount',
  'merchant_fee_customer_amount',
  'settlement_currency',
  'settlement_amount',
  'fx_rate',
  'fx_rate_updated_at',
  'metadata',
  'callback_url',
  'success_url',
  'fail_url',
  'payment_token',
  'requisites',
  'aggregate_version',
  'updated_at',
] as const

const setStatistics = (target: number) =>
  sql.raw(
    `ALTER TABLE transactions ${COLUMNS_WITHOUT_STATISTICS.map((c) => `ALTER COLUMN ${c} SET STATISTICS ${target}`).join(', ')}`,
  )

export async function up(db: Kysely<unknown>): Promise<void> {
  await setStatistics(0).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await setStatistics(-1).execute(db)
}

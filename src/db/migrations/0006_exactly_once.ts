import { type Kysely, sql } from 'kysely'

/**
 * Exactly-once refunds and payouts. The Idempotency-Key a refund or payout was made with is stored on its row,
 * in the same database transaction as the money it moves: a retry after a crash at any instant finds the
 * committed object by its key, and the unique index makes a second one impossible.
 *
 * Refunds get what payouts already had for their recovery: when a worker next asks the provider about a
 * pending one, and the provider's reference. A payout's destination is kept sealed (encrypted with a key of the
 * master key) until the provider has taken the payout, so that a hand-over cut by a crash can be made again;
 * the card number is never stored in the clear.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('refunds')
    .addColumn('idempotency_key', 'text')
    .addColumn('provider_reference', 'text')
    .addColumn('next_check_at', sql`timestamptz(3)`)
    .execute()
  await sql`CREATE UNIQUE INDEX refunds_idempotency_key ON refunds (merchant_uuid, mode, idempotency_key)`.execute(
    db,
  )
  await sql`CREATE INDEX refunds_open_idx ON refunds (next_check_at) WHERE status = 'pending'`.execute(db)
  // Refunds left pending before this migration are asked about at once.
  await sql`UPDATE refunds SET next_check_at = now() WHERE status = 'pending'`.execute(db)

  await db.schema
    .alterTable('payouts')
    .addColumn('idempotency_key', 'text')
    .addColumn('destination_sealed', 'text')
    .execute()
  await sql`CREATE UNIQUE INDEX payouts_idempotency_key ON payouts (merchant_uuid, mode, idempotency_key)`.execute(
    db,
  )
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('payouts')
    .dropColumn('destination_sealed')
    .dropColumn('idempotency_key')
    .execute()
  await sql`DROP INDEX IF EXISTS refunds_open_idx`.execute(db)
  await db.schema
    .alterTable('refunds')
    .dropColumn('next_check_at')
    .dropColumn('provider_reference')
    .dropColumn('idempotency_key')
    .execute()
}

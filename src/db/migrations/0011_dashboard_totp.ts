import { type Kysely, sql } from 'kysely'

/**
 * The dashboard's optional second factor (TOTP, RFC 6238) and session housekeeping.
 *
 * - A user's TOTP secret is kept sealed (AES-256-GCM under a key derived from MASTER_KEY). It is set when
 *   enrolment starts and `totp_enabled` turns true once a code from it is confirmed; `totp_last_step` is the
 *   30-second step of the last code accepted, so a code works once.
 * - A merchant can require the second factor of every dashboard user (`dashboard_require_totp`).
 * - Housekeeping deletes sessions that ended more than 7 days ago; a session ends at the first of its
 *   revocation and its idle limit (the idle limit never passes the absolute one), which this index orders.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('merchant_users').addColumn('totp_secret_sealed', 'text').execute()
  await db.schema
    .alterTable('merchant_users')
    .addColumn('totp_enabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
  await db.schema.alterTable('merchant_users').addColumn('totp_last_step', 'bigint').execute()
  await db.schema
    .alterTable('merchants')
    .addColumn('dashboard_require_totp', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
  await sql`CREATE INDEX dashboard_sessions_ended_idx ON dashboard_sessions (least(revoked_at, idle_expires_at))`.execute(
    db,
  )
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS dashboard_sessions_ended_idx`.execute(db)
  await db.schema.alterTable('merchants').dropColumn('dashboard_require_totp').execute()
  await db.schema.alterTable('merchant_users').dropColumn('totp_last_step').execute()
  await db.schema.alterTable('merchant_users').dropColumn('totp_enabled').execute()
  await db.schema.alterTable('merchant_users').dropColumn('totp_secret_sealed').execute()
}

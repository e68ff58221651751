import { type Kysely, sql } from 'kysely'

/**
 * The events API (GET /integration/events) reads the outbox's `events` table.
 *
 * - `refund_uuid`: a refund's success is announced as an event of its transaction (`transaction.refunded` or
 *   `transaction.partially_refunded`), whose body carries the transaction, not the refund; the column names the
 *   refund that caused the event, so that `object_uuid=<refund uuid>` finds it. Events recorded before this
 *   migration get it from the refund that succeeded at the instant the event occurred (the refund's
 *   `succeeded_at` and its event's `occurred_at` are the same instant, written in the same transaction).
 * - The list reads a merchant's events newest first (occurred_at desc, uuid desc): that index replaces the one
 *   on (merchant_uuid, mode, occurred_at). `object_uuid` looks events up by aggregate or by refund; the
 *   retention purge walks the oldest events first.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').addColumn('refund_uuid', 'uuid').execute()
  await sql`
    UPDATE events e SET refund_uuid = r.uuid
    FROM refunds r
    WHERE e.aggregate_type = 'transaction'
      AND e.event IN ('transaction.partially_refunded', 'transaction.refunded')
      AND r.transaction_uuid = e.aggregate_uuid
      AND r.status = 'succeeded'
      AND r.succeeded_at = e.occurred_at`.execute(db)
  await sql`CREATE INDEX events_list_idx ON events (merchant_uuid, mode, occurred_at DESC, uuid DESC)`.execute(
    db,
  )
  await sql`DROP INDEX IF EXISTS events_merchant_idx`.execute(db)
  await sql`CREATE INDEX events_aggregate_idx ON events (aggregate_uuid)`.execute(db)
  await sql`CREATE INDEX events_refund_idx ON events (refund_uuid) WHERE refund_uuid IS NOT NULL`.execute(db)
  await sql`CREATE INDEX events_occurred_idx ON events (occurred_at)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS events_occurred_idx`.execute(db)
  await sql`DROP INDEX IF EXISTS events_refund_idx`.execute(db)
  await sql`DROP INDEX IF EXISTS events_aggregate_idx`.execute(db)
  await sql`CREATE INDEX IF NOT EXISTS events_merchant_idx ON events (merchant_uuid, mode, occurred_at)`.execute(
    db,
  )
  await sql`DROP INDEX IF EXISTS events_list_idx`.execute(db)
  await db.schema.alterTable('events').dropColumn('refund_uuid').execute()
}

import { type Kysely, sql } from 'kysely'

/**
 * An event's delivery no longer keeps a copy of the event's body: the dispatcher reads it from the event (one row
 * by primary key, in the statement that claims the delivery). The copy was a third of each delivery row's write:
 * the body (about 1.3 kB) went into the row when it was queued and again into each of the row's two updates (the
 * claim and the outcome), as the WAL shows them. A test delivery (`webhook.test`), which has no event, keeps its
 * body in its row; so do the deliveries written before this migration. NULL means "the event's body".
 *
 * The table also leaves room on its pages (fillfactor 70) for the claim, which changes no indexed column: with
 * room on the page it is a heap-only update, which writes no index entry and which a later read or write of the
 * page reclaims, without vacuum.
 *
 * Upgrade: an earlier version's dispatcher would send such a delivery without its body, and workers write
 * deliveries too (expiries, settlements, payout and refund checks), so every earlier worker stops before any
 * process of this version starts (docs/OPERATIONS.md §11). Down writes the events' bodies back into the rows that
 * have none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_deliveries ALTER COLUMN body DROP NOT NULL, SET (fillfactor = 70)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // No delivery is written between the copy and the constraint; one whose event is gone gets an empty body.
  await sql`LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE`.execute(db)
  await sql`UPDATE webhook_deliveries AS d SET body = coalesce(
      (SELECT e.body FROM events AS e WHERE e.uuid = d.event_id), '')
    WHERE d.body IS NULL`.execute(db)
  await sql`ALTER TABLE webhook_deliveries ALTER COLUMN body SET NOT NULL, RESET (fillfactor)`.execute(db)
}

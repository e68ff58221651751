import { type Kysely, sql } from 'kysely'

/**
 * New pages of `transactions` are filled to 90 % (fillfactor 90), so that the space a vacuum frees on a full page
 * does not draw new payments into it. A payment is paid, refunded or expires once or twice in its life, each time a
 * new row version (its status is in two indexes' keys or predicates, so the update is never heap-only), and the
 * vacuum that removes the old versions leaves a few rows' space on most pages. On full pages the next payments
 * went into those gaps, all over the table: every page took a write again, lost its all-visible mark, and was read
 * and written by the next vacuum, so each vacuum did work in proportion to the whole table rather than to what had
 * changed since the last. With the last tenth of each page reserved, a gap of a few rows is too small for a new
 * payment and new payments go to the end of the table; a status change made soon after a payment was created
 * usually finds room on its own page. In a model of a soak's 1,060,000 payments (one in twelve paid, one in
 * twenty-four refunded, a vacuum at each fifth of growth), each vacuum scanned 22 % of the heap instead of 51 %
 * and dirtied about half the pages (bench/README.md); the table takes about 6 % more space.
 *
 * ALTER TABLE … SET (fillfactor) takes a SHARE UPDATE EXCLUSIVE lock (it waits for a running vacuum of the table,
 * never for reads or writes) and rewrites nothing: pages already full stay so, and it applies to pages filled
 * from now on. `down` resets it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE transactions SET (fillfactor = 90)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE transactions RESET (fillfactor)`.execute(db)
}

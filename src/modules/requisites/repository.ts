import { sql } from 'kysely'
import type { Executor } from '../../db/index.ts'

export const insertRequisite = (
  db: Executor,
  row: { uuid: string; payment_method: string; fields: Record<string, string> },
) =>
  db
    .insertInto('requisites')
    .values({ ...row, fields: JSON.stringify(row.fields), created_at: new Date() })
    .returningAll()
    .executeTakeFirstOrThrow()

export const listRequisites = (db: Executor) =>
  db.selectFrom('requisites').selectAll().orderBy('created_at').execute()

/**
 * The least recently used active requisite of a method, marked as used. Rows other transactions are
 * assigning right now are skipped so that concurrent creates spread over the pool instead of queuing on one row.
 *
 * The row lock is FOR NO KEY UPDATE (what the UPDATE takes anyway), not FOR UPDATE: a concurrent create that
 * shares this requisite checks its foreign key with FOR KEY SHARE, which FOR UPDATE would block. Two creates
 * with one external_id then deadlocked: each waited for the other's requisite or for its unique entry.
 */
export async function takeLeastRecentlyUsed(db: Executor, paymentMethod: string, at: Date) {
  const picked = await sql<{ uuid: string; fields: Record<string, string> }>`
    UPDATE requisites SET last_assigned_at = ${at}, assigned_count = assigned_count + 1
    WHERE uuid = (
      SELECT uuid FROM requisites WHERE payment_method = ${paymentMethod} AND active
      ORDER BY last_assigned_at NULLS FIRST LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED)
    RETURNING uuid, fields`.execute(db)
  if (picked.rows[0]) return picked.rows[0]
  // Every row is being assigned by another request: share the least recently used one without waiting.
  return db
    .selectFrom('requisites')
    .select(['uuid', 'fields'])
    .where('payment_method', '=', paymentMethod)
    .where('active', '=', true)
    .orderBy(sql`last_assigned_at NULLS FIRST`)
    .limit(1)
    .executeTakeFirst()
}

import { type Insertable, sql } from 'kysely'
import type { Executor } from '../../../db/index.ts'
import { keysetPage } from '../../../db/keyset.ts'
import { selectScoped } from '../../../db/queries.ts'
import type { Scope } from '../../../db/scope.ts'
import type { WebhookDeliveriesTable, WebhookDelivery } from '../../../db/types.ts'
import type { Cursor } from '../../../http/pagination.ts'

/** The channel a committed event is announced on (NOTIFY is delivered on commit). */
export const WAKE_CHANNEL = 'mg_webhook_deliveries'

/** The NOTIFY on WAKE_CHANNEL, as an expression: heard only if and when the transaction commits. */
export const wakeDispatchers = () => sql<string>`pg_notify(${WAKE_CHANNEL}, '')`

/** NOTIFY inside the transaction: listeners hear it only if and when the transaction commits. */
export async function notifyDispatchers(trx: Executor): Promise<void> {
  await sql`SELECT ${wakeDispatchers()}`.execute(trx)
}

export const insertDelivery = (db: Executor, row: Insertable<WebhookDeliveriesTable>) =>
  db.insertInto('webhook_deliveries').values(row).returningAll().executeTakeFirstOrThrow()

export const findDelivery = (db: Executor, scope: Scope, uuid: string) =>
  selectScoped(db, 'webhook_deliveries', scope).where('uuid', '=', uuid).executeTakeFirst()

/** Makes a delivery due now, whatever its state, and drops any claim on it. */
export const requeueDelivery = (db: Executor, uuid: string, at: Date) =>
  db
    .updateTable('webhook_deliveries')
    .set({
      status: 'pending',
      next_attempt_at: at,
      locked_until: null,
      locked_by: null,
      updated_at: at,
    })
    .where('uuid', '=', uuid)
    .returningAll()
    .executeTakeFirstOrThrow()

export function listDeliveries(
  db: Executor,
  scope: Scope,
  filters: { status?: string; event?: string; eventId?: string },
  cursor: Cursor | null,
  limit: number,
) {
  let query = db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
  if (filters.status) query = query.where('status', '=', filters.status as WebhookDeliveriesTable['status'])
  if (filters.event) query = query.where('event', '=', filters.event)
  if (filters.eventId) query = query.where('event_id', '=', filters.eventId)
  return keysetPage(query, cursor, limit)
}

/**
 * A claimed delivery with what sending it needs: its body (its own, else its event's; null only if the event is
 * gone, which nothing does while a delivery of it is pending) and its merchant's configuration, read in the same
 * statement.
 */
export type ClaimedDelivery = WebhookDelivery & {
  secret_sealed: string | null
  previous_secret_sealed: string | null
  previous_secret_expires_at: Date | null
  config_url: string | null
  config_enabled: boolean | null
}

/**
 * Claims up to `limit` due deliveries for `worker` until `leaseUntil`. SKIP LOCKED lets any number of
 * workers claim side by side; the lease lets another worker take over the claims of one that died.
 */
export async function claimDue(
  db: Executor,
  worker: string,
  now: Date,
  leaseUntil: Date,
  limit: number,
  excludeTargets: string[],
): Promise<ClaimedDelivery[]> {
  const result = await sql<ClaimedDelivery & { event_body: string | null }>`
    WITH claimed AS (
      UPDATE webhook_deliveries SET locked_until = ${leaseUntil}, locked_by = ${worker}
      WHERE uuid IN (
        SELECT uuid FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= ${now}
          AND (locked_until IS NULL OR locked_until < ${now})
          ${excludeTargets.length ? sql`AND NOT (target = ANY(${excludeTargets}::text[]))` : sql``}
        ORDER BY next_attempt_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED)
      RETURNING *)
    SELECT claimed.*, e.body AS event_body,
      c.secret_sealed, c.previous_secret_sealed, c.previous_secret_expires_at, c.url AS config_url, c.enabled AS config_enabled
    FROM claimed
    LEFT JOIN events e ON claimed.body IS NULL AND e.uuid = claimed.event_id
    LEFT JOIN webhook_configs c ON c.merchant_uuid = claimed.merchant_uuid AND c.mode = claimed.mode`.execute(
    db,
  )
  return result.rows.map(({ event_body, ...row }) => ({ ...row, body: row.body ?? event_body }))
}

/** The body a delivery sends: its own (a test delivery's, or one written before 0015), else its event's. */
export async function deliveryBody(db: Executor, delivery: Pick<WebhookDelivery, 'body' | 'event_id'>) {
  if (delivery.body !== null) return delivery.body
  const event = await db
    .selectFrom('events')
    .select('body')
    .where('uuid', '=', delivery.event_id)
    .executeTakeFirst()
  return event?.body ?? null
}

/** Gives claims back (some, or all at shutdown): the deliveries are due again at once for any worker. */
export function releaseClaims(db: Executor, worker: string, uuids?: string[]) {
  let query = db
    .updateTable('webhook_deliveries')
    .set({ locked_until: null, locked_by: null })
    .where('locked_by', '=', worker)
    .where('status', '=', 'pending')
  if (uuids) query = query.where('uuid', 'in', uuids)
  return query.execute()
}

/** Deliveries waiting to be sent, and the age of the oldest (the outbox metrics). */
export async function outboxStats(db: Executor, now = new Date()) {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => [eb.fn.countAll<number>().as('depth'), eb.fn.min('created_at').as('oldest')])
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow()
  const oldest = row.oldest ? new Date(row.oldest as Date) : null
  return {
    depth: Number(row.depth),
    oldestAgeSeconds: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : 0,
  }
}

/** The deliveries of these events, locked: a redelivery asked for meanwhile is seen (as pending) before a purge. */
export const lockDeliveriesOf = (db: Executor, eventIds: string[]) =>
  db
    .selectFrom('webhook_deliveries')
    .select(['uuid', 'event_id', 'status'])
    .where('event_id', 'in', eventIds)
    .forUpdate()
    .execute()

/** Deletes deliveries and their attempts (which reference them), attempts first. */
export async function deleteDeliveries(db: Executor, uuids: string[]): Promise<void> {
  if (uuids.length === 0) return
  await db.deleteFrom('webhook_attempts').where('delivery_uuid', 'in', uuids).execute()
  await db.deleteFrom('webhook_deliveries').where('uuid', 'in', uuids).execute()
}

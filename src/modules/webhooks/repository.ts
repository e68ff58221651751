import { type Insertable, sql } from 'kysely'
import { compiledOnce } from '../../db/driver/statement.ts'
import type { Executor } from '../../db/index.ts'
import { type KeysetColumns, keysetPage } from '../../db/keyset.ts'
import type { Scope } from '../../db/scope.ts'
import type {
  EventsTable,
  Mode,
  WebhookConfigsTable,
  WebhookDeliveriesTable,
  WebhookDelivery,
} from '../../db/types.ts'
import type { Cursor } from '../../http/pagination.ts'
import type { EventName, WebhookStatus } from './schemas.ts'

export const findConfig = (db: Executor, scope: Scope) =>
  db
    .selectFrom('webhook_configs')
    .selectAll()
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .executeTakeFirst()

/** Creates the configuration with its first secret unless it exists; returns the stored one either way. */
export async function ensureConfig(
  db: Executor,
  scope: Scope,
  secretSealed: string,
  events: string[],
  at: Date,
) {
  await db
    .insertInto('webhook_configs')
    .values({
      merchant_uuid: scope.merchantUuid,
      mode: scope.mode,
      url: null,
      enabled: true,
      events: JSON.stringify(events),
      secret_sealed: secretSealed,
      updated_at: at,
    })
    .onConflict((oc) => oc.columns(['merchant_uuid', 'mode']).doNothing())
    .execute()
  return (await findConfig(db, scope)) as NonNullable<Awaited<ReturnType<typeof findConfig>>>
}

export const updateConfig = (
  db: Executor,
  scope: Scope,
  changes: Partial<Record<keyof WebhookConfigsTable, unknown>>,
) =>
  db
    .updateTable('webhook_configs')
    .set(changes as never)
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .returningAll()
    .executeTakeFirstOrThrow()

/**
 * Makes a new sealed secret the current one. One statement: the current secret becomes the previous one until
 * `previousUntil` (whatever was previous is dropped, so at most two are valid; none when `previousUntil` is
 * null), and concurrent rotations cannot hand out a secret that never signs.
 */
export const rotateSecret = (
  db: Executor,
  scope: Scope,
  secretSealed: string,
  previousUntil: Date | null,
  at: Date,
) =>
  db
    .updateTable('webhook_configs')
    .set((eb) => ({
      secret_sealed: secretSealed,
      previous_secret_sealed: previousUntil ? eb.ref('secret_sealed') : null,
      previous_secret_expires_at: previousUntil,
      updated_at: at,
    }))
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .returningAll()
    .executeTakeFirstOrThrow()

/** The channel a committed event is announced on (NOTIFY is delivered on commit). */
export const WAKE_CHANNEL = 'mg_webhook_deliveries'

/** The NOTIFY on WAKE_CHANNEL, as an expression: heard only if and when the transaction commits. */
const wakeDispatchers = () => sql<string>`pg_notify(${WAKE_CHANNEL}, '')`

/** NOTIFY inside the transaction: listeners hear it only if and when the transaction commits. */
export async function notifyDispatchers(trx: Executor): Promise<void> {
  await sql`SELECT ${wakeDispatchers()}`.execute(trx)
}

/** An outbox delivery of an event: pending, due when the event occurred. */
export interface OutboxDelivery {
  uuid: string
  eventId: string
  merchantUuid: string
  mode: Mode
  event: string
  at: Date
}

/**
 * An event, and its delivery when it has a target, in one statement with the NOTIFY that wakes the dispatchers
 * on commit (made only when a delivery was written): one round trip in the caller's transaction. The target is
 * `to` (a resource's own callback_url and its host), else the merchant's configured URL when the configuration
 * is enabled and subscribed to the event, which the statement reads itself.
 */
export async function insertEventWithDelivery(
  trx: Executor,
  event: Insertable<EventsTable>,
  delivery: OutboxDelivery,
  to: { url: string; target: string } | null,
): Promise<void> {
  const fields = event as Record<string, unknown>
  const columns = Object.keys(fields).filter((column) => fields[column] !== undefined)
  const d = delivery
  const values = [
    ...columns.map((column) => fields[column]),
    ...[d.uuid, d.eventId, d.merchantUuid, d.mode, d.event, d.at, to?.url ?? null, to?.target ?? null],
    // What a configuration subscribed to the event holds in its list.
    JSON.stringify([d.event]),
  ]
  await trx.executeQuery(
    compiledOnce(
      trx,
      `events.insertWithDelivery:${to ? 'to' : 'configured'}:${columns.join(',')}`,
      values,
      (...v) => {
        const n = columns.length
        const [uuid, eventId, merchantUuid, mode, name, at, url, target, subscribed] = v.slice(n) as [
          string,
          string,
          string,
          Mode,
          string,
          Date,
          string,
          string,
          string,
        ]
        return eventWithDelivery(
          trx,
          Object.fromEntries(columns.map((column, i) => [column, v[i]])) as Insertable<EventsTable>,
          { uuid, eventId, merchantUuid, mode, event: name, at },
          to && { url, target },
          subscribed,
        )
      },
    ),
  )
}

/** The statement of insertEventWithDelivery. */
const eventWithDelivery = (
  trx: Executor,
  event: Insertable<EventsTable>,
  delivery: OutboxDelivery,
  to: { url: string; target: string } | null,
  subscribed: string,
) =>
  trx
    .with('config', (db) =>
      to
        ? db.selectNoFrom([
            sql<string | null>`${to.url}::text`.as('url'),
            sql<string | null>`${to.target}::text`.as('target'),
          ])
        : db
            .selectFrom('webhook_configs')
            .select(['url', 'target'])
            .where('merchant_uuid', '=', delivery.merchantUuid)
            .where('mode', '=', delivery.mode)
            .where('enabled', '=', true)
            .where('url', 'is not', null)
            .where(sql<boolean>`events @> ${subscribed}::jsonb`),
    )
    .with('event', (db) => db.insertInto('events').values(event))
    .with('delivery', (db) =>
      db
        .insertInto('webhook_deliveries')
        .columns([...DELIVERY_COLUMNS, 'url', 'target'])
        .expression((eb) =>
          eb.selectFrom('config').select([
            ...deliveryValues(delivery),
            sql<string>`config.url`.as('url'),
            // Every configured URL has its host (migration 0013); should one not, its URL groups its deliveries.
            sql<string>`coalesce(config.target, config.url)`.as('target'),
          ]),
        )
        .returning('uuid'),
    )
    .selectFrom('delivery')
    .select(wakeDispatchers().as('notified'))

/**
 * What an outbox delivery's INSERT … SELECT writes besides its URL and target, in deliveryValues' order. Not its
 * body: that is the event's, which the claim reads (claimDue).
 */
const DELIVERY_COLUMNS = [
  'uuid',
  'event_id',
  'merchant_uuid',
  'mode',
  'event',
  'status',
  'attempts',
  'next_attempt_at',
  'is_test',
  'created_at',
  'updated_at',
] as const

/** The values, typed (a SELECT's parameters have none of their own). */
const deliveryValues = (d: OutboxDelivery) => [
  sql<string>`${d.uuid}::uuid`.as('uuid'),
  sql<string>`${d.eventId}::uuid`.as('event_id'),
  sql<string>`${d.merchantUuid}::uuid`.as('merchant_uuid'),
  sql<Mode>`${d.mode}::text`.as('mode'),
  sql<string>`${d.event}::text`.as('event'),
  sql<'pending'>`'pending'`.as('status'),
  sql<number>`0`.as('attempts'),
  sql<Date>`${d.at}::timestamptz`.as('next_attempt_at'),
  sql<boolean>`false`.as('is_test'),
  sql<Date>`${d.at}::timestamptz`.as('created_at'),
  sql<Date>`${d.at}::timestamptz`.as('updated_at'),
]

export const insertDelivery = (db: Executor, row: Insertable<WebhookDeliveriesTable>) =>
  db.insertInto('webhook_deliveries').values(row).returningAll().executeTakeFirstOrThrow()

export const findDelivery = (db: Executor, scope: Scope, uuid: string) =>
  db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .where('uuid', '=', uuid)
    .executeTakeFirst()

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

export interface AttemptRecord {
  uuid: string
  deliveryUuid: string
  attempt: number
  worker: string
  startedAt: Date
  durationMs: number
  status: number | null
  body: string | null
  error: string | null
  next: { status: 'pending' | 'succeeded' | 'failed'; nextAttemptAt: Date | null }
}

/**
 * Records finished attempts, many at once, in one statement (atomic by itself): the attempts' INSERT and their
 * deliveries' UPDATE. A delivery whose claim this worker no longer holds (its lease ran out and another worker
 * took it) is left to that worker; its attempt is still logged.
 */
export async function recordAttempts(db: Executor, records: AttemptRecord[]): Promise<void> {
  if (records.length === 0) return
  const attempts = records.map(
    (r) =>
      sql`(${r.uuid}::uuid, ${r.deliveryUuid}::uuid, ${r.attempt}::int, ${r.worker}::text, ${r.startedAt}::timestamptz,
        ${r.durationMs}::int, ${r.status}::int, ${r.body}::text, ${r.error}::text)`,
  )
  const outcomes = records.map(
    (r) =>
      sql`(${r.deliveryUuid}::uuid, ${r.worker}::text, ${r.attempt}::int, ${r.next.status}::text, ${r.next.nextAttemptAt}::timestamptz,
        ${r.startedAt}::timestamptz, ${r.status}::int, ${r.body}::text, ${r.durationMs}::int, ${r.error}::text)`,
  )
  await sql`
    WITH logged AS (
      INSERT INTO webhook_attempts (uuid, delivery_uuid, attempt, worker, started_at, duration_ms, response_status, response_body, error)
      VALUES ${sql.join(attempts)}
    )
    UPDATE webhook_deliveries d SET
      attempts = v.attempt, status = v.status, next_attempt_at = v.next_attempt_at, last_attempt_at = v.started_at,
      response_status = v.response_status, response_body = v.response_body, duration_ms = v.duration_ms, error = v.error,
      locked_until = NULL, locked_by = NULL, updated_at = now()
    FROM (VALUES ${sql.join(outcomes)}) AS v(uuid, worker, attempt, status, next_attempt_at, started_at, response_status, response_body, duration_ms, error)
    WHERE d.uuid = v.uuid AND d.locked_by = v.worker`.execute(db)
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

/** What the events list filters on; every field narrows the list, and they combine with AND. */
export interface EventFilters {
  types?: EventName[]
  from?: Date
  to?: Date
  /** A transaction or payout (the event's aggregate), or a refund (the event its success caused). */
  objectUuid?: string
}

/** The events list's order: newest first by when the event occurred, ties broken by its id. */
export const EVENT_KEYSET: KeysetColumns = { time: 'occurred_at', id: 'uuid' }

/**
 * The summary of an event's deliveries (there is at most one today): none, else pending while any is, else
 * succeeded when any reached its target, else failed.
 */
const webhookStatus = sql<WebhookStatus>`(
  SELECT CASE
    WHEN count(*) = 0 THEN 'none'
    WHEN bool_or(d.status = 'pending') THEN 'pending'
    WHEN bool_or(d.status = 'succeeded') THEN 'succeeded'
    ELSE 'failed' END
  FROM webhook_deliveries d WHERE d.event_id = events.uuid)`.as('webhook_status')

/**
 * The merchant's events in one mode that match `filters`, each with its webhook status, in no order and
 * unlimited: the list pages it (listEventsPage), and an export may walk it in keyset batches (EVENT_KEYSET).
 */
export function eventsQuery(db: Executor, scope: Scope, filters: EventFilters) {
  let query = db
    .selectFrom('events')
    .selectAll()
    .select(webhookStatus)
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
  if (filters.types?.length) query = query.where('event', 'in', filters.types)
  if (filters.from) query = query.where('occurred_at', '>=', filters.from)
  if (filters.to) query = query.where('occurred_at', '<=', filters.to)
  const objectUuid = filters.objectUuid
  if (objectUuid)
    query = query.where((eb) =>
      eb.or([eb('aggregate_uuid', '=', objectUuid), eb('refund_uuid', '=', objectUuid)]),
    )
  return query
}

export type EventRow = Awaited<ReturnType<ReturnType<typeof eventsQuery>['executeTakeFirstOrThrow']>>

/** One page of the merchant's events in keyset order (newest first), filtered. */
export const listEventsPage = (
  db: Executor,
  scope: Scope,
  filters: EventFilters,
  cursor: Cursor | null,
  limit: number,
) => keysetPage(eventsQuery(db, scope, filters), cursor, limit, EVENT_KEYSET)

export const findEvent = (db: Executor, scope: Scope, uuid: string) =>
  eventsQuery(db, scope, {}).where('uuid', '=', uuid).executeTakeFirst()

/**
 * Up to `limit` of the oldest events that occurred before `before` and have no delivery still pending,
 * locked; rows another worker holds are skipped, so purges side by side never collide.
 */
export const lockExpiredEvents = async (db: Executor, before: Date, limit: number): Promise<string[]> =>
  (
    await sql<{ uuid: string }>`
      SELECT e.uuid FROM events e
      WHERE e.occurred_at < ${before}
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.uuid AND d.status = 'pending')
      ORDER BY e.occurred_at
      LIMIT ${limit}
      FOR UPDATE OF e SKIP LOCKED`.execute(db)
  ).rows.map((row) => row.uuid)

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

export async function deleteEvents(db: Executor, uuids: string[]): Promise<number> {
  if (uuids.length === 0) return 0
  const result = await db.deleteFrom('events').where('uuid', 'in', uuids).executeTakeFirst()
  return Number(result.numDeletedRows)
}

/** A delivery's attempts, first first. */
export const listAttempts = (db: Executor, deliveryUuid: string) =>
  db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_uuid', '=', deliveryUuid)
    .orderBy('attempt')
    .orderBy('started_at')
    .execute()

/**
 * The event stream's poll: the merchant's events in one mode that occurred at `from` or later, oldest first,
 * leaving out those already sent (`except`), at most `limit`.
 */
export const eventsSince = (
  db: Executor,
  scope: Scope,
  input: { from: Date; types?: EventName[]; except: string[]; limit: number },
) => {
  let query = db
    .selectFrom('events')
    .select(['uuid', 'event', 'body', 'occurred_at'])
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .where('occurred_at', '>=', input.from)
  if (input.types?.length) query = query.where('event', 'in', input.types)
  if (input.except.length) query = query.where('uuid', 'not in', input.except)
  return query.orderBy('occurred_at').orderBy('uuid').limit(input.limit).execute()
}

import { type Insertable, sql } from 'kysely'
import { compiledOnce } from '../../../db/driver/statement.ts'
import type { Executor } from '../../../db/index.ts'
import { type KeysetColumns, keysetPage } from '../../../db/keyset.ts'
import type { Scope } from '../../../db/scope.ts'
import type { EventsTable, Mode } from '../../../db/types.ts'
import type { Cursor } from '../../../http/pagination.ts'
import type { EventName, WebhookStatus } from '../schemas.ts'
import { wakeDispatchers } from './deliveries.ts'

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

export async function deleteEvents(db: Executor, uuids: string[]): Promise<number> {
  if (uuids.length === 0) return 0
  const result = await db.deleteFrom('events').where('uuid', 'in', uuids).executeTakeFirst()
  return Number(result.numDeletedRows)
}

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

import { EXPORT_BATCH_ROWS, keysetBatches } from '../../db/keyset.ts'
import { scopeOf } from '../../db/scope.ts'
import type { AuthContext } from '../../http/auth.ts'
import type { CsvColumn } from '../../http/csv.ts'
import { parseDateRange } from '../../http/date-filter.ts'
import { notFound, validationError } from '../../http/errors.ts'
import { exportQuery, filterDigest, listAnswer } from '../../http/pagination.ts'
import { isUuid } from '../../lib/ids.ts'
import { distinctSorted } from '../../lib/lists.ts'
import type { WebhookDeps } from './deps.ts'
import * as eventRepo from './repository/events.ts'
import { EVENT_NAMES, type EventName, type ListEventsInput, type WebhookStatus } from './schemas.ts'

const isEventName = (value: string): value is EventName => (EVENT_NAMES as readonly string[]).includes(value)

/**
 * The events list's query as the repository's filters, normalised so that equal filters compare equal (the
 * cursor digest): distinct types in order, dates as instants, the uuid in lower case. Pure; an invalid value is
 * 422 on its field. An export takes the same query and filters.
 */
export function eventFilters(query: Omit<ListEventsInput, 'cursor' | 'per_page'>): eventRepo.EventFilters {
  let types: EventName[] | undefined
  if (query.type !== undefined) {
    const names = distinctSorted(query.type)
    const unknown = names.filter((name) => !isEventName(name))
    if (unknown.length)
      throw validationError(
        'type',
        `names an unknown event (${unknown.join(', ')}); the events are ${EVENT_NAMES.join(', ')}`,
      )
    types = names as EventName[]
  }
  const { from, to } = parseDateRange('created_from', query.created_from, 'created_to', query.created_to)
  let objectUuid: string | undefined
  if (query.object_uuid !== undefined) {
    objectUuid = query.object_uuid.toLowerCase()
    if (!isUuid(objectUuid))
      throw validationError('object_uuid', 'must be the uuid of a transaction, refund or payout')
  }
  return { types, from, to, objectUuid }
}

/** What a cursor remembers of the filters it was made under. */
const digestOf = (filters: eventRepo.EventFilters) =>
  filterDigest({
    type: filters.types?.join(','),
    created_from: filters.from?.toISOString(),
    created_to: filters.to?.toISOString(),
    object_uuid: filters.objectUuid,
  })

/**
 * An event as the API shows it: the body its webhook carries (stored once, sent as is on every attempt),
 * parsed, and how its delivery stands.
 */
export function eventView(
  row: eventRepo.EventRow,
): Record<string, unknown> & { webhook_status: WebhookStatus } {
  return { ...(JSON.parse(row.body) as Record<string, unknown>), webhook_status: row.webhook_status }
}

export function listEvents(
  deps: Pick<WebhookDeps, 'db' | 'config'>,
  auth: AuthContext,
  query: ListEventsInput,
) {
  const filters = eventFilters(query)
  return listAnswer(
    query,
    { digest: digestOf(filters), path: `${deps.config.publicBaseUrl}/integration/events` },
    // The cursors mark an event by when it occurred (the list's time column) and its id.
    async (cursor, limit): Promise<(eventRepo.EventRow & { created_at: Date })[]> =>
      (await eventRepo.listEventsPage(deps.db, scopeOf(auth), filters, cursor, limit)).map((row) => ({
        ...row,
        created_at: row.occurred_at,
      })),
    (row) => eventView(row),
  )
}

/**
 * The merchant's event in this key's mode named by `uuid`, in brief (its name, its object, when), or null: what
 * a dashboard search shows of it.
 */
export async function findEventBrief(deps: Pick<WebhookDeps, 'db'>, auth: AuthContext, uuid: string) {
  const row = await eventRepo.findEvent(deps.db, scopeOf(auth), uuid)
  return row
    ? { uuid: row.uuid, event: row.event, aggregate_uuid: row.aggregate_uuid, occurred_at: row.occurred_at }
    : null
}

/** The merchant's event in this key's mode, or 404 (a malformed id included). */
export async function getEvent(deps: Pick<WebhookDeps, 'db'>, auth: AuthContext, eventId: string) {
  const id = eventId.toLowerCase()
  const row = isUuid(id) ? await eventRepo.findEvent(deps.db, scopeOf(auth), id) : undefined
  if (!row) throw notFound('event')
  return eventView(row)
}

/** Every event the list's filters match, newest first, as views in batches: what a CSV export streams. */
export async function* exportEvents(
  deps: Pick<WebhookDeps, 'db'>,
  auth: AuthContext,
  query: ListEventsInput,
) {
  const filters = eventFilters(exportQuery(query))
  for await (const rows of keysetBatches(
    eventRepo.eventsQuery(deps.db, scopeOf(auth), filters),
    EXPORT_BATCH_ROWS,
    eventRepo.EVENT_KEYSET,
  ))
    yield rows.map(eventView)
}

type EventView = ReturnType<typeof eventView>

/** The object an event carries: the transaction or the payout, under its own key. */
const objectOf = (view: EventView) => (view.transaction ?? view.payout) as Record<string, unknown>

/**
 * The columns of an events CSV export, in their documented order: the envelope, the object it is about (type,
 * uuid, status), how its webhook stands, and the whole object as JSON text.
 */
export const EVENT_CSV_COLUMNS: CsvColumn<EventView>[] = [
  { header: 'event_id', value: (view) => view.event_id },
  { header: 'event', value: (view) => view.event },
  { header: 'occurred_at', value: (view) => view.occurred_at },
  { header: 'object_type', value: (view) => (view.transaction ? 'transaction' : 'payout') },
  { header: 'object_uuid', value: (view) => objectOf(view).uuid },
  { header: 'object_status', value: (view) => objectOf(view).status },
  { header: 'aggregate_version', value: (view) => view.aggregate_version },
  { header: 'webhook_status', value: (view) => view.webhook_status },
  { header: 'schema_version', value: (view) => view.schema_version },
  { header: 'object', value: objectOf },
]

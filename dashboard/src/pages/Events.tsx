import { useState } from 'react'
import { Link } from 'react-router'
import { type ApiEvent, api, data } from '../api/client'
import { WEBHOOK_EVENT_VALUES } from '../api/values'
import {
  FilterDates,
  FilterInput,
  FilterSelect,
  Filters,
  Paged,
  ref,
  Scroll,
  Status,
  Table,
  useExport,
  useListFilters,
  usePage,
} from '../components'
import { when } from '../format'
import { useMode } from '../layout'

/** The object an event is about: its payment or payout, and where the dashboard shows it. */
const objectOf = (event: ApiEvent) =>
  'transaction' in event
    ? { kind: 'payment', uuid: event.transaction.uuid, path: `payments/${event.transaction.uuid}` }
    : { kind: 'payout', uuid: event.payout.uuid, path: `payouts/${event.payout.uuid}` }

/** The events' filters, in the page's address (a search result links to an object's events this way). */
const FILTERS = ['type', 'object_uuid', 'created_from', 'created_to'] as const

/** Developers → Events: every event of the mode, newest first, each with the payload a webhook carries. */
export function Events() {
  const mode = useMode()
  const { query, apply: filter } = useListFilters(FILTERS)
  const csv = useExport('/integration/events', 'events', query)
  const [open, setOpen] = useState<string | null>(null)
  const events = usePage([mode, 'events', query], (paging) =>
    data(api(mode).GET('/integration/events', { params: { query: { ...query, ...paging } } })),
  )
  return (
    <>
      <h1>Events</h1>
      <Filters label="Filter events" onSubmit={filter} csv={csv}>
        <FilterSelect label="Type" name="type" values={WEBHOOK_EVENT_VALUES} />
        <FilterInput
          label="Object id"
          name="object_uuid"
          size={38}
          placeholder="payment, refund or payout uuid"
        />
        <FilterDates from="created_from" to="created_to" />
      </Filters>
      <Paged list={events} error={events.error ?? csv.error}>
        {(rows) => (
          <>
            <Table
              name="Events"
              head={[
                'When',
                ref('Event'),
                'Object',
                'Version',
                { name: 'Webhook', card: 'status' },
                'Payload',
              ]}
              rows={rows}
              empty="No events match."
              row={(event) => {
                const object = objectOf(event)
                return (
                  <tr key={event.event_id}>
                    <td>{when(event.occurred_at)}</td>
                    <td>{event.event}</td>
                    <td>
                      <Link to={`/${mode}/${object.path}`} className="mono">
                        {object.kind} {object.uuid}
                      </Link>
                    </td>
                    <td>{event.aggregate_version}</td>
                    <td>
                      <Status status={event.webhook_status} />
                    </td>
                    <td>
                      <button
                        type="button"
                        className="link-button"
                        aria-expanded={open === event.event_id}
                        onClick={() => setOpen(open === event.event_id ? null : event.event_id)}
                      >
                        {open === event.event_id ? 'Hide' : 'Show'}
                        <span className="visually-hidden"> the payload of {event.event_id}</span>
                      </button>
                    </td>
                  </tr>
                )
              }}
            />
            {open && (
              <section className="card" aria-label="Event payload">
                <h2>Payload of event {open}</h2>
                <Scroll label="The payload, scrollable" className="payload">
                  <pre>
                    {JSON.stringify(
                      rows.find((e) => e.event_id === open),
                      null,
                      2,
                    )}
                  </pre>
                </Scroll>
              </section>
            )}
          </>
        )}
      </Paged>
    </>
  )
}

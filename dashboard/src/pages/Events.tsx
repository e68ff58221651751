import { useState } from 'react'
import { type ApiEvent, api, data } from '../api/client'
import { ListHeading, Paged, ref, Scroll, Status, Table, useExport, usePage } from '../components'
import { when } from '../format'
import { useMode } from '../layout'

/** The object an event is about: its transaction or payout. */
const objectOf = (event: ApiEvent) =>
  'transaction' in event
    ? { kind: 'payment', uuid: event.transaction.uuid }
    : { kind: 'payout', uuid: event.payout.uuid }

/** Developers → Events: every event of the mode, newest first, each with the payload a webhook carries. */
export function Events() {
  const mode = useMode()
  const csv = useExport('/integration/events', 'events')
  const [open, setOpen] = useState<string | null>(null)
  const events = usePage([mode, 'events'], (paging) =>
    data(api(mode).GET('/integration/events', { params: { query: paging } })),
  )
  return (
    <>
      <ListHeading title="Events" csv={csv} />
      <Paged list={events}>
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
              row={(event) => {
                const object = objectOf(event)
                return (
                  <tr key={event.event_id}>
                    <td>{when(event.occurred_at)}</td>
                    <td>{event.event}</td>
                    <td className="mono nowrap">
                      {object.kind} {object.uuid}
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

import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { useSearchParams } from 'react-router'
import { api, type Delivery, data } from '../api/client'
import { ErrorNote, Pager, Scroll, Status } from '../components'
import { when } from '../format'
import { useMode } from '../layout'

const OVERLAPS = [
  [0, 'none: the old secret stops now'],
  [3600, '1 hour'],
  [86400, '24 hours'],
  [604800, '7 days'],
] as const

/** Developers → Webhooks: the endpoint, a test delivery, the secret and its rotation, and the delivery log. */
export function Webhooks() {
  const mode = useMode()
  const client = api(mode)
  const queryClient = useQueryClient()
  const [params, setParams] = useSearchParams()
  const [shownSecret, setShownSecret] = useState<string | null>(null)
  const config = useQuery({
    queryKey: [mode, 'webhook'],
    queryFn: () => data(client.GET('/integration/webhook')),
  })
  const refresh = () => queryClient.invalidateQueries({ queryKey: [mode] })
  const save = useMutation({
    mutationFn: (url: string | null) =>
      data(
        client.PUT('/integration/webhook', {
          body: { url, enabled: true, events: config.data?.events },
        }),
      ),
    onSuccess: refresh,
  })
  const test = useMutation({
    mutationFn: () => data(client.POST('/integration/webhook/test')),
    onSuccess: refresh,
  })
  const rotate = useMutation({
    mutationFn: (overlap: number) =>
      data(client.POST('/integration/webhook/secret/rotate', { body: { overlap_seconds: overlap } })),
    onSuccess: (answer) => {
      setShownSecret(answer.secret)
      refresh()
    },
  })
  const status = params.get('status') || undefined
  const cursor = params.get('cursor') || undefined
  const log = useQuery({
    queryKey: [mode, 'deliveries', status, cursor],
    queryFn: () =>
      data(
        client.GET('/integration/webhook/deliveries', {
          params: { query: { status: status as Delivery['status'] | undefined, cursor, per_page: 25 } },
        }),
      ),
    placeholderData: keepPreviousData,
  })

  function submitUrl(event: FormEvent<HTMLFormElement>) {
    event.preventDefault()
    const url = String(new FormData(event.currentTarget).get('url') ?? '').trim()
    save.mutate(url || null)
  }

  return (
    <>
      <h1>Webhooks</h1>
      <ErrorNote error={config.error} />
      {config.data && (
        <section className="card" aria-labelledby="endpoint-title">
          <h2 id="endpoint-title">Endpoint</h2>
          <form className="form inline" onSubmit={submitUrl}>
            <label className="grow">
              URL that receives the {mode} mode's events
              <input
                name="url"
                type="url"
                defaultValue={config.data.url ?? ''}
                placeholder="https://shop.example/webhooks"
              />
            </label>
            <button type="submit" disabled={save.isPending}>
              Save
            </button>
          </form>
          <ErrorNote error={save.error} />
          <p>
            {config.data.enabled
              ? 'Deliveries are on'
              : `Deliveries are off${config.data.disabled_reason ? `: ${config.data.disabled_reason}` : ''}`}
            . Events: {config.data.events.join(', ')}.
          </p>
          <div className="buttons">
            <button
              type="button"
              className="secondary"
              onClick={() => test.mutate()}
              disabled={test.isPending || !config.data.url}
            >
              Send a test delivery
            </button>
          </div>
          <ErrorNote error={test.error} />
          {test.data && (
            <p role="status">
              Test delivery <Status status={test.data.status} />
              {test.data.response_status ? `: your endpoint answered HTTP ${test.data.response_status}` : ''}
              {test.data.error ? `: ${test.data.error}` : ''}
            </p>
          )}
        </section>
      )}
      {config.data && (
        <section className="card" aria-labelledby="secret-title">
          <h2 id="secret-title">Signing secret</h2>
          <p>
            Every delivery is signed with this secret (Standard Webhooks). After a rotation the old secret
            keeps signing too, beside the new one, for the overlap you choose.
            {config.data.previous_secret_expires_at &&
              ` The previous secret is still used until ${when(config.data.previous_secret_expires_at)}.`}
          </p>
          {shownSecret && (
            <div role="status" className="ok">
              <p>The new secret, shown once here:</p>
              <input
                className="mono wide"
                readOnly
                value={shownSecret}
                aria-label="New signing secret"
                onFocus={(e) => e.currentTarget.select()}
              />
            </div>
          )}
          <form
            className="form inline"
            onSubmit={(e) => {
              e.preventDefault()
              const overlap = Number(new FormData(e.currentTarget).get('overlap'))
              if (window.confirm('Rotate the signing secret? Your endpoint must accept the new one.'))
                rotate.mutate(overlap)
            }}
          >
            <label>
              Keep the old secret for
              <select name="overlap" defaultValue={86400}>
                {OVERLAPS.map(([seconds, label]) => (
                  <option key={seconds} value={seconds}>
                    {label}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" disabled={rotate.isPending}>
              Rotate secret
            </button>
          </form>
          <ErrorNote error={rotate.error} />
        </section>
      )}
      <h2 className="spaced">Delivery log</h2>
      <search aria-label="Filter deliveries">
        <form
          className="filters"
          key={params.toString()}
          onSubmit={(e) => {
            e.preventDefault()
            const value = String(new FormData(e.currentTarget).get('status') ?? '')
            setParams(value ? { status: value } : {})
          }}
        >
          <label>
            Status
            <select name="status" defaultValue={status ?? ''}>
              <option value="">Any</option>
              <option value="pending">pending</option>
              <option value="succeeded">succeeded</option>
              <option value="failed">failed</option>
            </select>
          </label>
          <button type="submit">Apply</button>
        </form>
      </search>
      <ErrorNote error={log.error} />
      {log.data && (
        <>
          <Scroll label="Delivery log table">
            <table aria-label="Delivery log">
              <thead>
                <tr>
                  <th scope="col">Created</th>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last answer</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {log.data.data.map((d) => (
                  <DeliveryRow key={d.uuid} delivery={d} />
                ))}
                {log.data.data.length === 0 && (
                  <tr>
                    <td colSpan={6}>No deliveries.</td>
                  </tr>
                )}
              </tbody>
            </table>
          </Scroll>
          <Pager meta={log.data.meta} />
        </>
      )}
    </>
  )
}

function DeliveryRow({ delivery }: { delivery: Delivery }) {
  const mode = useMode()
  const queryClient = useQueryClient()
  const [key] = useState(() => crypto.randomUUID())
  const redeliver = useMutation({
    mutationFn: () =>
      data(
        api(mode).POST('/integration/webhook/deliveries/{uuid}/redeliver', {
          params: { path: { uuid: delivery.uuid }, header: { 'idempotency-key': key } },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: [mode, 'deliveries'] }),
  })
  return (
    <tr>
      <td>{when(delivery.created_at)}</td>
      <td>{delivery.event}</td>
      <td>
        <Status status={delivery.status} />
      </td>
      <td>{delivery.attempts}</td>
      <td className="clip">
        {delivery.response_status ? `HTTP ${delivery.response_status}` : (delivery.error ?? '—')}
        {delivery.response_body ? (
          <span className="mono"> {delivery.response_body.slice(0, 200)}</span>
        ) : null}
      </td>
      <td>
        {/* A test delivery is not redelivered (the API refuses it): send a new test instead. */}
        {delivery.status === 'failed' && !delivery.is_test && (
          <button
            type="button"
            className="secondary"
            aria-label={`Redeliver ${delivery.event} of ${when(delivery.created_at)}`}
            disabled={redeliver.isPending || redeliver.isSuccess}
            onClick={() => redeliver.mutate()}
          >
            {redeliver.isSuccess ? 'Redelivery queued' : 'Redeliver'}
          </button>
        )}
        <ErrorNote error={redeliver.error} />
      </td>
    </tr>
  )
}

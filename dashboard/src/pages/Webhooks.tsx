import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { ApiError, api, type Delivery, data, type Schemas } from '../api/client'
import { dashboardApi, inMode } from '../api/dashboard'
import { DELIVERY_STATUS_VALUES, WEBHOOK_EVENT_VALUES } from '../api/values'
import {
  ACTIONS,
  CodeField,
  CopyButton,
  codeOf,
  ErrorNote,
  FilterSelect,
  Filters,
  MutationForm,
  Paged,
  ref,
  Scroll,
  STATUS,
  Status,
  Table,
  useListFilters,
  usePage,
} from '../components'
import { prettyJson, when } from '../format'
import { useMode } from '../layout'
import { useMe } from '../session'

type EventName = Schemas['WebhookConfig']['events'][number]

/** The delivery log's filters, in the page's address. */
const LOG_FILTERS = ['status', 'event'] as const

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
  const [shownSecret, setShownSecret] = useState<string | null>(null)
  const [details, setDetails] = useState<string | null>(null)
  const config = useQuery({
    queryKey: [mode, 'webhook'],
    queryFn: () => data(client.GET('/integration/webhook')),
  })
  const refresh = () => queryClient.invalidateQueries({ queryKey: [mode] })
  const save = useMutation({
    mutationFn: (change: Pick<Schemas['UpdateWebhookConfigRequest'], 'url' | 'events'>) =>
      data(
        client.PUT('/integration/webhook', {
          body: { url: change.url, enabled: true, events: change.events },
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
  const { query, apply: filter } = useListFilters(LOG_FILTERS)
  const log = usePage([mode, 'deliveries', query], (paging) =>
    data(
      client.GET('/integration/webhook/deliveries', {
        params: {
          query: {
            status: query.status as Delivery['status'] | undefined,
            event: query.event as EventName | undefined,
            ...paging,
          },
        },
      }),
    ),
  )

  function submitUrl(event: FormEvent<HTMLFormElement>) {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    const url = String(form.get('url') ?? '').trim()
    save.mutate({ url: url || null, events: form.getAll('events').map(String) as EventName[] })
  }

  return (
    <>
      <h1>Webhooks</h1>
      <ErrorNote error={config.error} />
      {config.data && (
        <section className="card" aria-labelledby="endpoint-title">
          <h2 id="endpoint-title">Endpoint</h2>
          <MutationForm mutation={save} submit="Save" onSubmit={submitUrl}>
            <label className="grow">
              URL that receives the {mode} mode's events
              <input
                name="url"
                type="url"
                defaultValue={config.data.url ?? ''}
                placeholder="https://shop.example/webhooks"
              />
            </label>
            <fieldset className="events-choice">
              <legend>Events sent</legend>
              {WEBHOOK_EVENT_VALUES.map((name) => (
                <label key={name} className="check">
                  <input
                    type="checkbox"
                    name="events"
                    value={name}
                    defaultChecked={config.data.events.includes(name)}
                  />
                  {name}
                </label>
              ))}
            </fieldset>
          </MutationForm>
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
          <SecretReveal masked={config.data.secret} />
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
          <MutationForm
            mutation={rotate}
            submit="Rotate secret"
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
          </MutationForm>
        </section>
      )}
      <h2 className="spaced">Delivery log</h2>
      <Filters label="Filter deliveries" onSubmit={filter}>
        <FilterSelect label="Status" name="status" values={DELIVERY_STATUS_VALUES} />
        <FilterSelect label="Event" name="event" values={[...WEBHOOK_EVENT_VALUES, 'webhook.test']} />
      </Filters>
      <Paged list={log}>
        {(rows) => (
          <Table
            name="Delivery log"
            head={['Created', ref('Event'), STATUS, 'Attempts', 'Last answer', ACTIONS]}
            rows={rows}
            row={(d) => (
              <tr key={d.uuid}>
                <td>{when(d.created_at)}</td>
                <td>{d.event}</td>
                <td>
                  <Status status={d.status} />
                </td>
                <td>{d.attempts}</td>
                <td className="clip">
                  {d.response_status ? `HTTP ${d.response_status}` : (d.error ?? '—')}
                  {d.response_body ? <span className="mono"> {d.response_body.slice(0, 200)}</span> : null}
                </td>
                <td>
                  <DeliveryActions delivery={d} onDetails={() => setDetails(d.uuid)} />
                </td>
              </tr>
            )}
            empty="No deliveries."
          />
        )}
      </Paged>
      {log.data && details && <DeliveryDetails uuid={details} onClose={() => setDetails(null)} />}
    </>
  )
}

/**
 * The signing secret in force, masked as the service answers it, and shown whole on request: with a current code
 * of the user's authenticator app when they have one or the merchant requires it (the service asks it then, and
 * writes the reveal to the audit log).
 */
function SecretReveal({ masked }: { masked: string }) {
  const mode = useMode()
  const me = useMe()
  const security = useQuery({
    queryKey: ['merchant-security'],
    queryFn: () => data(dashboardApi.GET('/dashboard/api/merchant/security')),
  })
  const reveal = useMutation({
    mutationFn: (code: string | null) =>
      data(
        dashboardApi.POST('/dashboard/api/webhook/secret/reveal', {
          headers: { ...inMode(mode).headers, ...(code ? { 'x-dashboard-totp': code } : {}) },
        }),
      ),
  })
  const refused = reveal.error instanceof ApiError ? reveal.error : null
  const askedCode = refused?.body?.error.details?.totp_required === true
  const needsCode = me.user.totp_enabled || security.data?.require_totp === true || askedCode
  if (reveal.data)
    return (
      <div className="ok">
        <label>
          Current signing secret
          <input
            className="mono wide"
            readOnly
            value={reveal.data.secret}
            onFocus={(e) => e.currentTarget.select()}
          />
        </label>
        <div className="buttons">
          <CopyButton text={reveal.data.secret} label="Copy the secret" />
          <button type="button" className="secondary" onClick={() => reveal.reset()}>
            Hide
          </button>
        </div>
      </div>
    )
  return (
    <>
      <p>
        Current secret: <span className="mono">{masked}</span>
      </p>
      <MutationForm
        mutation={reveal}
        submit="Reveal secret"
        onSubmit={(e) => {
          e.preventDefault()
          reveal.mutate(needsCode ? codeOf(e.currentTarget) : null)
        }}
      >
        {needsCode && <CodeField />}
      </MutationForm>
      <p className="summary">Each reveal is written to the audit log.</p>
    </>
  )
}

/** A delivery's buttons: its details, and Redeliver for a failed one. */
function DeliveryActions({ delivery, onDetails }: { delivery: Delivery; onDetails: () => void }) {
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
    <>
      <button
        type="button"
        className="link-button"
        aria-label={`Details of ${delivery.event} of ${when(delivery.created_at)}`}
        onClick={onDetails}
      >
        Details
      </button>{' '}
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
    </>
  )
}

/** One delivery's request, as sent on every attempt, and each attempt's answer from the endpoint. */
function DeliveryDetails({ uuid, onClose }: { uuid: string; onClose: () => void }) {
  const mode = useMode()
  const detail = useQuery({
    queryKey: [mode, 'delivery-attempts', uuid],
    queryFn: () =>
      data(
        dashboardApi.GET('/dashboard/api/webhook/deliveries/{uuid}/attempts', {
          params: { path: { uuid } },
          ...inMode(mode),
        }),
      ),
  })
  return (
    <section className="card" aria-labelledby="delivery-detail-title">
      <div className="section-head">
        <h2 id="delivery-detail-title">Delivery {uuid}</h2>
        <button type="button" className="secondary" onClick={onClose}>
          Close
        </button>
      </div>
      <ErrorNote error={detail.error} />
      {detail.data && (
        <>
          <h3>
            Request: {detail.data.request.method} <span className="mono">{detail.data.request.url}</span>
          </h3>
          <Scroll label="Request headers and body, scrollable" className="payload">
            <pre>
              {Object.entries(detail.data.request.headers)
                .map(([name, value]) => `${name}: ${value}`)
                .join('\n')}
              {'\n\n'}
              {prettyJson(detail.data.request.body ?? '')}
            </pre>
          </Scroll>
          <h3 className="spaced">Attempts</h3>
          {detail.data.attempts.length === 0 && <p>No attempt yet.</p>}
          <ol className="attempts">
            {detail.data.attempts.map((a) => (
              <li key={`${a.attempt}-${a.started_at}`}>
                Attempt {a.attempt} at {when(a.started_at)} (webhook-timestamp {a.webhook_timestamp}),{' '}
                {a.duration_ms} ms:{' '}
                {a.response_status ? `HTTP ${a.response_status}` : (a.error ?? 'no answer')}
                {a.response_body && (
                  <Scroll label={`Answer to attempt ${a.attempt}, scrollable`} className="payload">
                    <pre>{prettyJson(a.response_body)}</pre>
                  </Scroll>
                )}
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  )
}

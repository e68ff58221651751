import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useParams } from 'react-router'
import { type ApiEvent, api, data, type Refund, type Transaction } from '../api/client'
import { Details, ErrorNote, type Pair, RecordHead, RefundsTable, Status, Timeline } from '../components'
import { money, toMajorText, toMinor, when, words } from '../format'
import { useMode } from '../layout'
import { useCan } from '../session'

export function Payment() {
  const mode = useMode()
  const { uuid = '' } = useParams()
  const client = api(mode)
  const payment = useQuery({
    queryKey: [mode, 'transaction', uuid],
    queryFn: () => data(client.GET('/integration/transactions/{uuid}', { params: { path: { uuid } } })),
  })
  const refunds = useQuery({
    queryKey: [mode, 'refunds', 'of', uuid],
    queryFn: () =>
      data(
        client.GET('/integration/refunds', { params: { query: { transaction_uuid: uuid, per_page: 100 } } }),
      ),
    enabled: payment.isSuccess,
  })
  const events = useQuery({
    queryKey: [mode, 'events', 'of', uuid],
    queryFn: () =>
      data(client.GET('/integration/events', { params: { query: { object_uuid: uuid, per_page: 100 } } })),
    enabled: payment.isSuccess,
  })

  if (payment.error)
    return (
      <>
        <h1>Payment</h1>
        <ErrorNote error={payment.error} />
        <p>
          <Link to={`/${mode}/payments`}>Back to payments</Link>
        </p>
      </>
    )
  if (!payment.data) return <p className="loading">Loading…</p>
  const t = payment.data
  const taken = (refunds.data?.data ?? [])
    .filter((r) => r.status !== 'failed')
    .reduce((sum, r) => sum + r.amount_minor, 0)
  const remaining = t.amount - taken

  // What the payment is, then its money.
  const details: Pair[] = [
    ['Payment id', t.uuid, 'mono'],
    ['External id', t.external_id],
    ['Description', t.description ?? '—'],
    ['Method', words(t.payment_method)],
    ['Created', when(t.created_at)],
    ['Paid', when(t.paid_at)],
    [
      'Hosted page',
      <a key="link" href={t.payment_url} target="_blank" rel="noreferrer noopener">
        Open the payment page
      </a>,
    ],
  ]
  const amounts: Pair[] = [
    ['Amount', money(t.amount, t.currency)],
    ['Customer paid', money(t.gross_amount, t.currency)],
    [
      'Fee',
      `${money(t.fee_amount, t.currency)}: paid by you ${money(t.merchant_fee_merchant_amount, t.currency)}, by the customer ${money(t.merchant_fee_customer_amount, t.currency)}`,
    ],
    ['Net to you', money(t.net_amount, t.currency)],
    [
      'FX rate',
      `1 ${t.settlement_currency} = ${t.fx_rate} ${t.currency} (as of ${when(t.fx_rate_updated_at)})`,
    ],
    [
      'Settlement',
      `${money(t.settlement_amount, t.settlement_currency)}, available ${when(t.settle_available_at)}`,
    ],
    ['Refunded', money(taken, t.currency)],
  ]

  return (
    <>
      <RecordHead list="payments" record={t} amount={money(t.amount, t.currency)} />
      <div className="grid-2">
        <Details id="details-title" title="Details" pairs={details}>
          {t.metadata &&
            Object.entries(t.metadata).map(([k, v]) => (
              <div key={k} className="pair">
                <dt>Metadata: {k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
        </Details>
        <Details id="money-title" title="Money" pairs={amounts} />
      </div>
      <RefundPanel payment={t} remaining={remaining} />
      <section className="card" aria-labelledby="timeline-title">
        <h2 id="timeline-title">Timeline</h2>
        <ErrorNote error={events.error} />
        <Timeline createdAt={t.created_at} events={events.data?.data ?? []} prefix="transaction." />
      </section>
      <section className="card" aria-labelledby="refunds-title">
        <h2 id="refunds-title">Refunds</h2>
        <ErrorNote error={refunds.error} />
        <RefundList refunds={refunds.data?.data ?? []} />
      </section>
      <section className="card" aria-labelledby="events-title">
        <h2 id="events-title">Events and webhook deliveries</h2>
        {(events.data?.data ?? []).length === 0 && <p>No events yet.</p>}
        <ul className="events">
          {(events.data?.data ?? []).map((e) => (
            <EventItem key={e.event_id} event={e} />
          ))}
        </ul>
      </section>
    </>
  )
}

function RefundList({ refunds }: { refunds: Refund[] }) {
  if (refunds.length === 0) return <p>No refunds.</p>
  return <RefundsTable name="Refunds of this payment" label="Refunds of this payment, table" rows={refunds} />
}

function EventItem({ event }: { event: ApiEvent }) {
  const mode = useMode()
  const [open, setOpen] = useState(false)
  const deliveries = useQuery({
    queryKey: [mode, 'deliveries', event.event_id],
    queryFn: () =>
      data(
        api(mode).GET('/integration/webhook/deliveries', { params: { query: { event_id: event.event_id } } }),
      ),
    enabled: open,
  })
  return (
    <li>
      <button type="button" className="link-button" aria-expanded={open} onClick={() => setOpen(!open)}>
        {event.event} · {when(event.occurred_at)} · webhook {event.webhook_status}
      </button>
      {open && (
        <div className="deliveries">
          <ErrorNote error={deliveries.error} />
          {deliveries.data?.data.length === 0 && <p>No delivery (no webhook endpoint was configured).</p>}
          {deliveries.data?.data.map((d) => (
            <p key={d.uuid}>
              <Status status={d.status} /> to <span className="mono">{d.url}</span>: {d.attempts} attempt
              {d.attempts === 1 ? '' : 's'}
              {d.response_status ? `, last answer HTTP ${d.response_status}` : ''}
              {d.error ? `, ${d.error}` : ''}
            </p>
          ))}
        </div>
      )}
    </li>
  )
}

type Step =
  | { kind: 'closed' }
  | { kind: 'form' }
  | { kind: 'confirm'; amount: number; reason: string; key: string }

/**
 * Refund part or all of a payment: amount (default: what remains) and reason, then a confirmation step. The
 * Idempotency-Key is made when the refund is confirmed and kept for retries of that confirmation, so a
 * double click or a retry after a lost answer refunds once.
 */
function RefundPanel({ payment, remaining }: { payment: Transaction; remaining: number }) {
  const mode = useMode()
  const canRefund = useCan('refund')
  const queryClient = useQueryClient()
  const [step, setStep] = useState<Step>({ kind: 'closed' })
  const [fieldError, setFieldError] = useState<string | null>(null)
  const refund = useMutation({
    mutationFn: (s: Extract<Step, { kind: 'confirm' }>) =>
      data(
        api(mode).POST('/integration/refunds', {
          body: { transaction_uuid: payment.uuid, amount_minor: s.amount, reason: s.reason || null },
          params: { header: { 'idempotency-key': s.key } },
        }),
      ),
    onSuccess: () => {
      setStep({ kind: 'closed' })
      queryClient.invalidateQueries({ queryKey: [mode] })
    },
  })
  const refundable = (payment.status === 'paid' || payment.status === 'partially_refunded') && remaining > 0
  if (!canRefund) return null

  function review(event: FormEvent<HTMLFormElement>) {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    const amount = toMinor(String(form.get('amount')), payment.currency)
    if (amount === null || amount <= 0)
      return setFieldError(`Enter an amount in ${payment.currency}, like 12.50.`)
    if (amount > remaining)
      return setFieldError(`At most ${money(remaining, payment.currency)} remains to refund.`)
    setFieldError(null)
    refund.reset()
    setStep({
      kind: 'confirm',
      amount,
      reason: String(form.get('reason') ?? '').trim(),
      key: crypto.randomUUID(),
    })
  }

  return (
    <section className="card" aria-labelledby="refund-title">
      <h2 id="refund-title">Refund</h2>
      {refund.data && (
        <p role="status" className="ok">
          Refund of {money(refund.data.amount_minor, refund.data.currency)} {refund.data.status}:{' '}
          {refund.data.message}
        </p>
      )}
      {!refundable && <p>Nothing remains to refund on this payment.</p>}
      {refundable && step.kind === 'closed' && (
        <button type="button" onClick={() => setStep({ kind: 'form' })}>
          Refund payment
        </button>
      )}
      {step.kind === 'form' && (
        <form className="form" onSubmit={review}>
          <label>
            Amount ({payment.currency}), at most {money(remaining, payment.currency)}
            <input
              name="amount"
              inputMode="decimal"
              defaultValue={toMajorText(remaining, payment.currency)}
              aria-invalid={fieldError ? true : undefined}
              aria-describedby={fieldError ? 'refund-amount-error' : undefined}
              required
            />
          </label>
          {fieldError && (
            <p id="refund-amount-error" role="alert" className="error">
              {fieldError}
            </p>
          )}
          <label>
            Reason (optional)
            <input name="reason" maxLength={500} />
          </label>
          <div className="buttons">
            <button type="submit">Review refund</button>
            <button type="button" className="secondary" onClick={() => setStep({ kind: 'closed' })}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {step.kind === 'confirm' && (
        <section className="confirm" aria-labelledby="confirm-title">
          <p id="confirm-title">
            Refund <strong>{money(step.amount, payment.currency)}</strong> of this payment
            {step.reason ? ` (reason: ${step.reason})` : ''}? The customer gets the money back; this cannot be
            undone.
          </p>
          <ErrorNote error={refund.error} />
          <div className="buttons">
            <button type="button" disabled={refund.isPending} onClick={() => refund.mutate(step)}>
              {refund.isPending ? 'Refunding…' : 'Confirm refund'}
            </button>
            <button type="button" className="secondary" onClick={() => setStep({ kind: 'form' })}>
              Back
            </button>
          </div>
        </section>
      )}
    </section>
  )
}

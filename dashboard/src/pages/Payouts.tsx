import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { Link, useParams, useSearchParams } from 'react-router'
import { api, data, type Schemas } from '../api/client'
import { ErrorNote, ExportButton, Pager, Status, Table, Timeline, useExport } from '../components'
import { moneyShort, payoutFigures, when } from '../format'
import { useMode } from '../layout'
import { useCan } from '../session'

/** A payout's destination, masked: the end of a wallet address or a card number, never all of it. */
function destinationOf(payout: Pick<Schemas['PayoutResponse'], 'method' | 'destination' | 'wallet'>) {
  const mask = (text: string) => (text.length > 8 ? `…${text.slice(-4)}` : text)
  if (payout.wallet) return `${payout.wallet.type} wallet ${mask(payout.wallet.address)}`
  const values = Object.values(payout.destination)
  return `${payout.method.replaceAll('_', ' ')} ${values.map(mask).join(' ')}`
}

export function Payouts() {
  const mode = useMode()
  const canPayout = useCan('payout')
  const csv = useExport('/integration/payouts', 'payouts')
  const [params] = useSearchParams()
  const cursor = params.get('cursor') || undefined
  const list = useQuery({
    queryKey: [mode, 'payouts', cursor],
    queryFn: () =>
      data(api(mode).GET('/integration/payouts', { params: { query: { cursor, per_page: 25 } } })),
    placeholderData: keepPreviousData,
  })
  return (
    <>
      <h1>Payouts</h1>
      <p className="buttons">
        {canPayout && (
          <Link className="button" to={`/${mode}/payouts/new`}>
            New payout
          </Link>
        )}
        <ExportButton csv={csv} />
      </p>
      <ErrorNote error={list.error ?? csv.error} />
      {list.data && (
        <>
          <Table
            name="Payouts"
            head={
              <>
                <th scope="col">Created</th>
                <th scope="col">External id</th>
                <th scope="col" className="num">
                  Amount
                </th>
                <th scope="col">Status</th>
                <th scope="col">Destination</th>
              </>
            }
            rows={list.data.data}
            row={(p) => (
              <tr key={p.uuid}>
                <td>{when(p.created_at)}</td>
                <td>
                  <Link to={`/${mode}/payouts/${p.uuid}`}>{p.external_id}</Link>
                </td>
                <td className="num">{moneyShort(p.amount, p.currency)}</td>
                <td>
                  <Status status={p.status} />
                </td>
                <td>{destinationOf(p)}</td>
              </tr>
            )}
            empty="No payouts yet."
            columns={5}
          />
          <Pager meta={list.data.meta} />
        </>
      )}
    </>
  )
}

export function Payout() {
  const mode = useMode()
  const { uuid = '' } = useParams()
  const payout = useQuery({
    queryKey: [mode, 'payout', uuid],
    queryFn: () => data(api(mode).GET('/integration/payouts/{uuid}', { params: { path: { uuid } } })),
    // Followed to its end: asked again every 2 s while the provider works on it.
    refetchInterval: (query) =>
      query.state.data?.status === 'pending' || query.state.data?.status === 'processing' ? 2000 : false,
  })
  const events = useQuery({
    // Asked again whenever the payout's status changes: each change is an event.
    queryKey: [mode, 'events', 'of', uuid, payout.data?.status],
    queryFn: () =>
      data(api(mode).GET('/integration/events', { params: { query: { object_uuid: uuid, per_page: 100 } } })),
    enabled: payout.isSuccess,
  })
  if (payout.error) return <ErrorNote error={payout.error} />
  if (!payout.data) return <p className="loading">Loading…</p>
  const p = payout.data
  // The figures are kept as strings in `fx`; a payout made before one was recorded falls back to its total.
  const figures = payoutFigures({
    method: p.method,
    amount: p.amount,
    currency: p.currency,
    amount_usdt_micro: Number(p.fx.amount_usdt_micro ?? p.payout_usdt_amount_micro),
    fee_usdt_micro: Number(p.fx.fee_usdt_micro ?? 0),
    payout_usdt_amount_micro: p.payout_usdt_amount_micro,
  })
  return (
    <>
      <p className="crumbs">
        <Link to={`/${mode}/payouts`}>Payouts</Link> / {p.external_id}
      </p>
      <h1>
        Payout {moneyShort(p.amount, p.currency)} <Status status={p.status} />
      </h1>
      <div className="grid-2">
        <section className="card" aria-labelledby="payout-details">
          <h2 id="payout-details">Details</h2>
          <dl className="pairs">
            <dt>Payout id</dt>
            <dd className="mono">{p.uuid}</dd>
            <dt>Destination</dt>
            <dd>{destinationOf(p)}</dd>
            <dt>Created</dt>
            <dd>{when(p.created_at)}</dd>
            <dt>Completed</dt>
            <dd>{when(p.completed_at)}</dd>
            {p.failure_reason && (
              <>
                <dt>Failure</dt>
                <dd>{p.failure_reason}</dd>
              </>
            )}
          </dl>
        </section>
        <section className="card" aria-labelledby="payout-money">
          <h2 id="payout-money">Money and FX</h2>
          <dl className="pairs">
            <dt>Recipient gets</dt>
            <dd>{figures.recipient}</dd>
            <dt>Fee</dt>
            <dd>{figures.fee}</dd>
            <dt>Total debited from your balance</dt>
            <dd>{figures.total}</dd>
            {p.fx.fx_rate && (
              <>
                <dt>Rate</dt>
                <dd>
                  1 USDT = {p.fx.fx_rate} {p.currency}
                  {p.fx.fx_rate_updated_at ? ` (as of ${when(p.fx.fx_rate_updated_at)})` : ''}
                </dd>
              </>
            )}
            <dt>Quote</dt>
            <dd className="mono">{p.quote_id ?? 'None: priced when made'}</dd>
          </dl>
        </section>
      </div>
      <section className="card" aria-labelledby="payout-timeline">
        <h2 id="payout-timeline">Timeline</h2>
        <ErrorNote error={events.error} />
        <Timeline createdAt={p.created_at} events={events.data?.data ?? []} prefix="payout." />
      </section>
    </>
  )
}

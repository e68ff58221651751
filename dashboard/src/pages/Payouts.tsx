import { useQuery } from '@tanstack/react-query'
import { Link, useParams } from 'react-router'
import { api, data, type Schemas } from '../api/client'
import {
  amount,
  Details,
  ErrorNote,
  ExportButton,
  Paged,
  type Pair,
  RecordHead,
  ref,
  STATUS,
  Status,
  Table,
  Timeline,
  useExport,
  usePage,
} from '../components'
import { money, payoutFigures, when, words } from '../format'
import { useMode } from '../layout'
import { useCan } from '../session'

/** A payout's destination, masked: the end of a wallet address or a card number, never all of it. */
function destinationOf(payout: Pick<Schemas['PayoutResponse'], 'method' | 'destination' | 'wallet'>) {
  const mask = (text: string) => (text.length > 8 ? `…${text.slice(-4)}` : text)
  if (payout.wallet) return `${payout.wallet.type} wallet ${mask(payout.wallet.address)}`
  const values = Object.values(payout.destination)
  return `${words(payout.method)} ${values.map(mask).join(' ')}`
}

export function Payouts() {
  const mode = useMode()
  const canPayout = useCan('payout')
  const csv = useExport('/integration/payouts', 'payouts')
  const list = usePage([mode, 'payouts'], (paging) =>
    data(api(mode).GET('/integration/payouts', { params: { query: paging } })),
  )
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
      <Paged list={list} error={list.error ?? csv.error}>
        {(rows) => (
          <Table
            name="Payouts"
            head={['Created', ref('External id'), amount(), STATUS, 'Destination']}
            rows={rows}
            row={(p) => (
              <tr key={p.uuid}>
                <td>{when(p.created_at)}</td>
                <td>
                  <Link to={`/${mode}/payouts/${p.uuid}`}>{p.external_id}</Link>
                </td>
                <td className="num">{money(p.amount, p.currency)}</td>
                <td>
                  <Status status={p.status} />
                </td>
                <td>{destinationOf(p)}</td>
              </tr>
            )}
            empty="No payouts yet."
          />
        )}
      </Paged>
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
  // What the payout is, then its money.
  const details: Pair[] = [
    ['Payout id', p.uuid, 'mono'],
    ['Destination', destinationOf(p)],
    !!p.wallet?.transaction_hash && ['Transaction', p.wallet.transaction_hash, 'mono'],
    ['Created', when(p.created_at)],
    ['Completed', when(p.completed_at)],
    !!p.failure_reason && ['Failure', p.failure_reason],
  ]
  const amounts: Pair[] = [
    ['Recipient gets', figures.recipient],
    ['Fee', figures.fee],
    ['Total debited from your balance', figures.total],
    !!p.fx.fx_rate && [
      'Rate',
      `1 USDT = ${p.fx.fx_rate} ${p.currency}${p.fx.fx_rate_updated_at ? ` (as of ${when(p.fx.fx_rate_updated_at)})` : ''}`,
    ],
    ['Quote', p.quote_id ?? 'None: priced when made', 'mono'],
  ]

  return (
    <>
      <RecordHead list="payouts" record={p} amount={money(p.amount, p.currency)} />
      <div className="grid-2">
        <Details id="payout-details" title="Details" pairs={details} />
        <Details id="payout-money" title="Money and FX" pairs={amounts} />
      </div>
      <section className="card" aria-labelledby="payout-timeline">
        <h2 id="payout-timeline">Timeline</h2>
        <ErrorNote error={events.error} />
        <Timeline createdAt={p.created_at} events={events.data?.data ?? []} prefix="payout." />
      </section>
    </>
  )
}

import { useQuery } from '@tanstack/react-query'
import { Link } from 'react-router'
import { api, data } from '../api/client'
import {
  amount,
  ErrorNote,
  FilterDates,
  Filters,
  num,
  ref,
  Table,
  useExport,
  useListFilters,
} from '../components'
import { money, when } from '../format'
import { useMode } from '../layout'

const FILTERS = ['from', 'to'] as const

/** The figures of a currency's line, in the order a statement reads them, each with its column's name. */
const FIGURES = [
  ['opening_balance', 'Opening'],
  ['payments', 'Payments in'],
  ['fees', 'Fees'],
  ['refunds', 'Refunds'],
  ['payouts', 'Payouts'],
  ['adjustments', 'Adjustments'],
] as const

/**
 * Balances → Summary: for a period, per currency, the opening balance, what came in and went out by kind, and
 * the closing balance (`GET /integration/balances/summary`), exportable as CSV. Without dates: from the first
 * movement to now.
 */
export function BalanceSummary() {
  const mode = useMode()
  const { query, apply } = useListFilters(FILTERS)
  const summary = useQuery({
    queryKey: [mode, 'balance-summary', query],
    queryFn: () => data(api(mode).GET('/integration/balances/summary', { params: { query } })),
  })
  const csv = useExport('/integration/balances/summary', 'balance-summary', query)
  const period = summary.data
  return (
    <>
      <p className="crumbs">
        <Link to={`/${mode}/balances`}>Balances</Link> / Summary
      </p>
      <h1>Balance summary</h1>
      <Filters label="Period of the summary" onSubmit={apply} csv={csv}>
        <FilterDates from="from" to="to" />
      </Filters>
      <ErrorNote error={summary.error ?? csv.error} />
      {period && (
        <Table
          name="Balance summary"
          caption={`From ${period.from ? when(period.from) : 'the first movement'} to ${when(period.to)}; transfers between your own balances (settlement, payout reserves) add nothing to the total and are left out.`}
          head={[
            ref('Currency'),
            ...FIGURES.map(([, name]) => num(name)),
            amount('Closing'),
            num('Movements'),
          ]}
          rows={period.data}
          row={(line) => (
            <tr key={line.currency}>
              <td>{line.currency}</td>
              {FIGURES.map(([field]) => (
                <td key={field} className="num">
                  {money(line[field], line.currency)}
                </td>
              ))}
              <td className="num">{money(line.closing_balance, line.currency)}</td>
              <td className="num">{line.balance_transactions}</td>
            </tr>
          )}
          empty="No movement in this period."
        />
      )}
    </>
  )
}

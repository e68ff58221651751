import { useQuery } from '@tanstack/react-query'
import { Link } from 'react-router'
import { api, data } from '../api/client'
import { BALANCE_TRANSACTION_TYPE_VALUES } from '../api/values'
import {
  amount,
  ErrorNote,
  FilterDates,
  FilterInput,
  FilterSelect,
  Filters,
  num,
  Paged,
  ref,
  Table,
  useExport,
  useListFilters,
  usePage,
} from '../components'
import { money, when, words } from '../format'
import { useMode } from '../layout'

const FILTERS = ['type', 'currency', 'source_uuid', 'created_from', 'created_to'] as const

const sourcePath: Record<string, (uuid: string) => string | null> = {
  transaction: (uuid) => `payments/${uuid}`,
  refund: () => null,
  payout: (uuid) => `payouts/${uuid}`,
}

/** Balances per currency, and their history: every ledger movement (balance transactions), filtered, exportable. */
export function Balances() {
  const mode = useMode()
  const { query, apply: filter } = useListFilters(FILTERS)
  const balances = useQuery({
    queryKey: [mode, 'balances'],
    queryFn: () => data(api(mode).GET('/integration/balances')),
  })
  const history = usePage([mode, 'balance-transactions', query], (paging) =>
    data(api(mode).GET('/integration/balance-transactions', { params: { query: { ...query, ...paging } } })),
  )
  const csv = useExport('/integration/balance-transactions', 'balance-transactions', query)

  return (
    <>
      <h1>Balances</h1>
      <p>
        <Link to={`/${mode}/balances/summary`}>Summary for a period</Link>: opening and closing balances, and
        what came in and went out, per currency.
      </p>
      <ErrorNote error={balances.error} />
      <Table
        name="Balances"
        head={[ref('Currency'), amount('Available'), num('Pending'), num('Reserved'), num('Total')]}
        rows={balances.data?.data}
        row={(b) => (
          <tr key={b.currency}>
            <td>{b.currency}</td>
            <td className="num">{money(b.available, b.currency)}</td>
            <td className="num">{money(b.pending, b.currency)}</td>
            <td className="num">{money(b.reserved, b.currency)}</td>
            <td className="num">{money(b.total, b.currency)}</td>
          </tr>
        )}
      />
      <h2 className="spaced">Balance history</h2>
      <Filters label="Filter the balance history" onSubmit={filter} csv={csv}>
        <FilterSelect label="Type" name="type" values={BALANCE_TRANSACTION_TYPE_VALUES} text={words} />
        <FilterInput label="Currency" name="currency" size={5} />
        <FilterInput label="Source id" name="source_uuid" size={20} />
        <FilterDates from="created_from" to="created_to" />
      </Filters>
      <Paged list={history} error={history.error ?? csv.error}>
        {(rows) => (
          <Table
            name="Balance history"
            head={['When', ref('Type'), 'Balance', amount(), 'Source']}
            rows={rows}
            row={(row) => {
              const path = sourcePath[row.source.type]?.(row.source.uuid)
              return (
                <tr key={row.uuid}>
                  <td>{when(row.created_at)}</td>
                  <td>{words(row.type)}</td>
                  <td>{row.balance}</td>
                  <td className="num">{money(row.amount, row.currency)}</td>
                  <td>
                    {path ? (
                      <Link to={`/${mode}/${path}`}>{row.source.type}</Link>
                    ) : (
                      <Link to={`/${mode}/refunds`}>{row.source.type}</Link>
                    )}
                  </td>
                </tr>
              )
            }}
            empty="No movement matches."
          />
        )}
      </Paged>
    </>
  )
}

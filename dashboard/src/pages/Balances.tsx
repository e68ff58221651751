import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { Link } from 'react-router'
import { api, data } from '../api/client'
import { BALANCE_TRANSACTION_TYPE_VALUES } from '../api/values'
import { ErrorNote, ExportButton, Pager, Table, useExport, useListFilters } from '../components'
import { money, when } from '../format'
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
  const { params, query, cursor, apply: filter } = useListFilters(FILTERS)
  const balances = useQuery({
    queryKey: [mode, 'balances'],
    queryFn: () => data(api(mode).GET('/integration/balances')),
  })
  const history = useQuery({
    queryKey: [mode, 'balance-transactions', query, cursor],
    queryFn: () =>
      data(
        api(mode).GET('/integration/balance-transactions', {
          params: { query: { ...query, cursor, per_page: 25 } },
        }),
      ),
    placeholderData: keepPreviousData,
  })
  const csv = useExport('/integration/balance-transactions', 'balance-transactions', query)

  return (
    <>
      <h1>Balances</h1>
      <ErrorNote error={balances.error} />
      <Table
        name="Balances"
        head={
          <>
            <th scope="col">Currency</th>
            <th scope="col" className="num">
              Available
            </th>
            <th scope="col" className="num">
              Pending
            </th>
            <th scope="col" className="num">
              Reserved
            </th>
            <th scope="col" className="num">
              Total
            </th>
          </>
        }
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
      <search aria-label="Filter the balance history">
        <form className="filters" onSubmit={filter} key={params.toString()}>
          <label>
            Type
            <select name="type" defaultValue={params.get('type') ?? ''}>
              <option value="">Any</option>
              {BALANCE_TRANSACTION_TYPE_VALUES.map((t) => (
                <option key={t} value={t}>
                  {t.replaceAll('_', ' ')}
                </option>
              ))}
            </select>
          </label>
          <label>
            Currency
            <input name="currency" defaultValue={params.get('currency') ?? ''} size={5} />
          </label>
          <label>
            Source id
            <input name="source_uuid" defaultValue={params.get('source_uuid') ?? ''} size={20} />
          </label>
          <label>
            From
            <input name="created_from" type="date" defaultValue={params.get('created_from') ?? ''} />
          </label>
          <label>
            To
            <input name="created_to" type="date" defaultValue={params.get('created_to') ?? ''} />
          </label>
          <button type="submit">Apply</button>
          <ExportButton csv={csv} />
        </form>
      </search>
      <ErrorNote error={history.error ?? csv.error} />
      {history.data && (
        <>
          <Table
            name="Balance history"
            head={
              <>
                <th scope="col">When</th>
                <th scope="col">Type</th>
                <th scope="col">Balance</th>
                <th scope="col" className="num">
                  Amount
                </th>
                <th scope="col">Source</th>
              </>
            }
            rows={history.data.data}
            row={(row) => {
              const path = sourcePath[row.source.type]?.(row.source.uuid)
              return (
                <tr key={row.uuid}>
                  <td>{when(row.created_at)}</td>
                  <td>{row.type.replaceAll('_', ' ')}</td>
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
            columns={5}
          />
          <Pager meta={history.data.meta} />
        </>
      )}
    </>
  )
}

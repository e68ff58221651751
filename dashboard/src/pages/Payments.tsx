import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { api, data, type Mode } from '../api/client'
import { PAYMENT_METHOD_VALUES, TRANSACTION_STATUS_VALUES } from '../api/values'
import { ErrorNote, ExportButton, Pager, PaymentsTable, useExport, useListFilters } from '../components'
import { useMode } from '../layout'

const FILTERS = ['search', 'status', 'payment_method', 'currency', 'date_from', 'date_to'] as const

/**
 * The page of payments an address asks for (its filters and cursor): the page's query, and what the router
 * fetches as soon as the address is known, beside the session check rather than after it.
 */
export function paymentsQuery(mode: Mode, params: URLSearchParams) {
  const query = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) || undefined]).filter(([, v]) => v))
  const cursor = params.get('cursor') || undefined
  return {
    queryKey: [mode, 'transactions', query, cursor],
    queryFn: () =>
      data(
        api(mode).GET('/integration/transactions', {
          params: { query: { ...query, cursor, per_page: 25 } as Record<string, string> },
        }),
      ),
  }
}

/** The payment list: the API's filters, in the page's address so a search can be shared and reloaded. */
export function Payments() {
  const mode = useMode()
  const { params, query, apply: filter } = useListFilters(FILTERS)
  const list = useQuery({ ...paymentsQuery(mode, params), placeholderData: keepPreviousData })
  const csv = useExport('/integration/transactions', 'payments', query)

  return (
    <>
      <h1>Payments</h1>
      <search aria-label="Filter payments">
        <form className="filters" onSubmit={filter} key={params.toString()}>
          <label>
            Search
            <input
              name="search"
              type="search"
              defaultValue={params.get('search') ?? ''}
              placeholder="uuid, external id or description"
            />
          </label>
          <label>
            Status
            <select name="status" defaultValue={params.get('status') ?? ''}>
              <option value="">Any</option>
              {TRANSACTION_STATUS_VALUES.map((s) => (
                <option key={s} value={s}>
                  {s.replaceAll('_', ' ')}
                </option>
              ))}
            </select>
          </label>
          <label>
            Method
            <select name="payment_method" defaultValue={params.get('payment_method') ?? ''}>
              <option value="">Any</option>
              {PAYMENT_METHOD_VALUES.map((m) => (
                <option key={m} value={m}>
                  {m.replaceAll('_', ' ')}
                </option>
              ))}
            </select>
          </label>
          <label>
            Currency
            <input
              name="currency"
              defaultValue={params.get('currency') ?? ''}
              maxLength={3}
              size={4}
              placeholder="RUB"
            />
          </label>
          <label>
            From
            <input name="date_from" type="date" defaultValue={params.get('date_from') ?? ''} />
          </label>
          <label>
            To
            <input name="date_to" type="date" defaultValue={params.get('date_to') ?? ''} />
          </label>
          <button type="submit">Apply</button>
          <ExportButton csv={csv} />
        </form>
      </search>
      <ErrorNote error={list.error ?? csv.error} />
      {list.data && (
        <>
          <PaymentsTable
            rows={list.data.data}
            mode={mode}
            caption={`${list.data.data.length} payment${list.data.data.length === 1 ? '' : 's'} on this page`}
          />
          <Pager meta={list.data.meta} />
        </>
      )}
      {list.isPending && <p className="loading">Loading…</p>}
    </>
  )
}

import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { api, data, type Mode } from '../api/client'
import { PAYMENT_METHOD_VALUES, TRANSACTION_STATUS_VALUES } from '../api/values'
import {
  FilterDates,
  FilterInput,
  FilterSelect,
  Filters,
  Paged,
  PaymentsTable,
  useExport,
  useListFilters,
} from '../components'
import { words } from '../format'
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
      <Filters label="Filter payments" onSubmit={filter} csv={csv}>
        <FilterInput
          label="Search"
          name="search"
          type="search"
          placeholder="uuid, external id or description"
        />
        <FilterSelect label="Status" name="status" values={TRANSACTION_STATUS_VALUES} text={words} />
        <FilterSelect label="Method" name="payment_method" values={PAYMENT_METHOD_VALUES} text={words} />
        <FilterInput label="Currency" name="currency" maxLength={3} size={4} placeholder="RUB" />
        <FilterDates from="date_from" to="date_to" />
      </Filters>
      <Paged list={list} error={list.error ?? csv.error}>
        {(rows) => (
          <PaymentsTable
            rows={rows}
            mode={mode}
            caption={`${rows.length} payment${rows.length === 1 ? '' : 's'} on this page`}
          />
        )}
      </Paged>
      {list.isPending && <p className="loading">Loading…</p>}
    </>
  )
}

import {
  BALANCE_TRANSACTION_TYPE_OF_KIND,
  type BalanceTransactionType,
  JOURNAL_ENTRY_KINDS,
  type JournalEntryKind,
} from '../../db/enums.ts'
import { scopeOf } from '../../db/scope.ts'
import type { AuthContext } from '../../http/auth.ts'
import type { CsvColumn } from '../../http/csv.ts'
import { parseDateRange } from '../../http/date-filter.ts'
import { foundByUuid } from '../../http/errors.ts'
import { listFilters } from '../../http/filtered-list.ts'
import { distinctSorted } from '../../lib/lists.ts'
import { iso } from '../../lib/time.ts'
import type { LedgerDeps } from './deps.ts'
import * as repo from './repository.ts'
import type { BalanceTransactionView, ListBalanceTransactionsInput } from './schemas.ts'

const isKnownKind = (kind: string): kind is JournalEntryKind =>
  (JOURNAL_ENTRY_KINDS as readonly string[]).includes(kind)

/** The API's name for an entry kind; a kind the ledger does not know shows as `adjustment`. */
export const balanceTransactionType = (kind: string): BalanceTransactionType =>
  isKnownKind(kind) ? BALANCE_TRANSACTION_TYPE_OF_KIND[kind] : 'adjustment'

/** A line of a merchant balance as the API shows it. */
export const balanceTransactionView = (row: repo.BalanceTransactionRow): BalanceTransactionView => ({
  uuid: row.uuid,
  type: balanceTransactionType(row.kind),
  amount: row.amount,
  currency: row.currency,
  balance: row.balance as BalanceTransactionView['balance'],
  source: { type: row.reference_type, uuid: row.reference_uuid },
  created_at: iso(row.created_at),
})

/**
 * The list's query parameters as repository filters, and their digest (a cursor is bound to it): the types as
 * the entry kinds they show, the date range parsed (422 when it does not parse or runs backwards). One
 * function for the page and for an export of the same list.
 */
export function balanceTransactionFilters(query: Omit<ListBalanceTransactionsInput, 'cursor' | 'per_page'>) {
  const types = query.type ? (distinctSorted(query.type) as BalanceTransactionType[]) : undefined
  const { from, to } = parseDateRange('created_from', query.created_from, 'created_to', query.created_to)
  const filters: repo.BalanceTransactionFilters = {
    kinds: types && {
      known: JOURNAL_ENTRY_KINDS.filter((kind) => types.includes(BALANCE_TRANSACTION_TYPE_OF_KIND[kind])),
      otherKinds: types.includes('adjustment'),
    },
    currency: query.currency,
    sourceUuid: query.source_uuid?.toLowerCase(),
    from,
    to,
  }
  // Bound to the filters as normalised, so that equal filters written differently (types in another order,
  // an upper-case uuid) share their cursors.
  return listFilters(filters, {
    type: types,
    currency: filters.currency,
    source_uuid: filters.sourceUuid,
    created_from: from,
    created_to: to,
  })
}

export async function getBalanceTransaction(deps: Pick<LedgerDeps, 'db'>, auth: AuthContext, uuid: string) {
  const row = await foundByUuid('balance transaction', uuid, (id) =>
    repo.findBalanceTransaction(deps.db, scopeOf(auth), id),
  )
  return balanceTransactionView(row)
}

/** The balance-transaction list: one definition for its pages and its CSV export. */
export const BALANCE_TRANSACTION_LIST = {
  path: '/integration/balance-transactions',
  filters: balanceTransactionFilters,
  page: repo.balanceTransactionPage,
  rows: repo.filteredBalanceTransactions,
  view: balanceTransactionView,
}

/** The columns of a balance-transactions CSV export, in their documented order; `source` as two columns. */
export const BALANCE_TRANSACTION_CSV_COLUMNS: CsvColumn<BalanceTransactionView>[] = [
  { header: 'uuid', value: (view) => view.uuid },
  { header: 'created_at', value: (view) => view.created_at },
  { header: 'type', value: (view) => view.type },
  { header: 'balance', value: (view) => view.balance },
  { header: 'currency', value: (view) => view.currency },
  { header: 'amount', value: (view) => view.amount },
  { header: 'source_type', value: (view) => view.source.type },
  { header: 'source_uuid', value: (view) => view.source.uuid },
]

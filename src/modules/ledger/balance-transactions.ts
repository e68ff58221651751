import {
  BALANCE_TRANSACTION_TYPE_OF_KIND,
  type BalanceTransactionType,
  JOURNAL_ENTRY_KINDS,
  type JournalEntryKind,
} from '../../db/enums.ts'
import { keysetBatches } from '../../db/keyset.ts'
import { scopeOf } from '../../db/scope.ts'
import type { AuthContext } from '../../http/auth.ts'
import type { CsvColumn } from '../../http/csv.ts'
import { parseDateRange } from '../../http/date-filter.ts'
import { notFound } from '../../http/errors.ts'
import { exportQuery, filterDigest, listAnswer } from '../../http/pagination.ts'
import { isUuid } from '../../lib/ids.ts'
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
  const digest = filterDigest({
    type: types?.join(','),
    currency: filters.currency,
    source_uuid: filters.sourceUuid,
    created_from: from?.toISOString(),
    created_to: to?.toISOString(),
  })
  return { filters, digest }
}

export function listBalanceTransactions(
  deps: LedgerDeps,
  auth: AuthContext,
  query: ListBalanceTransactionsInput,
) {
  const { filters, digest } = balanceTransactionFilters(query)
  return listAnswer(
    query,
    { digest, path: `${deps.config.publicBaseUrl}/integration/balance-transactions` },
    (cursor, limit) => repo.balanceTransactionPage(deps.db, scopeOf(auth), filters, cursor, limit),
    balanceTransactionView,
  )
}

export async function getBalanceTransaction(deps: Pick<LedgerDeps, 'db'>, auth: AuthContext, uuid: string) {
  const row = isUuid(uuid) ? await repo.findBalanceTransaction(deps.db, scopeOf(auth), uuid) : undefined
  if (!row) throw notFound('balance transaction')
  return balanceTransactionView(row)
}

/** Every balance transaction the list's filters match, newest first, in batches: what a CSV export streams. */
export async function* exportBalanceTransactions(
  deps: Pick<LedgerDeps, 'db'>,
  auth: AuthContext,
  query: ListBalanceTransactionsInput,
) {
  const { filters } = balanceTransactionFilters(exportQuery(query))
  for await (const rows of keysetBatches(repo.filteredBalanceTransactions(deps.db, scopeOf(auth), filters)))
    yield rows.map(balanceTransactionView)
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

import { isPaymentMethod, isTransactionStatus } from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import { keysetBatches } from '../../db/keyset.ts'
import { scopeOf } from '../../db/scope.ts'
import type { TransactionRow } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { parseDateRange } from '../../http/date-filter.ts'
import { AppError, foundByUuid, notFound } from '../../http/errors.ts'
import { listFilters } from '../../http/filtered-list.ts'
import { exportQuery } from '../../http/pagination.ts'
import { isUuid } from '../../lib/ids.ts'
import { distinctSorted } from '../../lib/lists.ts'
import { iso } from '../../lib/time.ts'
import type { TransactionDeps } from './deps.ts'
import * as repo from './repository.ts'
import { EXTERNAL_ID_PATTERN, type ListTransactionsInput } from './schemas.ts'
import { TRANSACTION_CSV_FIELDS, type TransactionCsvRow, transactionView } from './view.ts'

const EXTERNAL_ID_REGEX = new RegExp(EXTERNAL_ID_PATTERN)

/** The transaction of the caller, or 404: what the sandbox checks before it simulates anything. */
export const getOwnedTransaction = (deps: Pick<TransactionDeps, 'db'>, auth: AuthContext, uuid: string) =>
  foundByUuid('transaction', uuid, (id) => repo.findByUuid(deps.db, scopeOf(auth), id))

export async function getTransaction(
  deps: Pick<TransactionDeps, 'db' | 'config'>,
  auth: AuthContext,
  uuid: string,
) {
  return transactionView(deps, await getOwnedTransaction(deps, auth, uuid))
}

export async function getTransactionByExternalId(
  deps: Pick<TransactionDeps, 'db' | 'config'>,
  auth: AuthContext,
  externalId: string,
) {
  // An id that could never have been accepted names nothing (and may hold bytes the database refuses).
  const row = EXTERNAL_ID_REGEX.test(externalId)
    ? await repo.findByExternalId(deps.db, scopeOf(auth), externalId)
    : undefined
  if (!row) throw notFound('transaction')
  return transactionView(deps, row)
}

/** What a host-to-host payment shows its payer: the requisites to transfer to, and the amount. */
export async function getH2hDetails(deps: Pick<TransactionDeps, 'db'>, auth: AuthContext, uuid: string) {
  const row = await getOwnedTransaction(deps, auth, uuid)
  if (!row.requisites)
    throw new AppError(
      'not_found',
      'This transaction has no host-to-host requisites: its payment method uses the hosted page.',
    )
  return {
    uuid: row.uuid,
    status: row.status,
    amount: row.amount,
    gross_amount: row.gross_amount,
    currency: row.currency,
    payment_method: row.payment_method,
    requisites: row.requisites,
    expires_at: iso(row.expires_at),
  }
}

/** The list's query parameters as repository filters, and their digest (a cursor is bound to it). */
export function transactionFilters(query: Omit<ListTransactionsInput, 'cursor' | 'per_page'>) {
  const { from, to } = parseDateRange('date_from', query.date_from, 'date_to', query.date_to)
  const statuses = query.status ? distinctSorted(query.status).filter(isTransactionStatus) : undefined
  const filters: repo.TransactionFilters = {
    statuses,
    paymentMethod:
      query.payment_method && isPaymentMethod(query.payment_method) ? query.payment_method : undefined,
    currency: query.currency,
    from,
    to,
    search: query.search
      ? {
          text: query.search,
          uuid: isUuid(query.search.toLowerCase()) ? query.search.toLowerCase() : null,
        }
      : undefined,
  }
  return listFilters(filters, {
    status: statuses,
    payment_method: query.payment_method,
    currency: query.currency,
    date_from: from,
    date_to: to,
    search: query.search,
  })
}

/** The transaction list's pages (its CSV export reads its own columns: `exportTransactions`). */
export const TRANSACTION_LIST = {
  path: '/integration/transactions',
  filters: transactionFilters,
  page: repo.listPage,
  view: (row: TransactionRow, deps: Pick<TransactionDeps, 'config'>) => transactionView(deps, row),
}

/**
 * Every transaction the list's filters match, newest first, in batches of their exported columns only: what a
 * CSV export streams (TRANSACTION_CSV_COLUMNS reads the cells from these rows).
 */
export function exportTransactions(
  deps: Pick<TransactionDeps, 'db'>,
  auth: AuthContext,
  query: ListTransactionsInput,
): AsyncGenerator<TransactionCsvRow[]> {
  const { filters } = transactionFilters(exportQuery(query))
  return keysetBatches(
    repo
      .filtered(deps.db, scopeOf(auth), filters)
      .clearSelect()
      .select([...TRANSACTION_CSV_FIELDS]),
  )
}

/** The transaction behind a hosted payment page token, or undefined. */
export const findTransactionByPaymentToken = (deps: Pick<TransactionDeps, 'db'>, token: string) =>
  repo.findByPaymentToken(deps.db, token)

/** The transaction's amount in minor units and its external id, whoever owns it (a refund shows them beside its own). */
export const transactionAmount = (deps: Pick<TransactionDeps, 'db'>, uuid: string) =>
  repo.findAmount(deps.db, uuid)

/** The transaction, locked for the rest of the caller's transaction (a worker's view: no owner check). */
export async function lockTransaction(trx: Executor, uuid: string): Promise<TransactionRow> {
  const row = await repo.lockByUuid(trx, uuid)
  if (!row) throw notFound('transaction')
  return row
}

/** The caller's transaction, locked for the rest of `trx` (refunds check and spend its remainder). */
export async function lockOwnedTransaction(
  trx: Executor,
  auth: AuthContext,
  uuid: string,
): Promise<TransactionRow> {
  const row = isUuid(uuid) ? await repo.lockByUuid(trx, uuid) : undefined
  if (!row || row.merchant_uuid !== auth.merchant.uuid || row.mode !== auth.mode)
    throw notFound('transaction')
  return row
}

import type { ProviderReport, ReportResult } from '../../connectors/types.ts'
import type { Executor } from '../../db/index.ts'
import type { TransactionRow } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { filteredPage } from '../../http/filtered-list.ts'
import { createTransaction } from './create.ts'
import { countChainDeposits, type Watcher, type WatchOptions, watchChainDeposits } from './deposits.ts'
import type { TransactionDeps } from './deps.ts'
import {
  exportTransactions,
  findTransactionByPaymentToken,
  getH2hDetails,
  getOwnedTransaction,
  getTransaction,
  getTransactionByExternalId,
  lockOwnedTransaction,
  lockTransaction,
  TRANSACTION_LIST,
  transactionAmount,
} from './queries.ts'
import { acceptReview, listReviews, refundReview } from './reviews.ts'
import type { CreateTransactionInput, ListTransactionsInput } from './schemas.ts'
import { settleDueTransactions } from './settlement.ts'
import {
  applyProviderReport,
  expireOverdueTransactions,
  markTransactionRefunded,
  receiveProviderCallback,
} from './status.ts'
import { syncHandedOverPayments } from './sync.ts'
import { transactionView } from './view.ts'

export type { TransactionDeps } from './deps.ts'

import { scopeOf } from '../../db/scope.ts'
import type { SearchKey } from '../../lib/search.ts'
import { dailyPayments, searchTransactions } from './repository.ts'

export type TransactionService = ReturnType<typeof createTransactionService>

/**
 * The transactions module's operations bound to their dependencies: what routes, workers and other modules
 * call. Each operation is a named function in the file of its concern (create, queries, status, settlement).
 */
export function createTransactionService(deps: TransactionDeps) {
  return {
    toView: (row: TransactionRow) => transactionView(deps, row),
    /** The payments a dashboard search names, `referenced` being those of the provider's reference typed. */
    search: (auth: AuthContext, key: SearchKey, referenced: string[], limit: number) =>
      searchTransactions(deps.db, scopeOf(auth), key, referenced, limit),
    receiveProviderCallback: (connectorName: string, body: unknown) =>
      receiveProviderCallback(deps, connectorName, body),
    /** A report of the provider a payment was handed to, in the caller's transaction. */
    applyReport: (
      trx: Executor,
      payment: string | TransactionRow,
      report: ProviderReport,
      before?: (result: ReportResult) => Promise<unknown>,
    ) => applyProviderReport(deps, trx, payment, report, before),
    /** Payments under review (docs/OPERATIONS.md, Payments under review), newest first. */
    reviews: (filter?: { open?: boolean; limit?: number }) => listReviews(deps, filter),
    /** The operator accepts the amount the provider received: the payment is paid for it. */
    acceptReview: (paymentUuid: string, note?: string) => acceptReview(deps, paymentUuid, note),
    /** The operator has the money returned: the payment ends failed, the review refunded. */
    refundReview: (paymentUuid: string, note?: string) => refundReview(deps, paymentUuid, note),
    /** Asks providers about payments whose status sync is due; answers how many it asked about. */
    syncHandedOver: (limit?: number, now?: Date) => syncHandedOverPayments(deps, limit, now),
    /** One round of the chain watchers of accounts that take deposits; answers how many blocks it read. */
    watchChains: (watcher: Watcher, options?: WatchOptions) => watchChainDeposits(deps, watcher, options),
    /** Counts for their payments the transfers the watchers read that have their confirmations. */
    countDeposits: (log: Watcher['log']) => countChainDeposits(deps, log),
    getOwned: (auth: AuthContext, uuid: string) => getOwnedTransaction(deps, auth, uuid),
    findByPaymentToken: (token: string) => findTransactionByPaymentToken(deps, token),
    amountOf: (uuid: string) => transactionAmount(deps, uuid),
    expireOverdue: (limit?: number, now?: Date) => expireOverdueTransactions(deps, limit, now),
    lock: (trx: Executor, uuid: string) => lockTransaction(trx, uuid),
    lockOwned: (trx: Executor, auth: AuthContext, uuid: string) => lockOwnedTransaction(trx, auth, uuid),
    markRefunded: (trx: Executor, row: TransactionRow, refundedTotal: number, at: Date, refundUuid: string) =>
      markTransactionRefunded(deps, trx, row, refundedTotal, at, refundUuid),
    settleDue: (limit?: number, now?: Date) => settleDueTransactions(deps, limit, now),
    create: (auth: AuthContext, input: CreateTransactionInput) => createTransaction(deps, auth, input),
    get: (auth: AuthContext, uuid: string) => getTransaction(deps, auth, uuid),
    getByExternalId: (auth: AuthContext, externalId: string) =>
      getTransactionByExternalId(deps, auth, externalId),
    h2h: (auth: AuthContext, uuid: string) => getH2hDetails(deps, auth, uuid),
    list: (auth: AuthContext, query: ListTransactionsInput) =>
      filteredPage(deps, auth, TRANSACTION_LIST, query),
    export: (auth: AuthContext, query: ListTransactionsInput) => exportTransactions(deps, auth, query),
    /** Payments per UTC day and currency since `since` (the dashboard's home page). */
    daily: (auth: AuthContext, since: Date) => dailyPayments(deps.db, scopeOf(auth), since),
  }
}

import type {
  ProviderCallback,
  ProviderOutcome,
  ProviderReport,
  ReportResult,
} from '../../connectors/types.ts'
import type { Executor } from '../../db/index.ts'
import type { TransactionRow, TransactionUpdate } from '../../db/types.ts'
import { AppError, notFound } from '../../http/errors.ts'
import { isUuid, newId } from '../../lib/ids.ts'
import { applyProviderOutcome, changeStatus, type StatusTable } from '../status-change.ts'
import type { TransactionDeps } from './deps.ts'
import * as repo from './repository.ts'
import { postPaymentReceived } from './settlement.ts'
import { type TransactionStatus, transition } from './state-machine.ts'
import { transactionView } from './view.ts'

type Deps = Pick<TransactionDeps, 'config' | 'merchants' | 'ledger' | 'webhooks'>

type ProviderCallbackRow = Parameters<typeof repo.insertProviderCallback>[1]

/** The columns a status change writes. */
const changedColumns = ({
  status,
  fields,
  aggregate_version,
  updated_at,
}: {
  status: TransactionStatus
  fields: TransactionUpdate
  aggregate_version: number
  updated_at: Date
}): TransactionUpdate => ({ status, ...fields, aggregate_version, updated_at })

/** How a transaction's status change is written and shown in its event. */
const transactionsTable = (
  deps: Pick<TransactionDeps, 'config'>,
): StatusTable<TransactionRow, TransactionStatus, TransactionUpdate> => ({
  aggregateType: 'transaction',
  write: (trx, uuid, change) => repo.updateTransaction(trx, uuid, changedColumns(change)),
  toView: (row) => transactionView(deps, row),
})

/**
 * The one place a provider's outcome changes a transaction (docs/API.md, The payment lifecycle): under the row
 * lock the caller holds, the outcome is recorded, and when the state machine applies it the row moves on, its
 * aggregate_version grows and the event goes to the outbox, all in the caller's database transaction.
 */
export async function applyTransactionOutcome(
  deps: Deps,
  trx: Executor,
  row: TransactionRow,
  outcome: ProviderOutcome,
  source: { connector: string; reference: string | null },
) {
  const now = new Date()
  const result = transition(row.status as TransactionStatus, outcome)
  // The word is kept by the statement that moves the payment, when it moves; otherwise on its own.
  let word: ProviderCallbackRow | undefined
  const table = transactionsTable(deps)
  const keepingWord: typeof table = {
    ...table,
    write(trx, uuid, change) {
      const keeping = word
      word = undefined
      return keeping
        ? repo.updateTransactionKeeping(trx, uuid, changedColumns(change), keeping)
        : table.write(trx, uuid, change)
    },
  }
  const applied = await applyProviderOutcome(deps, trx, keepingWord, row, {
    outcome,
    source,
    // A payment moves one step at a time: the state machine's answer is that step.
    result: result.kind === 'applied' ? { kind: 'applied', steps: [result] } : result,
    at: now,
    async record({ uuid, connector, ...said }) {
      word = { uuid, connector, transaction_uuid: row.uuid, ...said }
    },
    async plan(current, to) {
      if (to !== 'paid') return { fields: {} }
      // Test mode has no hold, so that payouts can be tried at once (and the merchant's is not read).
      const holdSeconds =
        current.mode === 'test' ? 0 : await deps.merchants.settlementHoldSeconds(current.merchant_uuid, trx)
      const settleNow = holdSeconds === 0
      return {
        fields: {
          paid_at: now,
          settle_available_at: new Date(now.getTime() + holdSeconds * 1000),
          ...(settleNow && { settled_at: now }),
        },
        // The money arrived: it is the merchant's, pending until the hold ends (at once without a hold).
        post: (updated) => postPaymentReceived(deps, trx, updated, now, settleNow),
      }
    },
  })
  if (word) await repo.insertProviderCallback(trx, word)
  return applied
}

/** A provider callback, parsed: applied to its transaction in one database transaction. */
async function handleCallback(
  deps: Deps & Pick<TransactionDeps, 'db' | 'providers'>,
  callback: ProviderCallback,
) {
  return deps.db.transaction().execute(async (trx) => {
    const row = isUuid(callback.transactionUuid)
      ? await repo.lockByUuid(trx, callback.transactionUuid)
      : undefined
    if (!row) throw notFound('transaction')
    // The simulator (the sandbox) has no say over a payment another provider has: that provider decides it.
    const held = await deps.providers.handovers.heldBy(trx, row.uuid)
    if (held && held.kind !== 'simulator')
      throw new AppError(
        'sandbox_unavailable',
        'This payment is with a payment provider, which decides it: the sandbox cannot.',
      )
    return (await applyTransactionOutcome(deps, trx, row, callback.outcome, callback)).row
  })
}

/** Where every provider's callback enters: parsed by its connector, then the one handler. */
export async function receiveProviderCallback(
  deps: Deps & Pick<TransactionDeps, 'db' | 'connectors' | 'providers'>,
  connectorName: string,
  body: unknown,
): Promise<TransactionRow> {
  const connector = deps.connectors[connectorName]
  if (!connector) throw notFound('payment provider')
  let callback: ProviderCallback
  try {
    callback = connector.parseCallback(body)
  } catch (error) {
    throw new AppError('malformed_request', (error as Error).message)
  }
  return handleCallback(deps, callback)
}

/** Expires up to `limit` overdue pending transactions; any number of workers may run it at once. */
export async function expireOverdueTransactions(
  deps: Deps & Pick<TransactionDeps, 'db'>,
  limit = 100,
  now = new Date(),
): Promise<number> {
  return deps.db.transaction().execute(async (trx) => {
    const overdue = await repo.lockOverdue(trx, now, limit)
    for (const row of overdue)
      await applyTransactionOutcome(deps, trx, row, 'expired', { connector: 'expiry', reference: null })
    return overdue.length
  })
}

/**
 * After refund `refundUuid` succeeded: partially_refunded, or refunded once `refundedTotal` reaches the amount,
 * with its event (which names the refund), in the caller's transaction (which holds the row lock).
 */
export async function markTransactionRefunded(
  deps: Pick<TransactionDeps, 'config' | 'webhooks'>,
  trx: Executor,
  row: TransactionRow,
  refundedTotal: number,
  at: Date,
  refundUuid: string,
): Promise<TransactionRow> {
  const to = refundedTotal >= row.amount ? 'refunded' : 'partially_refunded'
  if (row.status === to && to === 'refunded') return row
  return changeStatus(deps, trx, transactionsTable(deps), row, {
    status: to,
    event: `transaction.${to}`,
    at,
    fields: {},
    refundUuid,
  })
}

/**
 * A provider's report about a payment handed to it (a verified callback, or status sync's answer), in the
 * caller's transaction: the same outcome handler as every provider's word, but a `paid` for another amount or
 * currency than the payment's is never applied: it opens a review (docs/API.md, Payments under review), which
 * the operator resolves.
 */
export async function applyProviderReport(
  deps: Deps,
  trx: Executor,
  /** The payment's uuid, or its row as the caller read it locked in `trx`. */
  payment: string | TransactionRow,
  report: ProviderReport,
  /** Runs in `trx` once the result is known and before anything changes: the caller's own record of it. */
  before?: (result: ReportResult) => Promise<unknown>,
): Promise<{ result: ReportResult; row: TransactionRow }> {
  const row = typeof payment === 'string' ? await repo.lockByUuid(trx, payment) : payment
  if (!row) throw notFound('transaction')
  const mismatch =
    report.outcome === 'paid' &&
    ((report.amount !== null && report.amount !== row.amount) ||
      (report.currency !== null && report.currency !== row.currency))
  if (mismatch && transition(row.status as TransactionStatus, 'paid').kind === 'applied') {
    // The same report again after the operator had that money returned: the review it opened is resolved.
    if (
      await repo.findRefundedReview(
        trx,
        row.uuid,
        report.amount ?? row.amount,
        report.currency ?? row.currency,
      )
    )
      return { result: 'duplicate', row }
    const at = new Date()
    await repo.openReview(trx, {
      uuid: newId(),
      transaction_uuid: row.uuid,
      account_uuid: report.accountUuid,
      outcome: report.outcome,
      reported_amount: report.amount ?? row.amount,
      reported_currency: report.currency ?? row.currency,
      status: 'open',
      resolution: null,
      created_at: at,
      updated_at: at,
    })
    return { result: 'review', row }
  }
  const kind = transition(row.status as TransactionStatus, report.outcome).kind
  // What the caller records of it goes first: the money moves last, so the merchant's balances are locked for
  // the shortest time before the commit.
  await before?.(kind)
  const applied = await applyTransactionOutcome(deps, trx, row, report.outcome, report)
  return { result: kind, row: applied.row }
}

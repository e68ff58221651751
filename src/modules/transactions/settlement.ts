import type { Executor } from '../../db/index.ts'
import type { AccountKind, TransactionRow } from '../../db/types.ts'
import type { Posting } from '../ledger/service.ts'
import type { TransactionDeps } from './deps.ts'
import * as repo from './repository.ts'

const money = (row: TransactionRow) => ({
  merchantUuid: row.merchant_uuid,
  mode: row.mode,
  reference: { type: 'transaction' as const, uuid: row.uuid },
  currency: row.settlement_currency,
})

/** The settlement amount moving from one of the merchant's accounts to another. */
const move = (
  row: TransactionRow,
  at: Date,
  kind: Posting['kind'],
  from: AccountKind,
  to: AccountKind,
): Posting => ({
  ...money(row),
  kind,
  lines: [
    { account: from, amount: -row.settlement_amount },
    { account: to, amount: row.settlement_amount },
  ],
  at,
})

/** A paid transaction credits the merchant's pending balance by its settlement amount. */
const paymentReceived = (row: TransactionRow, at: Date) =>
  move(row, at, 'payment_received', 'provider_clearing', 'pending')

/** At settle_available_at the amount moves from pending to available. */
const paymentSettled = (row: TransactionRow, at: Date) =>
  move(row, at, 'payment_settled', 'pending', 'available')

/**
 * A paid transaction's money, posted in the caller's transaction: received into pending, and with `settleNow`
 * (a payment without a hold) settled to available at once, the two entries in one statement.
 */
export async function postPaymentReceived(
  deps: Pick<TransactionDeps, 'ledger'>,
  trx: Executor,
  row: TransactionRow,
  at: Date,
  settleNow: boolean,
): Promise<void> {
  if (settleNow) await deps.ledger.postTogether(trx, [paymentReceived(row, at), paymentSettled(row, at)])
  else await deps.ledger.post(trx, paymentReceived(row, at))
}

/** Moves paid money whose hold has ended from pending to available; safe with several workers. */
export async function settleDueTransactions(
  deps: Pick<TransactionDeps, 'db' | 'ledger'>,
  limit = 100,
  now = new Date(),
): Promise<number> {
  return deps.db.transaction().execute(async (trx) => {
    const due = await repo.lockSettlementDue(trx, now, limit)
    // Merchant by merchant (mode, then currency), in one order, so two workers settling at once lock accounts
    // in the same order.
    const order = (row: (typeof due)[number]) => `${row.merchant_uuid}|${row.mode}|${row.settlement_currency}`
    due.sort((a, b) => order(a).localeCompare(order(b)))
    for (const row of due) {
      await deps.ledger.post(trx, paymentSettled(row, now))
      await repo.updateTransaction(trx, row.uuid, { settled_at: now })
    }
    return due.length
  })
}

import type { ProviderRefundResult } from '../../connectors/types.ts'
import type { RefundRow } from '../../db/types.ts'
import { notFound } from '../../http/errors.ts'
import type { RefundDeps } from './deps.ts'
import { refundPosting } from './postings.ts'
import * as repo from './repository.ts'

/** Asks the provider to refund (again: it is idempotent on the refund's uuid); null when it cannot be reached. */
export async function askProviderToRefund(
  deps: Pick<RefundDeps, 'connector'>,
  row: RefundRow,
): Promise<ProviderRefundResult | null> {
  try {
    return await deps.connector.refund({
      refundUuid: row.uuid,
      transactionUuid: row.transaction_uuid,
      amountMinor: row.amount_minor,
      currency: row.currency,
    })
  } catch {
    // Unknown whether the provider took it: the refund stays pending and is asked about again.
    return null
  }
}

/**
 * Applies the provider's answer to a pending refund, in one database transaction under the locks of its
 * payment and then its own row. A refund that is final already is left as it is: the request that made it,
 * a retry's recovery and the worker may all settle the same refund, and only the first one counts. Returns
 * the refund with its payment's pending and succeeded refunds summed at that point.
 */
export async function settleRefund(
  deps: Pick<RefundDeps, 'db' | 'transactions' | 'ledger' | 'timing'>,
  refund: Pick<RefundRow, 'uuid' | 'transaction_uuid'>,
  outcome: ProviderRefundResult,
): Promise<{ row: RefundRow; committedMinor: number }> {
  const { transactions, ledger, timing } = deps
  return deps.db.transaction().execute(async (trx) => {
    // A refund's payment never changes: the caller's row names the payment to lock first.
    const tx = await transactions.lock(trx, refund.transaction_uuid)
    const locked = await repo.lockRefund(trx, refund.uuid, tx.uuid)
    if (!locked) throw notFound('refund')
    const { row, committedMinor, succeededMinor } = locked
    if (row.status !== 'pending') return { row, committedMinor }
    const at = new Date()
    const reference = outcome.reference ?? row.provider_reference
    if (outcome.status === 'pending') {
      const updated = await repo.updateRefund(trx, row.uuid, {
        provider_reference: reference,
        next_check_at: new Date(at.getTime() + timing.pollIntervalMs),
        updated_at: at,
      })
      return { row: updated, committedMinor }
    }
    if (outcome.status === 'failed') {
      await ledger.post(trx, refundPosting(row, 'refund_reversed', tx.settlement_currency, at))
      const failed = await repo.updateRefund(trx, row.uuid, {
        status: 'failed',
        failed_at: at,
        message: outcome.message,
        provider_reference: reference,
        next_check_at: null,
        updated_at: at,
      })
      return { row: failed, committedMinor: committedMinor - row.amount_minor }
    }
    const settled = await repo.updateRefund(trx, row.uuid, {
      status: 'succeeded',
      succeeded_at: at,
      message: outcome.message,
      provider_reference: reference,
      next_check_at: null,
      updated_at: at,
    })
    await transactions.markRefunded(trx, tx, succeededMinor + row.amount_minor, at, row.uuid)
    return { row: settled, committedMinor }
  })
}

/**
 * Asks the provider again about up to `limit` pending refunds whose check is due (a hand-over a crash cut
 * off, a provider that was unreachable or answered pending) and settles what it says. Any number of
 * workers may run it at once.
 */
export async function checkDueRefunds(
  deps: Pick<RefundDeps, 'db' | 'transactions' | 'ledger' | 'connector' | 'timing'>,
  limit = 100,
  now = new Date(),
): Promise<number> {
  const claimed = await repo.claimDue(deps.db, now, new Date(now.getTime() + deps.timing.leaseMs), limit)
  for (const row of claimed) {
    const outcome = await askProviderToRefund(deps, row)
    // Unreachable: asked again when the lease runs out.
    if (outcome) await settleRefund(deps, row, outcome)
  }
  return claimed.length
}

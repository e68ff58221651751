import type {
  ObjectReport,
  ObjectReportResult,
  ProviderRefundResult,
  ProviderRefundStatus,
} from '../../connectors/types.ts'
import type { Executor } from '../../db/index.ts'
import type { RefundRow } from '../../db/types.ts'
import { notFound } from '../../http/errors.ts'
import type { RefundDeps } from './deps.ts'
import { refundPosting } from './postings.ts'
import * as repo from './repository.ts'

/** What the refund's message says once its account's provider has spoken. */
const ACCOUNT_MESSAGES: Record<ProviderRefundStatus, string> = {
  pending: 'Refund accepted by the provider, awaiting its outcome.',
  succeeded: 'Refund accepted by the provider.',
  failed: 'The provider refused the refund.',
}

/**
 * Asks the provider to refund (again: it is idempotent on the refund's uuid); null when it cannot be reached. A
 * refund at a connector account is asked of that account: its status once the account gave its reference, else
 * handed over (again) under the payment's reference there.
 */
export async function askProviderToRefund(
  deps: Pick<RefundDeps, 'db' | 'connector' | 'providers'>,
  row: RefundRow,
): Promise<ProviderRefundResult | null> {
  if (row.account_uuid) return askAccountToRefund(deps, row, row.account_uuid)
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

async function askAccountToRefund(
  deps: Pick<RefundDeps, 'db' | 'providers'>,
  row: RefundRow,
  accountUuid: string,
): Promise<ProviderRefundResult | null> {
  try {
    const { connector } = await deps.providers.accounts.connector(accountUuid)
    if (row.provider_reference) {
      const status = await connector.refundStatus(row.provider_reference)
      if (status.kind === 'no_answer') return null
      if (status.kind === 'known')
        return {
          status: status.status,
          reference: row.provider_reference,
          message: ACCOUNT_MESSAGES[status.status],
        }
      // It does not know the reference it gave: handed over again, which answers the refund it has, if any.
    }
    const handover = await deps.providers.handovers.find(deps.db, row.transaction_uuid)
    if (!handover?.provider_reference) return null
    const answer = await connector.refund({
      refundUuid: row.uuid,
      paymentReference: handover.provider_reference,
      amount: row.amount_minor,
      currency: row.currency,
    })
    if (answer.kind === 'no_answer') return null
    if (answer.kind === 'refused')
      return {
        status: 'failed',
        reference: null,
        message: `${ACCOUNT_MESSAGES.failed} ${answer.code}: ${answer.message}`.slice(0, 500),
      }
    return { status: answer.status, reference: answer.reference, message: ACCOUNT_MESSAGES[answer.status] }
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
  return deps.db.transaction().execute((trx) => settleRefundIn(deps, trx, refund, outcome))
}

/**
 * A connector account's report (a verified callback) on the refund it has under `reference`, applied in the
 * caller's transaction; null when it has none under that reference.
 */
export async function applyRefundReport(
  deps: Pick<RefundDeps, 'transactions' | 'ledger' | 'timing'>,
  trx: Executor,
  report: ObjectReport<Exclude<ProviderRefundStatus, 'pending'>>,
): Promise<ObjectReportResult | null> {
  const found = await repo.findByAccountReference(trx, report.accountUuid, report.reference)
  if (!found) return null
  const { row, before } = await settleRefundIn(deps, trx, found, {
    status: report.outcome,
    reference: report.reference,
    message: report.message,
  })
  const result = before === 'pending' ? 'applied' : row.status === report.outcome ? 'duplicate' : 'stale'
  return { uuid: row.uuid, result }
}

/** settleRefund's work in the caller's transaction; `before` is the refund's status it found. */
async function settleRefundIn(
  deps: Pick<RefundDeps, 'transactions' | 'ledger' | 'timing'>,
  trx: Executor,
  refund: Pick<RefundRow, 'uuid' | 'transaction_uuid'>,
  outcome: ProviderRefundResult,
): Promise<{ row: RefundRow; committedMinor: number; before: RefundRow['status'] }> {
  const { transactions, ledger, timing } = deps
  // A refund's payment never changes: the caller's row names the payment to lock first.
  const tx = await transactions.lock(trx, refund.transaction_uuid)
  const locked = await repo.lockRefund(trx, refund.uuid, tx.uuid)
  if (!locked) throw notFound('refund')
  const { row, committedMinor, succeededMinor } = locked
  const before = row.status
  if (row.status !== 'pending') return { row, committedMinor, before }
  const at = new Date()
  const reference = outcome.reference ?? row.provider_reference
  if (outcome.status === 'pending') {
    const updated = await repo.updateRefund(trx, row.uuid, {
      provider_reference: reference,
      next_check_at: new Date(at.getTime() + timing.pollIntervalMs),
      updated_at: at,
    })
    return { row: updated, committedMinor, before }
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
    return { row: failed, committedMinor: committedMinor - row.amount_minor, before }
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
  return { row: settled, committedMinor, before }
}

/**
 * Asks the provider again about up to `limit` pending refunds whose check is due (a hand-over a crash cut
 * off, a provider that was unreachable or answered pending) and settles what it says. Any number of
 * workers may run it at once.
 */
export async function checkDueRefunds(
  deps: Pick<RefundDeps, 'db' | 'transactions' | 'ledger' | 'connector' | 'providers' | 'timing'>,
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

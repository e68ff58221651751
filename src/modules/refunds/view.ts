import type { RefundRow } from '../../db/types.ts'
import { iso } from '../../lib/time.ts'
import type { RefundDeps } from './deps.ts'
import * as repo from './repository.ts'
import type { RefundView } from './schemas.ts'

/** The refund as the API shows it, beside its payment's amount and what has been refunded of it so far. */
export async function refundView(
  deps: Pick<RefundDeps, 'db' | 'transactions'>,
  row: RefundRow,
  transactionAmount?: number,
): Promise<RefundView> {
  const amount = transactionAmount ?? (await deps.transactions.amountOf(row.transaction_uuid))
  return {
    uuid: row.uuid,
    transaction_uuid: row.transaction_uuid,
    amount_minor: row.amount_minor,
    currency: row.currency,
    status: row.status,
    cumulative_refunded_minor: await repo.committedMinor(deps.db, row.transaction_uuid),
    transaction_amount_minor: amount,
    reason: row.reason,
    succeeded_at: iso(row.succeeded_at),
    failed_at: iso(row.failed_at),
    created_at: row.created_at.toISOString(),
    action_request_id: row.action_request_id,
    message: row.message,
  }
}

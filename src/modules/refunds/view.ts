import type { RefundRow } from '../../db/types.ts'
import { fieldColumns } from '../../http/csv.ts'
import { iso } from '../../lib/time.ts'
import type { RefundDeps } from './deps.ts'
import * as repo from './repository.ts'
import type { RefundView } from './schemas.ts'

/** What a refund's view shows of its payment. */
export interface RefundedPayment {
  amount: number
  external_id: string
}

/**
 * The refund as the API shows it, beside its payment's amount and external id and what has been refunded of it
 * so far.
 */
export function refundFields(
  row: RefundRow,
  amounts: { payment: RefundedPayment; cumulativeRefundedMinor: number },
): RefundView {
  return {
    uuid: row.uuid,
    transaction_uuid: row.transaction_uuid,
    amount_minor: row.amount_minor,
    currency: row.currency,
    status: row.status,
    cumulative_refunded_minor: amounts.cumulativeRefundedMinor,
    transaction_amount_minor: amounts.payment.amount,
    transaction_external_id: amounts.payment.external_id,
    reason: row.reason,
    succeeded_at: iso(row.succeeded_at),
    failed_at: iso(row.failed_at),
    created_at: row.created_at.toISOString(),
    action_request_id: row.action_request_id,
    message: row.message,
  }
}

/** One refund's view, its amounts read now. */
export async function refundView(
  deps: Pick<RefundDeps, 'db' | 'transactions'>,
  row: RefundRow,
  payment?: RefundedPayment,
): Promise<RefundView> {
  return refundFields(row, {
    payment: payment ?? (await deps.transactions.amountOf(row.transaction_uuid)),
    cumulativeRefundedMinor: await repo.committedMinor(deps.db, row.transaction_uuid),
  })
}

/** A refund of a list, whose amounts were read with it. */
export const listedRefundView = (row: repo.ListedRefundRow): RefundView =>
  refundFields(row, {
    payment: { amount: Number(row.transaction_amount_minor), external_id: row.transaction_external_id },
    cumulativeRefundedMinor: Number(row.cumulative_refunded_minor),
  })

/** The columns of a refunds CSV export, in their documented order: the view's fields under their names. */
export const REFUND_CSV_FIELDS = [
  'uuid',
  'transaction_uuid',
  'status',
  'amount_minor',
  'currency',
  'cumulative_refunded_minor',
  'transaction_amount_minor',
  'reason',
  'created_at',
  'succeeded_at',
  'failed_at',
  'action_request_id',
  'message',
  // Added after the others, so that an export read by column position keeps its columns.
  'transaction_external_id',
] as const satisfies readonly (keyof RefundView)[]

export const REFUND_CSV_COLUMNS = fieldColumns<RefundView>(REFUND_CSV_FIELDS)

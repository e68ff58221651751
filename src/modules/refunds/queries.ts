import { isRefundStatus } from '../../db/enums.ts'
import { type Scope, scopeOf } from '../../db/scope.ts'
import type { AuthContext } from '../../http/auth.ts'
import { parseDateRange } from '../../http/date-filter.ts'
import { foundByUuid } from '../../http/errors.ts'
import { listFilters } from '../../http/filtered-list.ts'
import { distinctSorted } from '../../lib/lists.ts'
import type { RefundDeps } from './deps.ts'
import * as repo from './repository.ts'
import type { ListRefundsInput, RefundView } from './schemas.ts'
import { listedRefundView, refundView } from './view.ts'

export async function getRefund(
  deps: Pick<RefundDeps, 'db' | 'transactions'>,
  auth: AuthContext,
  uuid: string,
): Promise<RefundView> {
  const row = await foundByUuid('refund', uuid, (id) => repo.findRefund(deps.db, scopeOf(auth), id))
  const tx = await deps.transactions.get(auth, row.transaction_uuid)
  return refundView(deps, row, tx)
}

/** The refund this key made, as the create answered it: what a retry of a committed request replays. */
export async function findRefundByIdempotencyKey(
  deps: Pick<RefundDeps, 'db' | 'transactions'>,
  scope: Scope,
  key: string,
): Promise<RefundView | null> {
  const row = await repo.findByIdempotencyKey(deps.db, scope, key)
  return row ? refundView(deps, row) : null
}

/** The list's query parameters as repository filters, and their digest (a cursor is bound to it). */
export function refundFilters(query: Omit<ListRefundsInput, 'cursor' | 'per_page'>) {
  const { from, to } = parseDateRange('date_from', query.date_from, 'date_to', query.date_to)
  const statuses = query.status ? distinctSorted(query.status).filter(isRefundStatus) : undefined
  const { transaction_uuid: transactionUuid, currency } = query
  return listFilters<repo.RefundFilters>(
    { statuses, transactionUuid, currency, from, to },
    { status: statuses, transaction_uuid: transactionUuid, currency, date_from: from, date_to: to },
  )
}

/** The refund list: one definition for its pages and its CSV export. */
export const REFUND_LIST = {
  path: '/integration/refunds',
  filters: refundFilters,
  page: repo.listPage,
  rows: repo.filtered,
  view: listedRefundView,
}

import { isRefundStatus } from '../../db/enums.ts'
import { keysetBatches } from '../../db/keyset.ts'
import { type Scope, scopeOf } from '../../db/scope.ts'
import type { AuthContext } from '../../http/auth.ts'
import { parseDateRange } from '../../http/date-filter.ts'
import { notFound } from '../../http/errors.ts'
import { exportQuery, filterDigest, listAnswer } from '../../http/pagination.ts'
import { isUuid } from '../../lib/ids.ts'
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
  const row = isUuid(uuid) ? await repo.findRefund(deps.db, scopeOf(auth), uuid) : undefined
  if (!row) throw notFound('refund')
  const tx = await deps.transactions.get(auth, row.transaction_uuid)
  return refundView(deps, row, tx.amount)
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
  const transactionUuid = query.transaction_uuid
  const filters: repo.RefundFilters = { statuses, transactionUuid, currency: query.currency, from, to }
  const digest = filterDigest({
    status: statuses?.join(','),
    transaction_uuid: transactionUuid,
    currency: query.currency,
    date_from: from?.toISOString(),
    date_to: to?.toISOString(),
  })
  return { filters, digest }
}

export function listRefunds(
  deps: Pick<RefundDeps, 'db' | 'config'>,
  auth: AuthContext,
  query: ListRefundsInput,
) {
  const { filters, digest } = refundFilters(query)
  return listAnswer(
    query,
    { digest, path: `${deps.config.publicBaseUrl}/integration/refunds` },
    (cursor, limit) => repo.listPage(deps.db, scopeOf(auth), filters, cursor, limit),
    listedRefundView,
  )
}

/** Every refund the list's filters match, newest first, as views in batches: what a CSV export streams. */
export async function* exportRefunds(
  deps: Pick<RefundDeps, 'db'>,
  auth: AuthContext,
  query: ListRefundsInput,
) {
  const { filters } = refundFilters(exportQuery(query))
  for await (const rows of keysetBatches(repo.filtered(deps.db, scopeOf(auth), filters)))
    yield rows.map(listedRefundView)
}

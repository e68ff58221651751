import { type Scope, scopeOf } from '../../db/scope.ts'
import type { AuthContext } from '../../http/auth.ts'
import { notFound } from '../../http/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import type { RefundDeps } from './deps.ts'
import * as repo from './repository.ts'
import type { RefundView } from './schemas.ts'
import { refundView } from './view.ts'

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

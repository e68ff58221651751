import { type Scope, scopeOf } from '../../db/scope.ts'
import type { PayoutRow } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { foundByUuid } from '../../http/errors.ts'
import { listFilters } from '../../http/filtered-list.ts'
import { distinctSorted } from '../../lib/lists.ts'
import type { PayoutDeps } from './deps.ts'
import * as repo from './repository.ts'
import type { ListPayoutsInput, PayoutView } from './schemas.ts'
import { payoutView } from './view.ts'

/** The caller's payout, or 404: what the sandbox checks before it simulates anything. */
export const getOwnedPayout = (deps: Pick<PayoutDeps, 'db'>, auth: AuthContext, uuid: string) =>
  foundByUuid(
    'payout',
    uuid,
    (id): Promise<PayoutRow | undefined> => repo.findPayout(deps.db, scopeOf(auth), id),
  )

export const getPayout = async (deps: Pick<PayoutDeps, 'db'>, auth: AuthContext, uuid: string) =>
  payoutView(await getOwnedPayout(deps, auth, uuid))

/** The payout this key made, as it stands: what a retry of a committed request replays. */
export async function findPayoutByIdempotencyKey(
  deps: Pick<PayoutDeps, 'db'>,
  scope: Scope,
  key: string,
): Promise<PayoutView | null> {
  const row = await repo.findByIdempotencyKey(deps.db, scope, key)
  return row ? payoutView(row) : null
}

/** The list's query parameters as repository filters, and their digest (a cursor is bound to it). */
export function payoutFilters(query: Omit<ListPayoutsInput, 'cursor' | 'per_page'>) {
  const statuses = query.status ? distinctSorted(query.status) : undefined
  const { method, currency } = query
  return listFilters({ statuses, method, currency }, { status: statuses, method, currency })
}

/** The payout list: one definition for its pages and its CSV export. */
export const PAYOUT_LIST = {
  path: '/integration/payouts',
  filters: payoutFilters,
  page: repo.listPage,
  rows: repo.filtered,
  view: payoutView,
}

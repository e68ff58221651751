import { keysetBatches } from '../../db/keyset.ts'
import { type Scope, scopeOf } from '../../db/scope.ts'
import type { PayoutRow } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { notFound } from '../../http/errors.ts'
import { exportQuery, filterDigest, listAnswer } from '../../http/pagination.ts'
import { isUuid } from '../../lib/ids.ts'
import { distinctSorted } from '../../lib/lists.ts'
import type { PayoutDeps } from './deps.ts'
import * as repo from './repository.ts'
import type { ListPayoutsInput, PayoutView } from './schemas.ts'
import { payoutView } from './view.ts'

/** The caller's payout, or 404: what the sandbox checks before it simulates anything. */
export async function getOwnedPayout(
  deps: Pick<PayoutDeps, 'db'>,
  auth: AuthContext,
  uuid: string,
): Promise<PayoutRow> {
  const row = isUuid(uuid) ? await repo.findPayout(deps.db, scopeOf(auth), uuid) : undefined
  if (!row) throw notFound('payout')
  return row
}

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
  const filters = { statuses, method: query.method, currency: query.currency }
  const digest = filterDigest({
    status: statuses?.join(','),
    method: query.method,
    currency: query.currency,
  })
  return { filters, digest }
}

export function listPayouts(
  deps: Pick<PayoutDeps, 'db' | 'config'>,
  auth: AuthContext,
  query: ListPayoutsInput,
) {
  const { filters, digest } = payoutFilters(query)
  return listAnswer(
    query,
    { digest, path: `${deps.config.publicBaseUrl}/integration/payouts` },
    (cursor, limit) => repo.listPage(deps.db, scopeOf(auth), filters, cursor, limit),
    payoutView,
  )
}

/** Every payout the list's filters match, newest first, as views in batches: what a CSV export streams. */
export async function* exportPayouts(
  deps: Pick<PayoutDeps, 'db'>,
  auth: AuthContext,
  query: ListPayoutsInput,
) {
  const { filters } = payoutFilters(exportQuery(query))
  for await (const rows of keysetBatches(repo.filtered(deps.db, scopeOf(auth), filters)))
    yield rows.map(payoutView)
}

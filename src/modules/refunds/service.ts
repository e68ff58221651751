import type { Executor } from '../../db/index.ts'
import { type Scope, scopeOf } from '../../db/scope.ts'
import type { AuthContext } from '../../http/auth.ts'
import { filteredExport, filteredPage } from '../../http/filtered-list.ts'
import type { KeyClaim } from '../../http/kept-key.ts'
import type { SearchKey } from '../../lib/search.ts'
import { createRefund } from './create.ts'
import { DEFAULT_REFUND_TIMING, type RefundDeps, type RefundTiming } from './deps.ts'
import { findRefundByIdempotencyKey, getRefund, REFUND_LIST } from './queries.ts'
import * as repo from './repository.ts'
import type { CreateRefundInput, ListRefundsInput } from './schemas.ts'
import { applyRefundReport, checkDueRefunds } from './settle.ts'

export type { CreatedRefund } from './create.ts'
export type { RefundDeps, RefundTiming } from './deps.ts'

export type RefundService = ReturnType<typeof createRefundService>

/**
 * Refunds (docs/API.md, Refunds), exactly once per Idempotency-Key. The intent is recorded first: the refund, pending,
 * with its key and its debit of the available balance, in one database transaction under the transaction's row
 * lock; a retry of the key finds that row and answers it, whatever instant the first request died at. Then the
 * provider is asked, outside any database transaction (it is idempotent on the refund's uuid), and its answer is
 * settled by `settleRefund`: the transaction's status and event on success, the debit undone on failure. A
 * refund the provider has not settled (a crash, a timeout, a `pending` answer) is asked about again by
 * `checkDueRefunds`.
 *
 * This binds those operations (create.ts, settle.ts, queries.ts) to their dependencies.
 */
export function createRefundService(input: Omit<RefundDeps, 'timing'> & { timing?: Partial<RefundTiming> }) {
  const deps: RefundDeps = { ...input, timing: { ...DEFAULT_REFUND_TIMING, ...input.timing } }
  return {
    /** The refunds a dashboard search names. */
    search: (auth: AuthContext, key: SearchKey, limit: number) =>
      repo.searchRefunds(deps.db, scopeOf(auth), key, limit),
    create: (auth: AuthContext, refund: CreateRefundInput, request: KeyClaim) =>
      createRefund(deps, auth, refund, request),
    get: (auth: AuthContext, uuid: string) => getRefund(deps, auth, uuid),
    list: (auth: AuthContext, query: ListRefundsInput) => filteredPage(deps, auth, REFUND_LIST, query),
    export: (auth: AuthContext, query: ListRefundsInput) => filteredExport(deps, auth, REFUND_LIST, query),
    findByIdempotencyKey: (scope: Scope, key: string) => findRefundByIdempotencyKey(deps, scope, key),
    checkDue: (limit?: number, now?: Date) => checkDueRefunds(deps, limit, now),
    /** A connector account's verified report on a refund it has, in the caller's transaction. */
    applyReport: (trx: Executor, report: Parameters<typeof applyRefundReport>[2]) =>
      applyRefundReport(deps, trx, report),
    /** Makes the check of the pending refund an account has under `reference` due at `at`. */
    recheck: (accountUuid: string, reference: string, at: Date) =>
      repo.recheckByAccountReference(deps.db, accountUuid, reference, at),
  }
}

import type { Executor } from '../../db/index.ts'
import { type Scope, scopeOf } from '../../db/scope.ts'
import type { PayoutRow } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { filteredExport, filteredPage } from '../../http/filtered-list.ts'
import type { KeyClaim } from '../../http/kept-key.ts'
import { deriveKey } from '../../lib/crypto.ts'
import type { SearchKey } from '../../lib/search.ts'
import { createPayout } from './create.ts'
import { DEFAULT_PAYOUT_TIMING, type PayoutDeps, type PayoutTiming } from './deps.ts'
import { applyPayoutReport, receivePayoutCallback } from './process.ts'
import { findPayoutByIdempotencyKey, getOwnedPayout, getPayout, PAYOUT_LIST } from './queries.ts'
import { purgeExpiredQuotes, quotePayout } from './quote.ts'
import { checkDuePayouts } from './recovery.ts'
import * as repo from './repository.ts'
import type { CreatePayoutInput, ListPayoutsInput, PayoutQuoteInput } from './schemas.ts'
import { payoutView } from './view.ts'

export type { CreatedPayout } from './create.ts'
export { PAYOUT_CURRENCY, type PayoutDeps, type PayoutTiming, QUOTE_TTL_MS } from './deps.ts'

export type PayoutService = ReturnType<typeof createPayoutService>

/**
 * Payouts (docs/API.md, Payouts), exactly once per Idempotency-Key. Creation reserves the total from the available
 * USDT balance together with the pending payout and its key, in one database transaction: a retry of the key
 * finds that payout and answers it, whatever instant the first request died at. The provider is then handed
 * the payout outside any database transaction (it is idempotent on the payout's uuid); a hand-over that a
 * crash or an unreachable provider cut off is made again by `checkDuePayouts` from the sealed destination. What
 * the provider says (at once, in a callback, or when a worker asks) is applied by the one handler,
 * `applyPayoutOutcome`.
 *
 * This binds those operations (create.ts, quote.ts, process.ts, recovery.ts, queries.ts) to their
 * dependencies for routes, workers and other modules.
 */
export function createPayoutService(
  input: Omit<PayoutDeps, 'timing' | 'sealKey'> & { timing?: Partial<PayoutTiming> },
) {
  const deps: PayoutDeps = {
    ...input,
    timing: { ...DEFAULT_PAYOUT_TIMING, ...input.timing },
    sealKey: deriveKey(input.config.masterKey, 'payout-destination'),
  }
  return {
    toView: (row: PayoutRow) => payoutView(row),
    /** The payouts a dashboard search names. */
    search: (auth: AuthContext, key: SearchKey, limit: number) =>
      repo.searchPayouts(deps.db, scopeOf(auth), key, limit),
    quote: (auth: AuthContext, quote: PayoutQuoteInput) => quotePayout(deps, auth, quote),
    create: (auth: AuthContext, payout: CreatePayoutInput, request: KeyClaim) =>
      createPayout(deps, auth, payout, request),
    findByIdempotencyKey: (scope: Scope, key: string) => findPayoutByIdempotencyKey(deps, scope, key),
    get: (auth: AuthContext, uuid: string) => getPayout(deps, auth, uuid),
    getOwned: (auth: AuthContext, uuid: string) => getOwnedPayout(deps, auth, uuid),
    list: (auth: AuthContext, query: ListPayoutsInput) => filteredPage(deps, auth, PAYOUT_LIST, query),
    export: (auth: AuthContext, query: ListPayoutsInput) => filteredExport(deps, auth, PAYOUT_LIST, query),
    receiveProviderCallback: (body: unknown) => receivePayoutCallback(deps, body),
    checkDue: (limit?: number, now?: Date) => checkDuePayouts(deps, limit, now),
    /** A connector account's verified report on a payout it has, in the caller's transaction. */
    applyReport: (trx: Executor, report: Parameters<typeof applyPayoutReport>[2]) =>
      applyPayoutReport(deps, trx, report),
    /** Makes the check of the open payout an account has under `reference` due at `at`. */
    recheck: (accountUuid: string, reference: string, at: Date) =>
      repo.recheckByAccountReference(deps.db, accountUuid, reference, at),
    purgeQuotes: (before?: Date) => purgeExpiredQuotes(deps, before),
  }
}

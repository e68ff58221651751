import { scopeOf } from '../../db/scope.ts'
import type { PayoutRow } from '../../db/types.ts'
import { isUniqueViolation } from '../../db/unique.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError } from '../../http/errors.ts'
import type { KeptKeyCreated, KeyClaim } from '../../http/kept-key.ts'
import { newId } from '../../lib/ids.ts'
import type { RoutedAccount } from '../providers/service.ts'
import type { PayoutDeps } from './deps.ts'
import { checkDestination, sealDestination } from './destination.ts'
import { payoutPosting } from './postings.ts'
import { handOverPayout } from './process.ts'
import { payoutFiguresNow, quotedFigures } from './quote.ts'
import * as repo from './repository.ts'
import type { CreatePayoutInput, PayoutView } from './schemas.ts'
import { payoutView } from './view.ts'

/** The outcome of a create: the payout, and whether it was made by an earlier request with the same key. */
export type CreatedPayout = KeptKeyCreated<PayoutView>

/**
 * The connector account a payout goes to: the first of its payout route (docs/API.md, Payouts). Null for the
 * in-process simulator: no route (but for a live payout in production, which has no default and is refused) or
 * a route to an account of the simulator kind.
 */
async function payoutAccount(
  deps: Pick<PayoutDeps, 'config' | 'providers'>,
  auth: AuthContext,
  method: PayoutRow['method'],
  network: string | null,
): Promise<RoutedAccount | null> {
  const route = await deps.providers.routes.resolve({
    merchantUuid: auth.merchant.uuid,
    mode: auth.mode,
    subject: 'payout',
    method,
    network,
  })
  const [first] = route
  if (!first && auth.mode === 'live' && deps.config.appEnv === 'production')
    throw new AppError(
      'unsupported_payment_method',
      `No payment provider takes live ${method} payouts${network ? ` on ${network}` : ''} for this merchant yet.`,
      { reason: 'no_route' },
    )
  return first && first.kind !== 'simulator' ? first : null
}

/** Records the payout, its key and its reservation together, then hands it to the provider outside them. */
export async function createPayout(
  deps: PayoutDeps,
  auth: AuthContext,
  input: CreatePayoutInput,
  request: KeyClaim,
): Promise<CreatedPayout> {
  const { db, ledger, webhooks, timing } = deps
  // A payout this key made is the answer, before any rule (an expired quote, a spent balance) could
  // refuse the retry of a request that succeeded.
  const earlier = await repo.findByIdempotencyKey(db, scopeOf(auth), request.idempotencyKey)
  if (earlier) return { made: payoutView(earlier), replayed: true }

  const method = input.method as PayoutRow['method']
  const destination = checkDestination(method, input.destination)
  if (input.callback_url) await webhooks.checkCallbackUrl(input.callback_url)
  const account = await payoutAccount(deps, auth, method, destination.order.network ?? null)
  const now = new Date()
  const { rate, rateUpdatedAt, figures } = input.quote_id
    ? await quotedFigures(deps, auth, input, input.quote_id, now)
    : await payoutFiguresNow(deps, auth, input.amount, input.currency)

  // The intent: the payout, its key and its reservation, together or not at all.
  let created: PayoutRow
  try {
    created = await db.transaction().execute(async (trx) => {
      const row = await repo.insertPayout(trx, {
        uuid: newId(),
        merchant_uuid: auth.merchant.uuid,
        mode: auth.mode,
        external_id: input.external_id,
        amount: input.amount,
        currency: input.currency,
        method,
        destination: JSON.stringify(destination.shown),
        destination_sealed: sealDestination(deps.sealKey, destination.order),
        card_brand: destination.cardBrand,
        wallet_uuid: destination.walletUuid,
        quote_uuid: input.quote_id ?? null,
        fx_rate: rate,
        fx_rate_updated_at: rateUpdatedAt,
        ...figures,
        status: 'pending',
        failure_reason: null,
        account_uuid: account?.uuid ?? null,
        provider_reference: null,
        metadata: input.metadata ? JSON.stringify(input.metadata) : null,
        callback_url: input.callback_url ?? null,
        action_request_id: request.actionRequestId,
        idempotency_key: request.idempotencyKey,
        aggregate_version: 1,
        // Should the hand-over below be cut off, a worker hands it over again after this.
        next_check_at: new Date(now.getTime() + timing.submitTimeoutMs),
        created_at: now,
        updated_at: now,
      })
      await ledger.post(trx, payoutPosting(row, 'reserved', now))
      return row
    })
  } catch (error) {
    const external = isUniqueViolation(error, 'payouts_external_id_key')
    if (!external && !isUniqueViolation(error, 'payouts_idempotency_key')) throw error
    // A request with this key committed while this one ran: its payout is the answer, never a conflict.
    const made = await repo.findByIdempotencyKey(db, scopeOf(auth), request.idempotencyKey)
    if (made) return { made: payoutView(made), replayed: true }
    throw new AppError('conflict', `A payout with external_id "${input.external_id}" already exists.`, {
      external_id: input.external_id,
    })
  }

  // The call, outside any database transaction.
  const row = await handOverPayout(deps, created, destination.order)
  return { made: payoutView(row), replayed: false }
}

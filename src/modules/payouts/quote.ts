import type { PayoutQuoteRow } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError, validationError } from '../../http/errors.ts'
import { newId } from '../../lib/ids.ts'
import { type PayoutFigures, payoutFigures } from '../../lib/money.ts'
import { PAYOUT_CURRENCY, type PayoutDeps, QUOTE_TTL_MS } from './deps.ts'
import * as repo from './repository.ts'
import type { CreatePayoutInput, PayoutQuoteInput, PayoutQuoteView } from './schemas.ts'

/** Figures for `amount` of `currency` at the merchant's payout rate and fees now. */
export async function payoutFiguresNow(
  deps: Pick<PayoutDeps, 'rates'>,
  auth: AuthContext,
  amount: number,
  currency: string,
) {
  const { merchant } = auth
  const rate = await deps.rates.merchantRate(currency, PAYOUT_CURRENCY, merchant.fx_markup_bps)
  const figures = payoutFigures(
    amount,
    currency,
    rate.payout_rate,
    merchant.payout_fee_bps,
    Number(merchant.payout_fixed_fee_micro),
  )
  if (!figures) throw validationError('amount', 'is more than a payout can carry in USDT')
  return { rate: rate.payout_rate, rateUpdatedAt: rate.updated_at, figures }
}

/** The quote's held figures, when it is the caller's, unexpired, and for this amount, currency and method. */
export async function quotedFigures(
  deps: Pick<PayoutDeps, 'db'>,
  auth: AuthContext,
  input: CreatePayoutInput,
  quoteId: string,
  now: Date,
) {
  const quote: PayoutQuoteRow | undefined = await repo.findQuote(deps.db, quoteId)
  if (
    !quote ||
    quote.merchant_uuid !== auth.merchant.uuid ||
    quote.mode !== auth.mode ||
    quote.expires_at <= now
  ) {
    throw new AppError('quote_expired', 'The quote has expired or is not yours: get a new one.', {
      quote_id: quoteId,
    })
  }
  if (quote.amount !== input.amount || quote.currency !== input.currency || quote.method !== input.method)
    throw validationError('quote_id', 'was made for another amount, currency or method')
  const figures: PayoutFigures = {
    amount_usdt_micro: quote.amount_usdt_micro,
    fee_usdt_micro: quote.fee_usdt_micro,
    payout_usdt_amount_micro: quote.payout_usdt_amount_micro,
  }
  return { rate: quote.fx_rate, rateUpdatedAt: quote.fx_rate_updated_at, figures }
}

export async function quotePayout(
  deps: Pick<PayoutDeps, 'db' | 'rates'>,
  auth: AuthContext,
  input: PayoutQuoteInput,
): Promise<PayoutQuoteView> {
  const { rate, rateUpdatedAt, figures } = await payoutFiguresNow(deps, auth, input.amount, input.currency)
  const now = new Date()
  const quote = await repo.insertQuote(deps.db, {
    uuid: newId(),
    merchant_uuid: auth.merchant.uuid,
    mode: auth.mode,
    amount: input.amount,
    currency: input.currency,
    method: input.method as PayoutQuoteRow['method'],
    fx_rate: rate,
    fx_rate_updated_at: rateUpdatedAt,
    ...figures,
    expires_at: new Date(now.getTime() + QUOTE_TTL_MS),
    created_at: now,
  })
  return {
    quote_id: quote.uuid,
    amount: quote.amount,
    currency: quote.currency,
    method: quote.method,
    fx_rate: quote.fx_rate,
    amount_usdt_micro: quote.amount_usdt_micro,
    fee_usdt_micro: quote.fee_usdt_micro,
    payout_usdt_amount_micro: quote.payout_usdt_amount_micro,
    expires_at: quote.expires_at.toISOString(),
  }
}

/** Drops quotes that can no longer be used. */
export const purgeExpiredQuotes = (
  deps: Pick<PayoutDeps, 'db'>,
  before = new Date(Date.now() - QUOTE_TTL_MS),
) => repo.deleteQuotesExpiredBefore(deps.db, before)

import type { Config } from '../../config.ts'
import type { Db } from '../../db/index.ts'
import type { Merchant } from '../../db/types.ts'
import { AppError } from '../../http/errors.ts'
import {
  applyMarkupDown,
  applyMarkupUp,
  divideRates,
  formatDecimal,
  isKnownCurrency,
  isPositiveDecimal,
  parseDecimal,
} from '../../lib/money.ts'
import * as repo from './repository.ts'

/** Market rates are quoted as units of a currency per 1 USDT. */
export const QUOTE_CURRENCY = 'USDT'

export interface MerchantRate {
  currency: string
  /** Units of `currency` per 1 unit of the settlement currency, markup included. */
  pay_in_rate: string
  payout_rate: string
  updated_at: Date
}

/** What the rate operations need, with this process's snapshot of the market rates. */
export interface RateDeps {
  db: Db
  config: Config
  now: () => Date
  snapshot: Snapshot | null
}

interface Snapshot {
  rows: Awaited<ReturnType<typeof repo.listMarketRates>>
  at: number
  /**
   * Merchant rates derived from these rows, by currency, settlement currency and markup (null: no rate), so
   * that a payment does not parse, divide and format the same decimals again; their age is still checked on
   * every use.
   */
  derived: Map<string, Derived | null>
}

interface Derived {
  rate: Readonly<MerchantRate>
  /** The market rates it comes from, with when each was set (USDT, the quote currency, has none). */
  sources: readonly (readonly [currency: string, updatedAt: Date])[]
}

/** Derived rates one snapshot keeps at most (currency pairs times the markups merchants have). */
const MAX_DERIVED = 1_000

export type RateService = ReturnType<typeof createRateService>

export function createRateService(input: { db: Db; config: Config; now?: () => Date }) {
  const deps: RateDeps = {
    db: input.db,
    config: input.config,
    now: input.now ?? (() => new Date()),
    snapshot: null,
  }
  return {
    merchantRate: (currency: string, settlement: string, markupBps: number) =>
      merchantRate(deps, currency, settlement, markupBps),
    ratesView: (merchant: Merchant) => ratesView(deps, merchant),
    setMarketRate: (currency: string, rate: string) => setMarketRate(deps, currency, rate),
    listMarketRates: () => repo.listMarketRates(deps.db),
  }
}

// Every market rate, read at most once per rateCacheMs per process (the table has a row per currency): a
// payment then costs no query for its rate. A rate set through this process is seen at once; one set
// elsewhere (the operator command, another process) within rateCacheMs.
async function marketRates(deps: RateDeps) {
  if (!deps.snapshot || Date.now() - deps.snapshot.at >= deps.config.rateCacheMs)
    deps.snapshot = { rows: await repo.listMarketRates(deps.db), at: Date.now(), derived: new Map() }
  return deps.snapshot
}

function assertFresh(deps: RateDeps, updatedAt: Date, currency: string): void {
  const { fxMaxAgeSeconds } = deps.config
  if (fxMaxAgeSeconds === null) return
  if (deps.now().getTime() - updatedAt.getTime() > fxMaxAgeSeconds * 1000) {
    throw new AppError('fx_rate_unavailable', `The ${currency} rate is out of date; try again shortly.`, {
      currency,
    })
  }
}

/**
 * Market rate of `currency` per 1 unit of `settlement` in the snapshot, with its age and the rates it comes
 * from; null when either has no rate.
 */
function marketRate(
  rows: Snapshot['rows'],
  currency: string,
  settlement: string,
): { rate: string; updated_at: Date; sources: Derived['sources'] } | null {
  const of = (c: string) =>
    c === QUOTE_CURRENCY ? { market_rate: '1', updated_at: null } : rows.find((r) => r.currency === c)
  const a = of(currency)
  const b = of(settlement)
  if (!a || !b) return null
  const sources = (
    [
      [currency, a.updated_at],
      [settlement, b.updated_at],
    ] as const
  ).filter((s): s is readonly [string, Date] => s[1] !== null)
  // The older of the two rates decides the age of the cross rate. (There is at least one: the two currencies
  // differ, so one of them is not USDT.)
  const updatedAt = new Date(Math.min(...sources.map(([, d]) => d.getTime())))
  const rate = settlement === QUOTE_CURRENCY ? a.market_rate : divideRates(a.market_rate, b.market_rate)
  return { rate, updated_at: updatedAt, sources }
}

/**
 * The merchant's rates for `currency` against its settlement currency (docs/API.md, Rates):
 * pay-in = market × (1 + markup), payout = market × (1 − markup). The settlement currency itself is "1".
 * Throws unsupported_currency when there is no rate and fx_rate_unavailable when it is stale.
 */
export async function merchantRate(
  deps: RateDeps,
  currency: string,
  settlement: string,
  markupBps: number,
): Promise<Readonly<MerchantRate>> {
  if (currency === settlement) return { currency, pay_in_rate: '1', payout_rate: '1', updated_at: deps.now() }
  const derived = isKnownCurrency(currency) ? await derivedRate(deps, currency, settlement, markupBps) : null
  if (!derived) {
    throw new AppError(
      'unsupported_currency',
      `${currency} is not a supported currency: there is no rate for it.`,
      {
        currency,
      },
    )
  }
  for (const [c, updatedAt] of derived.sources) assertFresh(deps, updatedAt, c)
  return derived.rate
}

/** The merchant rate from this process's snapshot, derived once per snapshot (see Snapshot). */
async function derivedRate(
  deps: RateDeps,
  currency: string,
  settlement: string,
  markupBps: number,
): Promise<Derived | null> {
  const snapshot = await marketRates(deps)
  const key = `${currency}/${settlement}/${markupBps}`
  const known = snapshot.derived.get(key)
  if (known !== undefined) return known
  const market = marketRate(snapshot.rows, currency, settlement)
  const derived: Derived | null = market && {
    rate: Object.freeze({
      currency,
      pay_in_rate: applyMarkupUp(market.rate, markupBps),
      payout_rate: applyMarkupDown(market.rate, markupBps),
      updated_at: market.updated_at,
    }),
    sources: market.sources,
  }
  if (snapshot.derived.size < MAX_DERIVED) snapshot.derived.set(key, derived)
  return derived
}

/**
 * Every currency with a usable rate against `settlement`, the merchant's markup applied; stale ones left out.
 * The currencies come from the process's snapshot of market rates, as their rates do (the table is not read for
 * the list on every call).
 */
export async function merchantRates(
  deps: RateDeps,
  settlement: string,
  markupBps: number,
): Promise<Readonly<MerchantRate>[]> {
  const currencies = [...new Set([...(await marketRates(deps)).rows.map((r) => r.currency), QUOTE_CURRENCY])]
  const out: Readonly<MerchantRate>[] = []
  for (const currency of currencies.filter((c) => c !== settlement).sort()) {
    try {
      out.push(await merchantRate(deps, currency, settlement, markupBps))
    } catch (error) {
      if (!(error instanceof AppError)) throw error
    }
  }
  return out
}

/** What GET /integration/rates shows: the merchant's usable rates, and when the newest was set. */
export async function ratesView(deps: RateDeps, merchant: Merchant) {
  const data = await merchantRates(deps, merchant.settlement_currency, merchant.fx_markup_bps)
  const newest = data.reduce<Date | null>((max, r) => (max && max > r.updated_at ? max : r.updated_at), null)
  return {
    settlement_currency: merchant.settlement_currency,
    data: data.map((r) => ({ ...r, updated_at: r.updated_at.toISOString() })),
    updated_at: (newest ?? deps.now()).toISOString(),
  }
}

/** Operator: set the market rate of a currency, as units per 1 USDT. */
export async function setMarketRate(deps: RateDeps, currency: string, rate: string) {
  if (!isKnownCurrency(currency) || currency === QUOTE_CURRENCY)
    throw new Error(`${currency} is not an ISO 4217 currency code`)
  if (!isPositiveDecimal(rate))
    throw new Error(`the rate must be a positive decimal such as 92.15, got "${rate}"`)
  deps.snapshot = null
  return repo.upsertMarketRate(deps.db, currency, formatDecimal(parseDecimal(rate)), deps.now())
}

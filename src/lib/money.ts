import iso4217 from 'currency-codes'

/**
 * Exact money arithmetic. Amounts are integers in minor units; rates are decimal strings.
 * Everything is done on bigint, and every rounding is named at its call site.
 */

/** Currencies the contract names beyond ISO 4217: USDT, counted in micro units. */
const EXTRA_EXPONENTS: Record<string, number> = { USDT: 6 }

/** True for an ISO 4217 code, or for one of the extra currencies (USDT). */
export const isKnownCurrency = (code: string): boolean =>
  code in EXTRA_EXPONENTS || (/^[A-Z]{3}$/.test(code) && iso4217.code(code) !== undefined)

/** The number of minor-unit digits from the ISO 4217 list: USD 2, JPY 0, KWD 3; USDT 6. */
export function currencyExponent(code: string): number {
  const extra = EXTRA_EXPONENTS[code]
  if (extra !== undefined) return extra
  const record = iso4217.code(code)
  if (!record) throw new Error(`unknown currency ${code}`)
  return record.digits
}

const TEN = 10n
const pow10 = (n: number): bigint => TEN ** BigInt(n)

/** floor(a / b) for b > 0. */
export function divFloor(a: bigint, b: bigint): bigint {
  const q = a / b
  return a % b !== 0n && a < 0n ? q - 1n : q
}

/** ceil(a / b) for b > 0. */
export const divCeil = (a: bigint, b: bigint): bigint => -divFloor(-a, b)

/** round(a / b), halves away from zero, for b > 0. */
export function divRoundHalfUp(a: bigint, b: bigint): bigint {
  if (a < 0n) return -divRoundHalfUp(-a, b)
  return (2n * a + b) / (2n * b)
}

/** A decimal as an integer and a scale: "92.15" → { units: 9215n, scale: 2 }. */
export interface Decimal {
  units: bigint
  scale: number
}

/** What an operator may enter as a rate: up to 12 digits either side of the point. */
export const DECIMAL_PATTERN = '^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,12})?$'
const decimalRegex = new RegExp(DECIMAL_PATTERN)
/** Rates the service derives (markups, cross rates) may carry more digits; they stay exact. */
const derivedDecimalRegex = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/

export function parseDecimal(text: string): Decimal {
  if (!derivedDecimalRegex.test(text)) throw new Error(`not a decimal: ${text}`)
  const [whole = '0', fraction = ''] = text.split('.')
  return { units: BigInt(whole + fraction), scale: fraction.length }
}

/** The shortest plain decimal string for a value: no exponent, no trailing zeros. */
export function formatDecimal({ units, scale }: Decimal): string {
  const negative = units < 0n
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0')
  let whole = digits.slice(0, digits.length - scale)
  let fraction = scale > 0 ? digits.slice(digits.length - scale) : ''
  fraction = fraction.replace(/0+$/, '')
  whole = whole.replace(/^0+(?=\d)/, '')
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`
}

export const isPositiveDecimal = (text: string): boolean =>
  decimalRegex.test(text) && parseDecimal(text).units > 0n

/** rate × (1 + bps / 10000), exact: the pay-in side of a markup. */
export function applyMarkupUp(rate: string, bps: number): string {
  const { units, scale } = parseDecimal(rate)
  return formatDecimal({ units: units * BigInt(10000 + bps), scale: scale + 4 })
}

/** rate × (1 − bps / 10000), exact: the payout side of a markup. */
export function applyMarkupDown(rate: string, bps: number): string {
  const { units, scale } = parseDecimal(rate)
  return formatDecimal({ units: units * BigInt(10000 - bps), scale: scale + 4 })
}

/** Cross rate a / b to `scale` decimals, rounded half up (used when settlement is not in USDT). */
export function divideRates(a: string, b: string, scale = 12): string {
  const x = parseDecimal(a)
  const y = parseDecimal(b)
  // (x.units / 10^x.scale) / (y.units / 10^y.scale) × 10^scale
  const numerator = x.units * pow10(y.scale + scale)
  const denominator = y.units * pow10(x.scale)
  return formatDecimal({ units: divRoundHalfUp(numerator, denominator), scale })
}

export interface FeeBreakdown {
  fee_amount: number
  merchant_fee_merchant_amount: number
  merchant_fee_customer_amount: number
  gross_amount: number
  net_amount: number
  fee_payer: 'merchant' | 'customer' | 'split'
}

/** Fees (docs/API.md, Transactions): the fee, who bears it, and what the customer pays and the merchant nets. */
export function computeFees(amount: number, feeBps: number, merchantShareBps: number): FeeBreakdown {
  const fee = divRoundHalfUp(BigInt(amount) * BigInt(feeBps), 10000n)
  const merchantPart = divRoundHalfUp(fee * BigInt(merchantShareBps), 10000n)
  const customerPart = fee - merchantPart
  const gross = BigInt(amount) + customerPart
  return {
    fee_amount: Number(fee),
    merchant_fee_merchant_amount: Number(merchantPart),
    merchant_fee_customer_amount: Number(customerPart),
    gross_amount: Number(gross),
    net_amount: Number(gross - fee),
    fee_payer: merchantShareBps === 10000 ? 'merchant' : merchantShareBps === 0 ? 'customer' : 'split',
  }
}

/** amount in major units of `from` / rate, in minor units of `to`, rounded by `divide`. */
function convert(
  amountMinor: number,
  from: string,
  rate: string,
  to: string,
  divide: (a: bigint, b: bigint) => bigint,
): bigint {
  const r = parseDecimal(rate)
  const numerator = BigInt(amountMinor) * pow10(currencyExponent(to) + r.scale)
  const denominator = pow10(currencyExponent(from)) * r.units
  return divide(numerator, denominator)
}

/**
 * floor(amount in major units of `from` / rate) in minor units of `to`, where rate is units of `from`
 * per 1 unit of `to`. Used for settlement (docs/API.md, Transactions).
 */
export const convertFloor = (amountMinor: number, from: string, rate: string, to: string): number =>
  Number(convert(amountMinor, from, rate, to, divFloor))

/** The same conversion rounded up (refund debits, docs/API.md, Refunds). */
export const convertCeil = (amountMinor: number, from: string, rate: string, to: string): number =>
  Number(convert(amountMinor, from, rate, to, divCeil))

/** "54.259360": minor units as a decimal string with exactly the currency's exponent. */
export function minorToDecimal(amountMinor: number, currency: string): string {
  const exponent = currencyExponent(currency)
  const digits = Math.abs(amountMinor)
    .toString()
    .padStart(exponent + 1, '0')
  const whole = digits.slice(0, digits.length - exponent)
  const fraction = exponent > 0 ? `.${digits.slice(digits.length - exponent)}` : ''
  return `${amountMinor < 0 ? '-' : ''}${whole}${fraction}`
}

/** "54.259360 USDT": minor units shown with exactly the currency's exponent. */
export const formatMinor = (amountMinor: number, currency: string): string =>
  `${minorToDecimal(amountMinor, currency)} ${currency}`

export interface PayoutFigures {
  /** What the beneficiary is sent, in USDT micro. */
  amount_usdt_micro: number
  fee_usdt_micro: number
  /** Their sum: what leaves the merchant's USDT balance. */
  payout_usdt_amount_micro: number
}

/**
 * A payout's figures (docs/API.md, Payouts): amount_usdt_micro = ceil(amount in major units / payout rate) (the
 * merchant never sends the beneficiary less than asked); fee = round_half_up(amount_usdt_micro × bps / 10000) +
 * the fixed part; the total is their sum. Null when the total would not be an exact integer in JSON (beyond
 * 2^53 − 1).
 */
export function payoutFigures(
  amountMinor: number,
  currency: string,
  payoutRate: string,
  feeBps: number,
  fixedFeeMicro: number,
): PayoutFigures | null {
  const usdt = convert(amountMinor, currency, payoutRate, 'USDT', divCeil)
  const fee = divRoundHalfUp(usdt * BigInt(feeBps), 10000n) + BigInt(fixedFeeMicro)
  const total = usdt + fee
  if (total > BigInt(Number.MAX_SAFE_INTEGER)) return null
  return {
    amount_usdt_micro: Number(usdt),
    fee_usdt_micro: Number(fee),
    payout_usdt_amount_micro: Number(total),
  }
}

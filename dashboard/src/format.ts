// The SDK's generated file itself, not api/client: this module is pure, and its unit test runs under Node.
import type { components } from '../../sdk/src/openapi.ts'

/** Currencies the API counts in other units than ISO 4217's: USDT in micro units (docs/API.md). */
const OWN_DIGITS: Record<string, number> = { USDT: 6 }

/** Digits after the point of a currency's minor unit (RUB 2, JPY 0, USDT 6), from the browser's own tables. */
export function minorDigits(currency: string): number {
  const own = OWN_DIGITS[currency]
  if (own !== undefined) return own
  try {
    return (
      new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ??
      2
    )
  } catch {
    return 2
  }
}

/**
 * An amount in minor units as people read it: `1,500.00 RUB`, `25.00 USDT`, `16.277807 USDT`, `0 USDT`. Exact
 * (integer arithmetic, no float division, every digit that counts kept), but without the zeros a currency with
 * more than two digits (USDT's six) would trail past the second, and a zero is just `0`.
 */
export function money(minor: number, currency: string): string {
  if (minor === 0) return `0 ${currency}`
  const digits = minorDigits(currency)
  const negative = minor < 0
  const text = Math.abs(minor)
    .toString()
    .padStart(digits + 1, '0')
  const whole = text.slice(0, text.length - digits) || '0'
  const fraction = digits ? `.${text.slice(text.length - digits)}`.replace(/(\.\d\d\d*?)0+$/, '$1') : ''
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  return `${negative ? '−' : ''}${grouped}${fraction} ${currency}`
}

/** Major units typed by a person (`12.5`) → minor units, or null when it is not an amount of that currency. */
export function toMinor(text: string, currency: string): number | null {
  const digits = minorDigits(currency)
  const match = /^\s*(\d{1,15})(?:[.,](\d*))?\s*$/.exec(text)
  if (!match) return null
  const fraction = match[2] ?? ''
  if (fraction.length > digits) return null
  return Number(match[1]) * 10 ** digits + Number(fraction.padEnd(digits, '0') || '0')
}

/** Minor units → the major-unit text a form field shows (`12.50`). */
export const toMajorText = (minor: number, currency: string) =>
  money(minor, currency).split(' ')[0]?.replaceAll(',', '') ?? ''

/** A name of the API (`partially_refunded`) as words (`partially refunded`). */
export const words = (name: string) => name.replaceAll('_', ' ')

const dateTime = new Intl.DateTimeFormat('en-GB', {
  dateStyle: 'medium',
  timeStyle: 'medium',
  timeZone: 'UTC',
})
/** An instant as people read it, in UTC (the API's timestamps are UTC). */
export const when = (iso: string | null | undefined) => (iso ? `${dateTime.format(new Date(iso))} UTC` : '—')

export const percent = (part: number, whole: number) =>
  whole ? `${((part / whole) * 100).toFixed(1)}\u00a0%` : '—'

/**
 * Minor units of `currency` in the settlement currency at a pay-in rate (units of `currency` per unit of the
 * settlement currency, as `GET /integration/rates` gives it), rounded to the settlement currency's minor unit:
 * an estimate, for a total across currencies.
 */
export function inSettlement(minor: number, currency: string, settlement: string, payInRate: string): number {
  if (currency === settlement) return minor
  const rate = Number(payInRate)
  if (!(rate > 0)) return 0
  return Math.round((minor / 10 ** minorDigits(currency) / rate) * 10 ** minorDigits(settlement))
}

/** An estimate in minor units rounded to hundredths of the major unit (`633.97 USDT`, not `633.97363 USDT`). */
export function rounded(minor: number, currency: string): number {
  const step = 10 ** Math.max(0, minorDigits(currency) - 2)
  return Math.round(minor / step) * step
}

/** How a figure changed from the previous period: `+12.5 %`, `−3.0 %`, `no change`, or `new` from nothing. */
export function change(now: number, before: number): string {
  if (before === 0) return now === 0 ? 'no change' : 'new'
  const delta = ((now - before) / before) * 100
  if (Math.abs(delta) < 0.05) return 'no change'
  return `${delta > 0 ? '+' : '−'}${Math.abs(delta).toFixed(1)}\u00a0%`
}

/** A payout's figures, as the API gives them in a quote (and, as strings, in a payout's `fx`). */
export type PayoutFigures = Pick<
  components['schemas']['PayoutQuoteResponse'],
  'method' | 'amount' | 'currency' | 'amount_usdt_micro' | 'fee_usdt_micro' | 'payout_usdt_amount_micro'
>

/**
 * What the recipient gets, the fee and the total debited from the USDT balance (docs/API.md, Payouts). A wallet
 * receives USDT; a card receives the payout's own currency, with its USDT value beside it.
 */
export function payoutFigures(p: PayoutFigures): { recipient: string; fee: string; total: string } {
  const inUsdt = money(p.amount_usdt_micro, 'USDT')
  const asked = money(p.amount, p.currency)
  const recipient =
    p.currency === 'USDT' ? inUsdt : p.method === 'card' ? `${asked} (${inUsdt})` : `${inUsdt} (${asked})`
  return {
    recipient,
    fee: money(p.fee_usdt_micro, 'USDT'),
    total: money(p.payout_usdt_amount_micro, 'USDT'),
  }
}

/**
 * A JSON text laid out two spaces to a level, for reading (a webhook's body, an endpoint's answer); any other
 * text as it is. The text is re-laid, not parsed and written again, so a number past 2^53 keeps every digit.
 */
export function prettyJson(text: string): string {
  try {
    JSON.parse(text)
  } catch {
    return text
  }
  let out = ''
  let depth = 0
  let inString = false
  let escaped = false
  const newline = () => `\n${'  '.repeat(depth)}`
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    if (inString) {
      out += c
      if (escaped) escaped = false
      else if (c === '\\') escaped = true
      else if (c === '"') inString = false
    } else if (c === '"') {
      inString = true
      out += c
    } else if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']'
      let next = i + 1
      while (/\s/.test(text[next] ?? '')) next++
      if (text[next] === close) {
        out += c + close
        i = next
      } else {
        depth++
        out += c + newline()
      }
    } else if (c === '}' || c === ']') {
      depth--
      out += newline() + c
    } else if (c === ',') out += `,${newline()}`
    else if (c === ':') out += ': '
    else if (!/\s/.test(c)) out += c
  }
  return out
}

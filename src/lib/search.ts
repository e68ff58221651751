import { isUuid } from './ids.ts'
import { currencyExponent } from './money.ts'

/** A decimal amount as a person types it: digits, and at most six after the point. */
const AMOUNT = /^(\d{1,15})(?:\.(\d{1,6}))?$/
const EMAIL = /^[^\s@]+@[^\s@]+$/
const LAST_FOUR = /^\d{4}$/
/** The exponents currencies have (ISO 4217's 0, 2, 3, and USDT's 6): where an amount is looked for. */
const EXPONENTS = [0, 2, 3, 6]

/** What a dashboard search looks for, read once from what was typed. */
export interface SearchKey {
  /** The text as typed, without its surrounding spaces: an external id, a provider's reference, a hash. */
  text: string
  /** The text as a uuid (lower-case), when it is one. */
  uuid?: string
  /** The amount typed, in minor units, for each exponent it fits (`12.5` is 125 at 1, 1250 at 2, …). */
  amounts: { minor: number; exponent: number }[]
  /** The text as an e-mail address (lower-case), when it looks like one. */
  email?: string
  /** The text as the last four digits of a card, when it is four digits. */
  lastFour?: string
}

/** What `q` asks a search for (docs/API.md, Search). */
export function searchKey(q: string): SearchKey {
  const text = q.trim()
  const lower = text.toLowerCase()
  const amount = AMOUNT.exec(text)
  const amounts = amount
    ? EXPONENTS.filter((exponent) => (amount[2] ?? '').length <= exponent).map((exponent) => ({
        minor: Number(`${amount[1]}${(amount[2] ?? '').padEnd(exponent, '0')}`),
        exponent,
      }))
    : []
  return {
    text,
    ...(isUuid(lower) && { uuid: lower }),
    amounts: amounts.filter(({ minor }) => Number.isSafeInteger(minor)),
    ...(EMAIL.test(text) && { email: lower }),
    ...(LAST_FOUR.test(text) && { lastFour: text }),
  }
}

/** The minor amounts the key's amount may be, in any currency. */
export const amountCandidates = (key: SearchKey): number[] => [...new Set(key.amounts.map((a) => a.minor))]

/** Whether `minor` of `currency` is the amount typed, read in that currency. */
export const isAmountOf = (key: SearchKey, minor: number, currency: string): boolean =>
  key.amounts.some((amount) => amount.minor === minor && amount.exponent === exponentOrNull(currency))

const exponentOrNull = (currency: string): number | null => {
  try {
    return currencyExponent(currency)
  } catch {
    return null
  }
}

import type { Mode } from './types.ts'

/** Whose rows a query may see: one merchant, in one mode (test and live data never mix). */
export interface Scope {
  merchantUuid: string
  mode: Mode
}

/** The scope of an authenticated caller. */
export const scopeOf = (auth: { merchant: { uuid: string }; mode: Mode }): Scope => ({
  merchantUuid: auth.merchant.uuid,
  mode: auth.mode,
})

import type { LightMyRequestResponse } from 'fastify'
import { assertFieldInvalid } from './errors.ts'

/** A listing of the merchant API, asked with a query. */
export type Listing = (query: Record<string, string>) => Promise<LightMyRequestResponse>

/** Each of `queries` is answered 422 validation_failed, with a message for `field`. */
export async function assertRefusedOn(
  list: Listing,
  field: string,
  queries: readonly Record<string, string>[],
) {
  for (const query of queries) assertFieldInvalid(await list(query), field, JSON.stringify(query))
}

/**
 * Each value of each parameter, given alone, is answered 422 validation_failed naming that parameter:
 * `{ per_page: ['0', '101'] }` is two requests.
 */
export async function assertRefusesValues(list: Listing, values: Record<string, readonly string[]>) {
  for (const [field, refused] of Object.entries(values)) {
    const queries = refused.map((value) => ({ [field]: value }))
    await assertRefusedOn(list, field, queries)
  }
}

import { ListLimitError, MerchantGatewayError } from './errors.ts'
import type { components } from './openapi.ts'

/** How many items `toArray()` collects at most when no limit is given. */
export const DEFAULT_TO_ARRAY_LIMIT = 10_000

export interface Page<T> {
  data: T[]
  meta: components['schemas']['CursorMeta']
}

/**
 * A list call. Awaited, it is the first page; iterated with `for await`, it is every item of every page, fetched
 * a page at a time as the loop goes (`pages()` gives the pages themselves). Nothing is fetched until one of
 * those is used.
 */
export class List<T> implements AsyncIterable<T>, PromiseLike<Page<T>> {
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>) {}

  // biome-ignore lint/suspicious/noThenProperty: awaiting a list gives its first page, by design.
  then<A = Page<T>, B = never>(
    onFulfilled?: ((page: Page<T>) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.fetchPage(undefined).then(onFulfilled, onRejected)
  }

  /** Every page in order, following `meta.next_cursor` until there is none. */
  async *pages(): AsyncGenerator<Page<T>> {
    let cursor: string | undefined
    do {
      const page = await this.fetchPage(cursor)
      yield page
      cursor = page.meta.next_cursor ?? undefined
    } while (cursor)
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for await (const page of this.pages()) yield* page.data
  }

  /**
   * Every item of every page, as long as there are at most `limit` of them (default 10 000: a guard against
   * loading a whole history by mistake). A list longer than that throws ListLimitError instead of coming back
   * cut short: a shortened list would look complete. To take the first n items, iterate and stop.
   */
  async toArray(limit = DEFAULT_TO_ARRAY_LIMIT): Promise<T[]> {
    if (!Number.isSafeInteger(limit) || limit < 1)
      throw new MerchantGatewayError(`toArray's limit must be a whole number of 1 or more, not ${limit}`)
    const items: T[] = []
    // Page by page, so that the page after the limit is fetched only when the limit is reached.
    for await (const page of this.pages())
      for (const item of page.data) {
        if (items.length === limit) throw new ListLimitError(limit)
        items.push(item)
      }
    return items
  }
}

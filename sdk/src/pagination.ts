import type { components } from './openapi.ts'

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

  /** Every item, up to `limit` (default 10 000: a guard against loading a whole history by mistake). */
  async toArray(limit = 10_000): Promise<T[]> {
    const items: T[] = []
    if (limit <= 0) return items
    for await (const item of this) {
      items.push(item)
      if (items.length >= limit) break
    }
    return items
  }
}

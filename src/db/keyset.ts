import { type SelectQueryBuilder, sql } from 'kysely'
import type { Executor } from './index.ts'
import type { Scope } from './scope.ts'

/** A position in a newest-first list, and which way the page it opens goes from there. */
export interface Cursor {
  direction: 'next' | 'prev'
  /** The time of the row at the position (the list's time column: created_at, or e.g. occurred_at). */
  createdAt: string
  uuid: string
}

/** The columns a list is ordered by: a time, then a uuid that breaks ties. */
export interface KeysetColumns {
  time: string
  id: string
}

const CREATED_AT: KeysetColumns = { time: 'created_at', id: 'uuid' }

/**
 * One page of a list in keyset order: newest first (created_at desc, uuid desc, or the `columns` given) going
 * forward, the reverse going back from a `prev` cursor. Fetches `limit` rows; callers ask for one more than a
 * page to learn whether another follows. The cost is the same on page one and deep in a list of millions.
 */
export function keysetPage<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  cursor: Cursor | null,
  limit: number,
  columns: KeysetColumns = CREATED_AT,
) {
  const time = sql.ref(columns.time)
  const id = sql.ref(columns.id)
  const forward = cursor?.direction !== 'prev'
  const positioned = cursor
    ? query.where(
        sql<boolean>`(${time}, ${id}) ${sql.raw(forward ? '<' : '>')} (${cursor.createdAt}::timestamptz, ${cursor.uuid}::uuid)`,
      )
    : query
  const order = sql.raw(forward ? 'desc' : 'asc')
  return positioned.orderBy(sql`${time} ${order}`).orderBy(sql`${id} ${order}`).limit(limit).execute()
}

/**
 * A module's `listPage` over its `filtered` query: one page of the scope's rows that match the filters, in
 * keyset order (see keysetPage).
 */
export const pagedList =
  <F, DB, TB extends keyof DB, O>(
    filtered: (db: Executor, scope: Scope, filters: F) => SelectQueryBuilder<DB, TB, O>,
  ) =>
  (db: Executor, scope: Scope, filters: F, cursor: Cursor | null, limit: number) =>
    keysetPage(filtered(db, scope, filters), cursor, limit)

/**
 * Rows per query of an export. Small on purpose: a batch's rows are alive while it is read and written out, and
 * whatever is alive when the young generation is collected is promoted to the old one, which V8 lets grow by
 * 150 MiB and more before it collects it. Exporting a million transactions grew the server by 161-168 MiB
 * with 1,000-row batches; by 23-66 MiB with 100-row batches and by 0-72 MiB with 50-row ones, varying from run
 * to run with when V8 collects (bench/README.md, CSV export).
 */
export const EXPORT_BATCH_ROWS = 50

/**
 * Every row of `query` in keyset order, newest first, `size` rows per query: what an export streams. Each
 * batch is its own short query, so no connection or snapshot is held while the caller writes rows out, and
 * the cost per batch stays the same at the end of a list of millions.
 */
export async function* keysetBatches<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  size = EXPORT_BATCH_ROWS,
  columns: KeysetColumns = CREATED_AT,
): AsyncGenerator<O[]> {
  let cursor: Cursor | null = null
  for (;;) {
    const rows = (await keysetPage(query, cursor, size, columns)) as O[]
    if (rows.length > 0) yield rows
    if (rows.length < size) return
    const last = rows[rows.length - 1] as Record<string, unknown>
    cursor = {
      direction: 'next',
      createdAt: (last[columns.time] as Date).toISOString(),
      uuid: last[columns.id] as string,
    }
  }
}

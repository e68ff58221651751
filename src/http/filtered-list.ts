import type { SelectQueryBuilder } from 'kysely'
import type { Executor } from '../db/index.ts'
import { type Cursor, keysetBatches } from '../db/keyset.ts'
import { type Scope, scopeOf } from '../db/scope.ts'
import type { AuthContext } from './auth.ts'
import { exportQuery, filterDigest, listAnswer } from './pagination.ts'

/** A list's query: its filters, and the place and size of a page. */
type ListQuery = { cursor?: string; per_page?: number }

/** A list's filters as its repository takes them, and their digest: a cursor is bound to it. */
export interface ListFilters<F> {
  filters: F
  digest: string
}

/**
 * A list's filters, with the digest of its query parameters as normalised: several values joined (sorted by
 * the caller), dates as instants. Equal filters written differently (statuses in another order, a date as a
 * date-time) share their cursors.
 */
export function listFilters<F>(
  filters: F,
  parameters: Record<string, string | readonly string[] | Date | undefined>,
): ListFilters<F> {
  const normal: Record<string, string | undefined> = {}
  for (const [name, value] of Object.entries(parameters))
    normal[name] =
      value instanceof Date ? value.toISOString() : typeof value === 'object' ? value.join(',') : value
  return { filters, digest: filterDigest(normal) }
}

/**
 * What a list's pages and its CSV export share (docs/ARCHITECTURE.md, "Finding your room"): `filters` reads
 * the query's filters, one function for both, so an export has every row its pages have; `view` is what the
 * API shows of a row, given the caller's dependencies.
 */
interface FilteredList<Q extends ListQuery, F, R, V, D> {
  filters: (query: Omit<Q, 'cursor' | 'per_page'>) => ListFilters<F>
  view: (row: R, deps: D) => V
}

/** A list's pages: `page` is the repository's keyset page of its filtered rows; `path` its URL, for `meta.path`. */
export interface PagedList<Q extends ListQuery, F, R, V, D> extends FilteredList<Q, F, R, V, D> {
  path: string
  page: (db: Executor, scope: Scope, filters: F, cursor: Cursor | null, limit: number) => Promise<R[]>
}

/** A list's CSV export: `rows` is the repository's filtered statement (no order, no limit). */
export interface ExportedList<Q extends ListQuery, F, R, V, D, DB, TB extends keyof DB>
  extends FilteredList<Q, F, R, V, D> {
  rows: (db: Executor, scope: Scope, filters: F) => SelectQueryBuilder<DB, TB, R>
}

/** One page of the caller's list: the query's filters, its cursor checked against their digest, the views. */
export function filteredPage<Q extends ListQuery, F, R extends { created_at: Date; uuid: string }, V, D>(
  deps: D & { db: Executor; config: { publicBaseUrl: string } },
  auth: AuthContext,
  list: PagedList<Q, F, R, V, D>,
  query: Q,
) {
  const { filters, digest } = list.filters(query)
  return listAnswer(
    query,
    { digest, path: `${deps.config.publicBaseUrl}${list.path}` },
    (cursor, limit) => list.page(deps.db, scopeOf(auth), filters, cursor, limit),
    (row) => list.view(row, deps),
  )
}

/** Every row of the caller's list its filters match, newest first, as views in batches: what an export streams. */
export async function* filteredExport<Q extends ListQuery, F, R, V, D, DB, TB extends keyof DB>(
  deps: D & { db: Executor },
  auth: AuthContext,
  list: ExportedList<Q, F, R, V, D, DB, TB>,
  query: Q,
): AsyncGenerator<V[]> {
  const { filters } = list.filters(exportQuery(query))
  for await (const rows of keysetBatches(list.rows(deps.db, scopeOf(auth), filters)))
    yield rows.map((row) => list.view(row, deps))
}

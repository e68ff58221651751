import type { FastifyInstance } from 'fastify'
import { type TProperties, Type } from 'typebox'
import type { Cursor } from '../db/keyset.ts'
import { sha256Hex } from '../lib/crypto.ts'
import { isUuid } from '../lib/ids.ts'
import { validationError } from './errors.ts'

export type { Cursor }

export const PaginationQuery = {
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'Opaque cursor from meta.next_cursor or meta.prev_cursor.',
    }),
  ),
  per_page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'Page size, 1-100.' }),
  ),
}

/** A list's query: the page's place and size, then the list's own `filters`; nothing else is accepted. */
export const ListQuery = <T extends TProperties>(filters: T) =>
  Type.Object({ ...PaginationQuery, ...filters }, { additionalProperties: false })

/** The `date_from`/`date_to` filters of a list, on its `created_at` (parsed by http/date-filter.ts). */
export const DateRangeQuery = {
  date_from: Type.Optional(
    Type.String({
      description: 'YYYY-MM-DD (UTC) or a date-time; inclusive, on created_at.',
      examples: ['2026-11-01'],
    }),
  ),
  date_to: Type.Optional(
    Type.String({
      description: 'YYYY-MM-DD (UTC, the whole day) or a date-time; inclusive.',
      examples: ['2026-11-30'],
    }),
  ),
}

/** The same range, named `created_from`/`created_to` (the balance-transaction and event lists). */
export const CreatedRangeQuery = {
  created_from: DateRangeQuery.date_from,
  created_to: DateRangeQuery.date_to,
}

/** A list's `currency` filter. */
export const CurrencyFilter = (example: string) =>
  Type.Optional(
    Type.String({ pattern: '^[A-Za-z0-9]{1,8}$', description: 'Only this currency.', examples: [example] }),
  )

/** A list's filter that takes one of `values`, or several comma-separated (`?status=paid,failed`). */
export function OneOrSeveral(
  values: readonly string[],
  options: { description: string; examples: string[] },
) {
  const one = `(${values.join('|')})`
  return Type.Optional(Type.String({ pattern: `^${one}(,${one})*$`, ...options }))
}

export const CursorMeta = Type.Object(
  {
    per_page: Type.Integer(),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
    prev_cursor: Type.Union([Type.String(), Type.Null()]),
    path: Type.String({ description: 'Absolute URL of the operation, without query.' }),
  },
  { $id: 'CursorMeta' },
)

/** A list's answer, `$id`: a page of `item` (a registered schema's `$id`), and the cursors either side. */
export const CursorPage = ($id: string, item: string) =>
  Type.Object({ data: Type.Array(Type.Ref(item)), meta: Type.Ref('CursorMeta') }, { $id })

/** A short digest of the filters a cursor was made under: following it with other filters is refused. */
export const filterDigest = (filters: Record<string, unknown>): string =>
  sha256Hex(
    JSON.stringify(
      Object.entries(filters)
        .filter(([, v]) => v !== undefined && v !== null)
        .sort(),
    ),
  ).slice(0, 16)

export function encodeCursor(cursor: Cursor, digest: string): string {
  return Buffer.from(
    JSON.stringify([cursor.direction === 'next' ? 'n' : 'p', cursor.createdAt, cursor.uuid, digest]),
  ).toString('base64url')
}

/** Exactly what `encodeCursor` writes: a lenient parse would let year 0 or ±275760 reach the database. */
const isIssuedTimestamp = (text: string): boolean =>
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(text) &&
  !text.startsWith('0000') &&
  !Number.isNaN(Date.parse(text)) &&
  new Date(text).toISOString() === text

export function decodeCursor(text: string, digest: string): Cursor {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'))
  } catch {
    throw validationError('cursor', 'is not a cursor this API issued')
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 4 ||
    (parsed[0] !== 'n' && parsed[0] !== 'p') ||
    typeof parsed[1] !== 'string' ||
    !isIssuedTimestamp(parsed[1]) ||
    typeof parsed[2] !== 'string' ||
    !isUuid(parsed[2])
  ) {
    throw validationError('cursor', 'is not a cursor this API issued')
  }
  if (parsed[3] !== digest)
    throw validationError('cursor', 'was issued for other filters: repeat the same filters with the cursor')
  return {
    direction: parsed[0] === 'n' ? 'next' : 'prev',
    createdAt: new Date(parsed[1]).toISOString(),
    uuid: parsed[2],
  }
}

/**
 * Turns the rows fetched for a page (one more than `perPage`, in the direction of travel) into the page
 * in newest-first order and the cursors either side of it.
 */
export function pageFrom<T extends { created_at: Date; uuid: string }>(
  rows: T[],
  perPage: number,
  cursor: Cursor | null,
  digest: string,
): { data: T[]; next_cursor: string | null; prev_cursor: string | null } {
  const more = rows.length > perPage
  const page = rows.slice(0, perPage)
  if (cursor?.direction === 'prev') page.reverse()
  const first = page[0]
  const last = page[page.length - 1]
  const at = (row: T | undefined, direction: Cursor['direction']) =>
    row ? encodeCursor({ direction, createdAt: row.created_at.toISOString(), uuid: row.uuid }, digest) : null
  // Going forward, there is a previous page when we came from a cursor; going back, a next page always.
  const hasNext = cursor?.direction === 'prev' ? true : more
  const hasPrev = cursor === null ? false : cursor.direction === 'next' ? true : more
  return {
    data: page,
    next_cursor: hasNext ? at(last, 'next') : null,
    prev_cursor: hasPrev ? at(first, 'prev') : null,
  }
}

/** The body of a list operation: the page's rows as their views, and the meta with the cursors either side. */
export function cursorPage<T extends { created_at: Date; uuid: string }, V>(
  rows: T[],
  options: { perPage: number; cursor: Cursor | null; digest: string; path: string },
  view: (row: T) => V,
) {
  const page = pageFrom(rows, options.perPage, options.cursor, options.digest)
  return {
    data: page.data.map(view),
    meta: {
      per_page: options.perPage,
      next_cursor: page.next_cursor,
      prev_cursor: page.prev_cursor,
      path: options.path,
    },
  }
}

/**
 * A list operation's answer: the query's cursor checked against the digest of its filters, a page of rows
 * fetched (one more than a page, to learn whether another follows), and their views with the cursors.
 */
export async function listAnswer<T extends { created_at: Date; uuid: string }, V>(
  query: { cursor?: string; per_page?: number },
  options: { digest: string; path: string },
  fetch: (cursor: Cursor | null, limit: number) => Promise<T[]>,
  view: (row: T) => V,
) {
  const perPage = query.per_page ?? 25
  const cursor: Cursor | null = query.cursor ? decodeCursor(query.cursor, options.digest) : null
  const rows = await fetch(cursor, perPage + 1)
  return cursorPage(rows, { perPage, cursor, digest: options.digest, path: options.path }, view)
}

/** The page meta every list operation answers with. */
export function registerPagination(app: FastifyInstance): void {
  app.addSchema(CursorMeta)
}

/**
 * A list's query for an export: every matching row, so no page size; a cursor names a place in a paged list
 * and an export has none, so one is refused rather than silently ignored.
 */
export function exportQuery<Q extends { cursor?: string; per_page?: number }>(
  query: Q,
): Omit<Q, 'cursor' | 'per_page'> {
  const { cursor, per_page: _perPage, ...filters } = query
  if (cursor !== undefined)
    throw validationError('cursor', 'does not apply to a CSV export, which has every matching row')
  return filters
}

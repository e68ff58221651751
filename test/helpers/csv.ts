import assert from 'node:assert/strict'
import { parse } from 'csv-parse/sync'
import { type CallOptions, call, type TestContext } from './harness.ts'

/** A CSV export as a client reads it: the answer checked to be CSV, parsed with an independent RFC 4180 parser. */
export async function getCsv(ctx: TestContext, url: string, options: CallOptions = {}) {
  const res = await call(ctx, 'GET', url, undefined, {
    ...options,
    headers: { accept: 'text/csv', ...options.headers },
  })
  assert.equal(res.statusCode, 200, res.body)
  assert.match(String(res.headers['content-type']), /^text\/csv; charset=utf-8$/)
  assert.match(String(res.headers['content-disposition']), /^attachment; filename="[a-z-]+\.csv"$/)
  // RFC 4180: every record ends with CRLF, the last one included.
  assert.ok(res.body.endsWith('\r\n'), 'the last record ends with CRLF')
  const records: string[][] = parse(res.body, { record_delimiter: '\r\n' })
  const [header, ...rows] = records
  assert.ok(header, 'a header row')
  return {
    header,
    rows,
    body: res.body,
    objects: rows.map((row) => Object.fromEntries(header.map((h, i) => [h, row[i]]))),
  }
}

/** Every row of a JSON list, following next_cursor to the end. */
export async function allPages<T = Record<string, unknown>>(
  ctx: TestContext,
  url: string,
  options: CallOptions = {},
): Promise<T[]> {
  const rows: T[] = []
  let cursor: string | null = null
  do {
    const sep = url.includes('?') ? '&' : '?'
    const res = await call(
      ctx,
      'GET',
      `${url}${sep}per_page=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      undefined,
      options,
    )
    assert.equal(res.statusCode, 200, res.body)
    const page = res.json<{ data: T[]; meta: { next_cursor: string | null } }>()
    rows.push(...page.data)
    cursor = page.meta.next_cursor
  } while (cursor)
  return rows
}

/**
 * What a JSON field's value is in the CSV, written independently of the service's own cell writer: text as
 * is, prefixed with ' when a spreadsheet would take it for a formula; numbers and booleans as their text;
 * objects as JSON; null empty.
 */
export function expectedCell(value: unknown): string {
  if (value === null || value === undefined) return ''
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value)
  if (typeof value === 'number' || typeof value === 'boolean') return text
  return ['=', '+', '-', '@', '\t', '\r'].includes(text[0] ?? '') ? `'${text}` : text
}

/** Checks that the CSV rows are the JSON rows, in the same order, column by column. */
export function assertSameRows(csv: { header: string[]; rows: string[][] }, json: Record<string, unknown>[]) {
  assert.equal(csv.rows.length, json.length, 'as many CSV rows as JSON rows')
  csv.rows.forEach((row, i) => {
    const expected = csv.header.map((column) => expectedCell(json[i]?.[column]))
    assert.deepEqual(row, expected, `row ${i} (${String(json[i]?.uuid)})`)
  })
}

/**
 * Exports `url` as CSV and reads every page of its JSON list, both `as` the caller; checks the CSV's header is
 * `columns` (the columns docs/API.md lists for the export, in its order), the list holds `count` rows, and the
 * CSV rows are the list's rows, each as `toRow` makes it. Gives both back.
 */
export async function assertExportOfList(
  ctx: TestContext,
  url: string,
  {
    as,
    columns,
    count,
    toRow = (row) => row,
  }: {
    as: CallOptions['as']
    columns: string
    count: number
    toRow?: (row: Record<string, unknown>) => Record<string, unknown>
  },
) {
  const json = (await allPages(ctx, url, { as })).map(toRow)
  const csv = await getCsv(ctx, url, { as })
  assert.equal(csv.header.join(','), columns)
  assert.equal(json.length, count)
  assertSameRows(csv, json)
  return { csv, json }
}

import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import Negotiator from 'negotiator'
import type { TSchema } from 'typebox'
import { Ref } from './schemas.ts'

/** The media types a list operation answers with; JSON first, so `*\/*` and no Accept mean JSON. */
const LIST_MEDIA_TYPES = ['application/json', 'text/csv']

/** Whether the caller asked for CSV (`Accept: text/csv`, possibly among others with a lower q). */
export const wantsCsv = (request: FastifyRequest): boolean =>
  new Negotiator(request).mediaType(LIST_MEDIA_TYPES) === 'text/csv'

/** Characters a spreadsheet takes as the start of a formula (OWASP's list: `=`, `+`, `-`, `@`, tab, CR). */
const FORMULA_START = /^[=+\-@\t\r]/

/**
 * A text cell a spreadsheet would evaluate, neutralised as spreadsheet tools expect: prefixed with a single
 * quote, which makes the cell text (`=HYPERLINK(…)` is shown as `'=HYPERLINK(…)`). Numbers are left as
 * numbers: a negative amount stays `-500`.
 */
const escapeFormula = (text: string): string => (FORMULA_START.test(text) ? `'${text}` : text)

/** A CSV column: its header and how a row's cell is read from the JSON view. */
export interface CsvColumn<V> {
  header: string
  value(view: V): unknown
}

/**
 * Columns that are the view's own fields, in the order given, under their JSON names: an object (metadata,
 * requisites) is written as its JSON text, `null` as an empty cell.
 */
export const fieldColumns = <V>(fields: readonly (keyof V & string)[]): CsvColumn<V>[] =>
  fields.map((field) => ({ header: field, value: (view: V) => view[field] }))

/** One cell's text: strings escaped against formula injection, dates ISO, objects as JSON, null empty. */
function cellOf(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'string') return escapeFormula(value)
  // An integer is written with toFixed: String() would also put it in V8's number-to-string cache, which
  // lives in the old generation, so an export's amounts would outlive it there.
  if (typeof value === 'number') return Number.isInteger(value) ? value.toFixed(0) : String(value)
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  // A timestamp read straight from a row: ISO 8601 UTC with milliseconds, as the API writes it.
  if (value instanceof Date) return value.toISOString()
  return escapeFormula(JSON.stringify(value))
}

/** A field RFC 4180 quotes: one holding a quote, a comma or a line break. */
const NEEDS_QUOTES = /[",\r\n]/
const QUOTE = /"/g

/** One field of a record: quoted, its quotes doubled, where RFC 4180 needs it. */
const field = (text: string): string => (NEEDS_QUOTES.test(text) ? `"${text.replace(QUOTE, '""')}"` : text)

/**
 * One record of the CSV, with its CRLF (RFC 4180: after every record, the last one included), written cell
 * by cell into one string with no array per record or per cell. An export writes millions: garbage per row
 * (csv-stringify made 8 KB) fills the young generation sooner, and each scavenge promotes the rows then alive.
 */
function record<V>(columns: CsvColumn<V>[], row: V): string {
  let line = ''
  for (let i = 0; i < columns.length; i++) {
    if (i > 0) line += ','
    line += field(cellOf((columns[i] as CsvColumn<V>).value(row)))
  }
  return `${line}\r\n`
}

/**
 * The CSV text of rows in batches, header first. Each batch is turned into one piece of text in one
 * synchronous step, so its row objects are garbage before the answer waits on the client.
 */
function csvStream<V>(columns: CsvColumn<V>[], batches: AsyncIterable<V[]>): Readable {
  async function* pieces() {
    yield `${columns.map((column) => field(column.header)).join(',')}\r\n`
    for await (const batch of batches) {
      let text = ''
      for (const row of batch) text += record(columns, row)
      yield text
    }
  }
  return Readable.from(pieces(), { objectMode: false })
}

/**
 * Answers with every row of `batches` as a CSV attachment, streamed: rows are read batch by batch while the
 * answer is written, so memory stays flat whatever the number of rows. The first batch is read before the
 * status is sent: a database that is down answers 503 like any other request.
 */
export async function sendCsv<V>(
  reply: FastifyReply,
  name: string,
  columns: CsvColumn<V>[],
  batches: AsyncIterable<V[]>,
): Promise<FastifyReply> {
  const iterator = batches[Symbol.asyncIterator]()
  const first = await iterator.next()
  async function* all() {
    for (let next = first; !next.done; next = await iterator.next()) yield next.value
  }
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${name}.csv"`)
    .send(csvStream(columns, all()))
}

/**
 * The 200 answer of a list operation that also exports CSV: the JSON page, or with `Accept: text/csv` every
 * matching row, no pagination, in the columns `csvColumns` lists.
 */
export function jsonOrCsv(page: TSchema, description: string, csvColumns: readonly string[]) {
  return {
    description: `${description} With \`Accept: text/csv\`: every matching row as CSV (no pagination; the same filters), streamed; see the guide's Exports section.`,
    headers: {
      'Content-Disposition': {
        type: 'string',
        description: 'On a CSV answer: `attachment; filename="<list>.csv"`.',
      },
    },
    content: {
      'application/json': { schema: Ref(page) },
      'text/csv': {
        schema: {
          type: 'string',
          description: `RFC 4180 CSV with a header row; columns in this order: ${csvColumns.join(', ')}. Amounts in minor units, timestamps ISO 8601 UTC, objects as JSON text, a cell starting with = + - @ prefixed with '.`,
        },
      },
    },
  }
}

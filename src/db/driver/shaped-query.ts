import { createRequire } from 'node:module'
import pg from 'pg'

/**
 * A named statement's execution through node-postgres, cheaper on the client's CPU for what the service sends
 * most: the same few statements, over and over.
 *
 * - node-postgres asks for the result's description (Describe) on every execution, and on every
 *   RowDescription it builds the row parsers and an empty row to copy (in the profile of a get by uuid, 17 %
 *   of the server's CPU). A statement's result columns cannot change while it stays prepared (PostgreSQL
 *   refuses to run it, "cached plan must not change result type", and `prepared.ts` renames it), so once a
 *   statement's columns are known on a connection, its row shape is kept for that connection: the parsers
 *   and a function that builds the row object in one literal, with the columns in their order.
 * - Once the shape is known, the Describe is no longer sent on that connection, and PostgreSQL describes
 *   nothing.
 * - The query is made from its text and values rather than a config object, which node-postgres copies
 *   property by property.
 *
 * Rows come out as node-postgres makes them: the same keys in the same order, each value parsed by the
 * client's type parsers, null as null.
 */

/** The parts of a node-postgres field description that decide how its value is read. */
interface Field {
  name: string
  dataTypeID: number
  format: string
}

type Parser = (value: string) => unknown

/** node-postgres' Result, as much of it as is used here. */
interface PgResult {
  fields: Field[]
  _parsers: Parser[] | undefined
  _prebuiltEmptyResultObject: unknown
  addFields(fields: Field[]): void
  parseRow(raw: (string | null)[]): Record<string, unknown>
}
type PgResultClass = new (rowMode: string | undefined, types: unknown) => PgResult

/** node-postgres' Connection, as much of it as a prepared execution writes to. */
interface PgConnection {
  parsedStatements: Record<string, string>
  submittedNamedStatements: Record<string, string>
  parse(message: { text: string; name: string; types?: unknown }): void
  bind(message: {
    portal: string
    statement: string
    values: unknown[]
    binary?: boolean
    valueMapper: unknown
  }): void
  close(message: { type: 'S'; name: string }): void
  execute(message: { portal: string; rows?: number }): void
  sync(): void
}

const require = createRequire(import.meta.url)
const Result = require('pg/lib/result.js') as PgResultClass
const { prepareValue } = require('pg/lib/utils.js') as {
  prepareValue: (value: unknown, index: number) => unknown
}

/** 0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z: the years toISOString writes as PostgreSQL reads them. */
const ISO_FROM = -62_135_596_800_000
const ISO_UNTIL = 253_402_300_800_000

/**
 * node-postgres' value mapping, but a Date goes as its ISO 8601 text in UTC, which V8 writes natively, instead
 * of node-postgres' local-time text built piece by piece (`dateToString`: 3 % of what a create allocated). Every
 * timestamp column is timestamptz, so both name the same instant.
 */
export const mapValue = (value: unknown, index: number): unknown => {
  if (value instanceof Date) {
    const time = value.getTime()
    if (time >= ISO_FROM && time < ISO_UNTIL) return value.toISOString()
  }
  return prepareValue(value, index)
}

interface Shape {
  fields: Field[]
  parsers: Parser[]
  /** The row from its raw values; null when the row keeps node-postgres' own building (binary values). */
  build: ((raw: (string | null)[]) => Record<string, unknown>) | null
  /** node-postgres' empty row, for its own building. */
  prebuilt: unknown
}

/**
 * Each connection's statements' result shapes, learned from the connection's own Describe: a shape holds for
 * as long as the statement stays prepared on that connection. (Another connection may prepare the same text
 * after a migration changed its columns: shapes are never shared between connections.)
 */
const shapesByConnection = new WeakMap<object, Map<string, Shape>>()
const shapesOf = (connection: object): Map<string, Shape> => {
  let shapes = shapesByConnection.get(connection)
  if (!shapes) {
    shapes = new Map()
    shapesByConnection.set(connection, shapes)
  }
  return shapes
}

const sameFields = (a: Field[], b: Field[]) => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as Field
    const y = b[i] as Field
    if (x.name !== y.name || x.dataTypeID !== y.dataTypeID || x.format !== y.format) return false
  }
  return true
}

type BuilderFactory = (parsers: Parser[]) => (raw: (string | null)[]) => Record<string, unknown>
/** The code of a row builder, by its column names: generated once per list of names in the process. */
const factories = new Map<string, BuilderFactory>()

/** One object literal per shape: V8 then gives every row the same hidden class, with its fields in place. */
function rowBuilder(fields: Field[], parsers: Parser[]): Shape['build'] {
  if (fields.some((f) => f.format === 'binary' || f.name === '__proto__')) return null
  const names = fields.map((f) => f.name)
  const key = JSON.stringify(names)
  let factory = factories.get(key)
  if (!factory) {
    const body = names.map(
      (name, i) => `${JSON.stringify(name)}: (v = raw[${i}]) === null ? null : p[${i}](v)`,
    )
    factory = new Function(
      'p',
      `return function row(raw) { let v; return { ${body.join(', ')} } }`,
    ) as BuilderFactory
    factories.set(key, factory)
  }
  return factory(parsers)
}

class ShapedResult extends Result {
  readonly statement: string
  /** The shapes of the connection the statement runs on (set as it is sent). */
  shapes: Map<string, Shape> | null = null
  build: Shape['build'] = null

  constructor(statement: string) {
    super(undefined, undefined)
    this.statement = statement
  }

  /** Takes the statement's known shape. */
  adopt(shape: Shape): void {
    this.fields = shape.fields
    this._parsers = shape.parsers
    this._prebuiltEmptyResultObject = shape.prebuilt
    this.build = shape.build
  }

  override addFields(fields: Field[]): void {
    const known = this.shapes?.get(this.statement)
    if (known && sameFields(known.fields, fields)) {
      this.adopt(known)
      return
    }
    super.addFields(fields)
    const parsers = this._parsers ?? []
    const shape = {
      fields,
      parsers,
      build: rowBuilder(fields, parsers),
      prebuilt: this._prebuiltEmptyResultObject,
    }
    this.shapes?.set(this.statement, shape)
    this.build = shape.build
  }

  override parseRow(raw: (string | null)[]): Record<string, unknown> {
    return this.build ? this.build(raw) : super.parseRow(raw)
  }
}

/** The internals of node-postgres' Query that an execution without Describe sets itself. */
interface QueryInternals {
  name: string
  values: unknown[] | undefined
  _result: PgResult
  _results: PgResult
  _accumulateRows: boolean
  portal: string
  binary?: boolean
  hasBeenParsed(connection: PgConnection): boolean
  handleError(error: unknown, connection: PgConnection): void
}

const basePrepare = (pg.Query.prototype as unknown as { prepare(connection: PgConnection): void }).prepare

export class ShapedQuery extends pg.Query {
  readonly #statement: string
  readonly #result: ShapedResult

  constructor(name: string, text: string, values: unknown[]) {
    // A text and values (not a config object) spare node-postgres its copy of the config.
    super(text, values)
    const self = this as unknown as QueryInternals
    self.name = name
    this.#statement = name
    this.#result = new ShapedResult(name)
    self._result = this.#result
    self._results = this.#result
  }

  /**
   * Parse (once per connection), Bind, Describe, Execute, Sync: node-postgres' own sequence, without the
   * Describe once this statement's shape is known (its rows are then read with that shape).
   */
  prepare(connection: PgConnection): void {
    const self = this as unknown as QueryInternals
    const shapes = shapesOf(connection)
    this.#result.shapes = shapes
    const known = shapes.get(this.#statement)
    if (!known || !self.hasBeenParsed(connection)) {
      // node-postgres' sequence, with the Describe.
      basePrepare.call(this, connection)
      return
    }
    try {
      connection.bind({
        portal: self.portal,
        statement: this.#statement,
        values: (self.values ?? []) as unknown[],
        binary: self.binary,
        valueMapper: mapValue,
      })
    } catch (error) {
      // Values that cannot be sent: nothing reached the server but this Sync, and the statement stays
      // prepared for the next execution.
      connection.sync()
      self.handleError(error, connection)
      return
    }
    // What the RowDescription would have set: the shape, and rows kept for the callback.
    this.#result.adopt(known)
    self._accumulateRows = true
    connection.execute({ portal: self.portal })
    connection.sync()
  }
}

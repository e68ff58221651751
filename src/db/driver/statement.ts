import { type Compilable, CompiledQuery, type Selectable, type Updateable } from 'kysely'
import type { Executor } from '../index.ts'
import type { Database } from '../types.ts'
import { isPrepared } from './mode.ts'

/**
 * Stands for the value at `index` in the one extra build that finds where each value goes in a statement's
 * parameters. Kysely passes any object that is not an expression through as a parameter, as it does a value.
 */
class Slot {
  constructor(readonly index: number) {}
}

/** Where each parameter of a statement's text comes from: the caller's value at an index, or a constant. */
type Source = { value: number } | { constant: unknown }

/** A statement's text and its parameters' sources; null where Kysely's text depends on the values. */
type Shape = { text: string; sources: readonly Source[] } | null

/** Statements kept, at most; past it they are built on every call, as before. */
const MAX_SHAPES = 1_000
const shapes = new Map<string, Shape>()

/** A value Kysely sends as a parameter as it is (an object may be an SQL expression, a function builds one). */
const isPlainValue = (value: unknown): boolean =>
  value === null ||
  (typeof value !== 'object' && typeof value !== 'function') ||
  value instanceof Date ||
  Buffer.isBuffer(value)

/**
 * The shape of `built` (Kysely's statement of the caller's values) given `probe` (the same statement built with
 * a Slot for each value): the same text, each Slot where its value was, every other parameter the same
 * constant in both. Otherwise Kysely's text depends on the values themselves (an `is null`, a list's length),
 * and the statement is not kept.
 */
function shapeOf(built: CompiledQuery, probe: CompiledQuery, values: readonly unknown[]): Shape {
  if (built.sql !== probe.sql || built.parameters.length !== probe.parameters.length) return null
  const sources: Source[] = []
  for (let i = 0; i < probe.parameters.length; i++) {
    const stand = probe.parameters[i]
    const actual = built.parameters[i]
    if (stand instanceof Slot) {
      if (!Object.is(actual, values[stand.index])) return null
      sources.push({ value: stand.index })
    } else {
      if (!Object.is(actual, stand) || !isPlainValue(actual)) return null
      sources.push({ constant: actual })
    }
  }
  return { text: built.sql, sources }
}

/**
 * The statement `build` makes of `values`: Kysely builds it for the first call with a `key`, and every later
 * call with that key reuses its text with its own values as the parameters. Building a statement's tree and
 * compiling it to text on every call was a tenth of the API's CPU in a payment's and a refund's requests.
 *
 * `build` must make its statement of its arguments alone; anything else that shapes it (which columns an
 * update sets, how many rows an insert has) belongs in `key`. The first call checks what it can: it builds the
 * statement a second time with a stand-in for each value and keeps it only if the text is the same and each
 * stand-in is where its value was. A statement given a value that is not a plain one (an array, an object, an
 * SQL expression) is built by Kysely every time, as is every statement of an executor with a Kysely plugin, and
 * every statement when the layer is off (`mode.ts`).
 */
export function compiledOnce<V extends unknown[], O>(
  db: Executor,
  key: string,
  given: readonly [...V],
  build: (...values: V) => Compilable<O>,
): CompiledQuery<O> {
  const values = given as V
  // A plugin may rewrite any statement as Kysely compiles it (the tests inject database failures with one), and
  // a kept text would pass it by: with one, every statement is built and compiled. So it is with the layer off.
  if (!isPrepared(db) || db.getExecutor().plugins.length > 0) return build(...values).compile()
  const shape = shapes.get(key)
  const plain = values.every(isPlainValue)
  if (shape && plain) {
    const parameters = shape.sources.map((s) => ('value' in s ? values[s.value] : s.constant))
    return CompiledQuery.raw(shape.text, parameters) as CompiledQuery<O>
  }
  const built = build(...values).compile()
  if (shape !== undefined || !plain) return built
  if (shapes.size < MAX_SHAPES) {
    const slots = values.map((_, index) => new Slot(index)) as unknown as V
    shapes.set(key, shapeOf(built, build(...slots).compile(), values))
  }
  return built
}

/**
 * `UPDATE <table> SET … WHERE uuid = … RETURNING *` of the columns `changes` gives a value (an undefined one is
 * left as it is), kept once per table and set of columns (see compiledOnce); the row as it is now.
 */
export async function updateByUuid<T extends keyof Database & string>(
  db: Executor,
  table: T,
  uuid: string,
  changes: Updateable<Database[T]>,
): Promise<Selectable<Database[T]>> {
  const fields = changes as Record<string, unknown>
  const columns = Object.keys(fields).filter((column) => fields[column] !== undefined)
  const compiled = compiledOnce(
    db,
    `${table}.update:${columns.join(',')}`,
    [uuid, ...columns.map((column) => fields[column])],
    (id, ...values) =>
      // biome-ignore lint/suspicious/noExplicitAny: the table and its columns are the caller's, checked by its signature
      (db as any)
        .updateTable(table)
        .set(Object.fromEntries(columns.map((column, i) => [column, values[i]])))
        .where('uuid', '=', id)
        .returningAll(),
  )
  const row = (await db.executeQuery(compiled)).rows[0]
  if (!row) throw new Error(`UPDATE ${table}: no row ${uuid}`)
  return row as Selectable<Database[T]>
}

/** Whether `key`'s statement is kept (for tests). */
export const isKept = (key: string): boolean => Boolean(shapes.get(key))

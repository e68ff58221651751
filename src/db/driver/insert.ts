import { CompiledQuery, type Insertable, type Selectable } from 'kysely'
import type { Executor } from '../index.ts'
import type { Database } from '../types.ts'
import { isPrepared } from './mode.ts'

/**
 * The text of `compiled`, the first statement of its shape Kysely built, if its parameters are `values`
 * unchanged and in order; otherwise null, and every statement of that shape goes through Kysely.
 */
const checkedText = (compiled: CompiledQuery, values: readonly unknown[]): string | null =>
  compiled.parameters.length === values.length && compiled.parameters.every((p, i) => p === values[i])
    ? compiled.sql
    : null

/** A value Kysely sends as a parameter as it is (an object may be an SQL expression, a function builds one). */
const isPlainValue = (value: unknown): boolean =>
  value === null ||
  (typeof value !== 'object' && typeof value !== 'function') ||
  value instanceof Date ||
  Buffer.isBuffer(value)

/** Which columns an insert reads back: all of them, or the ones named. */
type Returning = '*' | readonly string[]

/** Kysely's `INSERT … RETURNING` of the row. */
const insertQuery = <T extends keyof Database & string>(
  db: Executor,
  table: T,
  row: Insertable<Database[T]>,
  returning: Returning,
) => {
  const query = db.insertInto(table).values(row)
  return returning === '*'
    ? query.returningAll()
    : // biome-ignore lint/suspicious/noExplicitAny: the column names are the caller's, checked by its signature
      query.returning(returning as any)
}

const viaKysely = <T extends keyof Database & string>(
  db: Executor,
  table: T,
  row: Insertable<Database[T]>,
  returning: Returning,
): Promise<unknown> => insertQuery(db, table, row, returning).executeTakeFirstOrThrow()

/** An insert's shape: the columns given a value, in order, and the columns returned; with its text. */
interface InsertShape {
  columns: readonly string[]
  returning: Returning
  text: string | null
}

/** Insert shapes by table; a table has as many as the code has distinct inserts into it, and at most this. */
const MAX_SHAPES_PER_TABLE = 64
const insertShapes = new Map<string, InsertShape[]>()

/** Whether `row` and `returning` have the shape: compared column by column, nothing built for it. */
function fits(shape: InsertShape, row: Record<string, unknown>, returning: Returning): boolean {
  if (shape.returning !== returning) {
    if (shape.returning === '*' || returning === '*' || shape.returning.length !== returning.length)
      return false
    for (let i = 0; i < returning.length; i++) if (shape.returning[i] !== returning[i]) return false
  }
  let i = 0
  for (const column in row) {
    if (!Object.hasOwn(row, column) || row[column] === undefined) continue
    if (shape.columns[i++] !== column) return false
  }
  return i === shape.columns.length
}

/**
 * `INSERT INTO <table> (<columns>) VALUES (…) RETURNING <returning>` of one row: the statement Kysely builds,
 * built once per table, set of columns and returned columns, then reused with the row's values as its
 * parameters (a hot insert's text was a tenth of its CPU time, built anew every time; the row's shape is then
 * matched column by column, as building a key of its 36 column names was a tenth of what a create allocated).
 * A column whose value is undefined is left out, as Kysely leaves it out. The first build checks that Kysely
 * passes the values through unchanged and in column order, and a row with a value that is not a plain one (an
 * SQL expression, say) goes through Kysely, as does every insert when the layer is off (`mode.ts`).
 */
async function insertOne<T extends keyof Database & string>(
  db: Executor,
  table: T,
  row: Insertable<Database[T]>,
  returning: Returning,
): Promise<unknown> {
  if (!isPrepared(db)) return viaKysely(db, table, row, returning)
  const fields = row as Record<string, unknown>
  const values: unknown[] = []
  let plain = true
  for (const column in fields) {
    const value = fields[column]
    // Own columns only, as Kysely reads them (Object.keys).
    if (value === undefined || !Object.hasOwn(fields, column)) continue
    values.push(value)
    plain &&= isPlainValue(value)
  }
  if (!plain) return viaKysely(db, table, row, returning)
  let shapes = insertShapes.get(table)
  if (!shapes) {
    shapes = []
    insertShapes.set(table, shapes)
  }
  let shape: InsertShape | undefined
  for (const known of shapes)
    if (fits(known, fields, returning)) {
      shape = known
      break
    }
  if (!shape) {
    shape = {
      columns: Object.keys(fields).filter((column) => fields[column] !== undefined),
      returning: returning === '*' ? '*' : [...returning],
      text: checkedText(insertQuery(db, table, row, returning).compile(), values),
    }
    if (shapes.length < MAX_SHAPES_PER_TABLE) shapes.push(shape)
  }
  if (shape.text === null) return viaKysely(db, table, row, returning)
  const { rows } = await db.executeQuery(CompiledQuery.raw(shape.text, values))
  const inserted = rows[0]
  if (!inserted) throw new Error(`INSERT INTO ${table} returned no row`)
  return inserted
}

/**
 * Inserts one row and reads back only the columns named (see insertOne): for a caller that knows the rest of
 * the row already, as the values it inserted.
 */
export const insertReturning = async <
  T extends keyof Database & string,
  C extends keyof Selectable<Database[T]> & string,
>(
  db: Executor,
  table: T,
  row: Insertable<Database[T]>,
  returning: readonly C[],
): Promise<Pick<Selectable<Database[T]>, C>> =>
  (await insertOne(db, table, row, returning)) as Pick<Selectable<Database[T]>, C>

/** Inserts one row and reads the whole row back (see insertOne). */
export const insertReturningAll = async <T extends keyof Database & string>(
  db: Executor,
  table: T,
  row: Insertable<Database[T]>,
): Promise<Selectable<Database[T]>> => (await insertOne(db, table, row, '*')) as Selectable<Database[T]>

/** `SELECT * FROM <table> WHERE <column> = $1` texts by table and column; null where Kysely's took more. */
const selectTexts = new Map<string, string | null>()

const selectQuery = <T extends keyof Database & string>(
  db: Executor,
  table: T,
  column: keyof Selectable<Database[T]> & string,
  value: string,
) =>
  // biome-ignore lint/suspicious/noExplicitAny: the table and column are the caller's, checked by its signature
  (db as any).selectFrom(table).selectAll().where(column, '=', value)

/**
 * The row of `table` whose `column` is `value` (a key: at most one row), or undefined: the statement Kysely
 * builds, built once per table and column and reused with the value as its one parameter (building a get's
 * statement anew was 15 % of its CPU). The first build checks that the value is the statement's only parameter;
 * if not, every call goes through Kysely, as every call does when the layer is off (`mode.ts`).
 */
export async function selectOneBy<T extends keyof Database & string>(
  db: Executor,
  table: T,
  column: keyof Selectable<Database[T]> & string,
  value: string,
): Promise<Selectable<Database[T]> | undefined> {
  if (!isPrepared(db)) return selectQuery(db, table, column, value).executeTakeFirst()
  const key = `${table}.${column}`
  let text = selectTexts.get(key)
  if (text === undefined) {
    text = checkedText(selectQuery(db, table, column, value).compile(), [value])
    selectTexts.set(key, text)
  }
  if (text === null) return selectQuery(db, table, column, value).executeTakeFirst()
  const { rows } = await db.executeQuery<Selectable<Database[T]>>(CompiledQuery.raw(text, [value]))
  return rows[0]
}

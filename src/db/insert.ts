import { CompiledQuery, type Insertable, type Selectable } from 'kysely'
import type { Executor } from './index.ts'
import type { Database } from './types.ts'

/**
 * Statement texts by their shape (an insert's table, columns and returned columns; a select's table and column);
 * null where Kysely's statement did not take the values as given.
 */
const texts = new Map<string, string | null>()

/**
 * Keeps the text of `compiled`, the first statement of shape `key` Kysely built, and returns it; or keeps and
 * returns null if its parameters are not `values`, unchanged and in order, so that every statement of that
 * shape goes through Kysely.
 */
const remember = (key: string, compiled: CompiledQuery, values: readonly unknown[]): string | null => {
  const same =
    compiled.parameters.length === values.length && compiled.parameters.every((p, i) => p === values[i])
  const text = same ? compiled.sql : null
  texts.set(key, text)
  return text
}

/** A value Kysely sends as a parameter as it is (an object may be an SQL expression, a function builds one). */
const isPlainValue = (value: unknown): boolean =>
  value === null ||
  (typeof value !== 'object' && typeof value !== 'function') ||
  value instanceof Date ||
  Buffer.isBuffer(value)

/** Which columns an insert reads back: all of them, or the ones named. */
type Returning = '*' | readonly string[]

const viaKysely = async <T extends keyof Database & string>(
  db: Executor,
  table: T,
  row: Insertable<Database[T]>,
  returning: Returning,
): Promise<unknown> => {
  const query = db.insertInto(table).values(row)
  return returning === '*'
    ? query.returningAll().executeTakeFirstOrThrow()
    : // biome-ignore lint/suspicious/noExplicitAny: the column names are the caller's, checked by its signature
      query.returning(returning as any).executeTakeFirstOrThrow()
}

const compile = <T extends keyof Database & string>(
  db: Executor,
  table: T,
  row: Insertable<Database[T]>,
  returning: Returning,
) => {
  const query = db.insertInto(table).values(row)
  return returning === '*'
    ? query.returningAll().compile()
    : // biome-ignore lint/suspicious/noExplicitAny: as above
      query.returning(returning as any).compile()
}

/**
 * `INSERT INTO <table> (<columns>) VALUES (…) RETURNING <returning>` of one row: the statement Kysely builds,
 * built once per table, set of columns and returned columns, then reused with the row's values as its
 * parameters (a hot insert's text was a tenth of its CPU time, built anew every time). A column whose value is
 * undefined is left out, as Kysely leaves it out. The first build checks that Kysely passes the values through
 * unchanged and in column order, and a row with a value that is not a plain one (an SQL expression, say) goes
 * through Kysely.
 */
async function insertOne<T extends keyof Database & string>(
  db: Executor,
  table: T,
  row: Insertable<Database[T]>,
  returning: Returning,
): Promise<unknown> {
  const columns: string[] = []
  const values: unknown[] = []
  let plain = true
  for (const [column, value] of Object.entries(row)) {
    if (value === undefined) continue
    columns.push(column)
    values.push(value)
    plain &&= isPlainValue(value)
  }
  if (!plain) return viaKysely(db, table, row, returning)
  const key = `insert ${table}(${columns.join(',')}) ${returning === '*' ? '*' : returning.join(',')}`
  let text = texts.get(key)
  if (text === undefined) text = remember(key, compile(db, table, row, returning), values)
  if (text === null) return viaKysely(db, table, row, returning)
  const { rows } = await db.executeQuery(CompiledQuery.raw(text, values))
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
 * if not, every call goes through Kysely.
 */
export async function selectOneBy<T extends keyof Database & string>(
  db: Executor,
  table: T,
  column: keyof Selectable<Database[T]> & string,
  value: string,
): Promise<Selectable<Database[T]> | undefined> {
  const key = `select ${table}.${column}`
  let text = texts.get(key)
  if (text === undefined) text = remember(key, selectQuery(db, table, column, value).compile(), [value])
  if (text === null) return selectQuery(db, table, column, value).executeTakeFirst()
  const { rows } = await db.executeQuery<Selectable<Database[T]>>(CompiledQuery.raw(text, [value]))
  return rows[0]
}

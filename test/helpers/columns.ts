import type { Kysely, Selectable } from 'kysely'
import type { Db } from '../../src/db/index.ts'
import type { Database } from '../../src/db/types.ts'

/** The tables whose rows are named by a `uuid` column. */
type ByUuid = { [T in keyof Database]: 'uuid' extends keyof Database[T] ? T : never }[keyof Database]

/** One column of the row of `table` named `uuid` (which must exist), as it is stored now. */
export async function columnOf<T extends ByUuid, C extends keyof Selectable<Database[T]> & string>(
  db: Db,
  table: T,
  uuid: string,
  column: C,
): Promise<Selectable<Database[T]>[C]> {
  // Kysely cannot follow a column of a table that a type parameter names; the signature keeps the types.
  const row = await (db as unknown as Kysely<Record<string, Record<string, unknown>>>)
    .selectFrom(table as string)
    .select(column as string)
    .where('uuid', '=', uuid)
    .executeTakeFirstOrThrow()
  return (row as Record<string, unknown>)[column] as Selectable<Database[T]>[C]
}

import type { Kysely, Selectable } from 'kysely'
import type { Db } from '../../src/db/index.ts'
import type { Database } from '../../src/db/types.ts'

type Table = keyof Database
type Row<T extends Table> = Selectable<Database[T]>
type Column<T extends Table> = keyof Row<T> & string

/**
 * What the gateway recorded about one thing: the rows of `table` whose columns hold the values of `where`, in the
 * order of `orderBy`, with every column or those of `select`.
 */
export function rowsWhere<T extends Table, C extends Column<T> = Column<T>>(
  db: Db,
  table: T,
  where: Partial<Record<Column<T>, string>>,
  { orderBy = [], select }: { orderBy?: readonly Column<T>[]; select?: readonly C[] } = {},
): Promise<Pick<Row<T>, C>[]> {
  // One query for any table: the names are checked against the table above, not by the builder.
  const loose = db as unknown as Kysely<Record<string, Record<string, unknown>>>
  const from = loose.selectFrom(table as string)
  let query = select ? from.select(select as readonly string[]) : from.selectAll()
  for (const [column, value] of Object.entries(where)) query = query.where(column, '=', value)
  for (const column of orderBy) query = query.orderBy(column)
  return query.execute() as Promise<Pick<Row<T>, C>[]>
}

/** What the gateway recorded of each provider callback about a transaction, oldest first. */
export const providerCallbacks = (db: Db, transactionUuid: string) =>
  rowsWhere(db, 'provider_callbacks', { transaction_uuid: transactionUuid }, { orderBy: ['received_at'] })

/** What the gateway recorded of each provider callback about a payout, oldest first. */
export const payoutCallbacks = (db: Db, payoutUuid: string) =>
  rowsWhere(db, 'payout_callbacks', { payout_uuid: payoutUuid }, { orderBy: ['received_at', 'uuid'] })

/** How many rows `table` holds. */
export const rowCount = async (db: Db, table: keyof Database) =>
  Number(
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )

/** How many rows each of `tables` holds, in their order. */
export const rowCounts = (db: Db, tables: readonly (keyof Database)[]) =>
  Promise.all(tables.map((table) => rowCount(db, table)))

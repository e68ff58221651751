import type { CreateTableBuilder } from 'kysely'

/** A column's type as `addColumn` takes it: a name such as `'text'`, or an expression such as `TIMESTAMP`. */
type ColumnType = Parameters<CreateTableBuilder<string, string>['addColumn']>[1]

/**
 * Adds columns that are `NOT NULL` and nothing more, in the order they are named: `{ amount: 'bigint' }` is
 * `.addColumn('amount', 'bigint', (c) => c.notNull())`. For `$call` in a migration's `createTable`.
 */
export const requiredColumns =
  (columns: Record<string, ColumnType>) =>
  <TB extends string, C extends string>(table: CreateTableBuilder<TB, C>): CreateTableBuilder<TB, string> =>
    Object.entries(columns).reduce<CreateTableBuilder<TB, string>>(
      (built, [name, type]) => built.addColumn(name, type, (c) => c.notNull()),
      table,
    )

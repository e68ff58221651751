import { type CreateTableBuilder, type Kysely, sql } from 'kysely'

/**
 * What several migrations build their tables from. A migration is history, and what it made must never
 * change: neither may these. A table that needs something else writes its own columns rather than an edit here.
 */

/** How every table keeps a time: to the millisecond, with its zone. */
export const TIMESTAMP = sql`timestamptz(3)`

/**
 * A new table of a merchant's rows in one mode, begun with the columns every such table starts with: `uuid`
 * (its key), `merchant_uuid` (whose row it is) and `mode` (test or live).
 */
export const createOwnedTable = (db: Kysely<unknown>, table: string) =>
  db.schema
    .createTable(table)
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    .addColumn('merchant_uuid', 'uuid', (c) => c.notNull().references('merchants.uuid'))
    .addColumn('mode', 'text', (c) => c.notNull())

/**
 * A table of a merchant's settings, one row per merchant and `key` (a required text column), changed in place:
 * `merchant_uuid` and `key`, then the columns `columns` adds, then the required `updated_at`; its primary key
 * `<table>_pk` is (merchant_uuid, key).
 */
export async function createSettingsTable(
  db: Kysely<unknown>,
  table: string,
  key: string,
  columns: (table: CreateTableBuilder<string, string>) => CreateTableBuilder<string, string>,
): Promise<void> {
  await columns(
    db.schema
      .createTable(table)
      .addColumn('merchant_uuid', 'uuid', (c) => c.notNull().references('merchants.uuid'))
      .addColumn(key, 'text', (c) => c.notNull()),
  )
    .addColumn('updated_at', TIMESTAMP, (c) => c.notNull())
    .addPrimaryKeyConstraint(`${table}_pk`, ['merchant_uuid', key])
    .execute()
}

/**
 * A new table of rows that each belong to a row of another table, begun with its key `uuid` and `column`, the
 * required reference to the row it belongs to (`references`, such as `'payouts.uuid'`).
 */
export const createChildTable = (db: Kysely<unknown>, table: string, column: string, references: string) =>
  db.schema
    .createTable(table)
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    .addColumn(column, 'uuid', (c) => c.notNull().references(references))

/** `created_at` and `updated_at`, both required: the last columns of a table whose rows change. */
export const withTimestamps = <TB extends string, C extends string>(table: CreateTableBuilder<TB, C>) =>
  table
    .addColumn('created_at', TIMESTAMP, (c) => c.notNull())
    .addColumn('updated_at', TIMESTAMP, (c) => c.notNull())

/** A plain (b-tree) index `name` on `columns` of `table`. */
export const createIndex = (db: Kysely<unknown>, name: string, table: string, columns: string[]) =>
  db.schema.createIndex(name).on(table).columns(columns).execute()

/** The unique index `name` on `columns` of `table`, to be made partial with `.where` and made with `.execute()`. */
export const uniqueIndex = (db: Kysely<unknown>, name: string, table: string, columns: string[]) =>
  db.schema.createIndex(name).on(table).columns(columns).unique()

/**
 * The log of every word a provider sent about one kind of object (the `subject` column references it), as
 * received, and what it did: applied, or recorded as a duplicate or a stale one. Indexed by object, in the
 * order received.
 */
export async function createProviderLog(
  db: Kysely<unknown>,
  table: string,
  subject: { column: string; references: string; index: string },
): Promise<void> {
  await db.schema
    .createTable(table)
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    .addColumn('connector', 'text', (c) => c.notNull())
    .addColumn(subject.column, 'uuid', (c) => c.notNull().references(subject.references))
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('provider_reference', 'text')
    .addColumn('result', 'text', (c) => c.notNull().check(sql`result IN ('applied', 'duplicate', 'stale')`))
    .addColumn('from_status', 'text', (c) => c.notNull())
    .addColumn('to_status', 'text', (c) => c.notNull())
    .addColumn('received_at', TIMESTAMP, (c) => c.notNull())
    .execute()
  await createIndex(db, subject.index, table, [subject.column, 'received_at'])
}

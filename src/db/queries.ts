import type { Selectable, SelectQueryBuilder, UpdateQueryBuilder, UpdateResult } from 'kysely'
import type { Executor } from './index.ts'
import type { Scope } from './scope.ts'
import type { Database, Mode } from './types.ts'

/** The tables whose columns match `Columns`. */
type TablesWith<Columns> = {
  [T in keyof Database & string]: Database[T] extends Columns ? T : never
}[keyof Database & string]

/** A table of a merchant's rows in one mode. */
type ScopedTable = TablesWith<{ merchant_uuid: string; mode: Mode }>

/**
 * `SELECT * FROM <table> WHERE merchant_uuid = … AND mode = …`: the rows of `table` the scope may see, for the
 * caller to narrow further.
 */
export const selectScoped = <T extends ScopedTable>(
  db: Executor,
  table: T,
  scope: Scope,
): SelectQueryBuilder<Database, T, Selectable<Database[T]>> =>
  // biome-ignore lint/suspicious/noExplicitAny: the table is the caller's, checked by the signature
  (db as any)
    .selectFrom(table)
    .selectAll()
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)

/** A table whose rows can be revoked (`revoked_at`), once. */
type RevocableTable = TablesWith<{ revoked_at: unknown }>

/**
 * `UPDATE <table> SET revoked_at = at WHERE <column> = value AND revoked_at IS NULL`: revokes the rows that
 * are still live, for the caller to say what it reads back.
 */
export const revokeLive = <T extends RevocableTable>(
  db: Executor,
  table: T,
  column: keyof Selectable<Database[T]> & string,
  value: string,
  at: Date,
): UpdateQueryBuilder<Database, T, T, UpdateResult> =>
  // biome-ignore lint/suspicious/noExplicitAny: the table and column are the caller's, checked by the signature
  (db as any)
    .updateTable(table)
    .set({ revoked_at: at })
    .where(column, '=', value)
    .where('revoked_at', 'is', null)

/** A table of rows a worker checks with their provider (`next_check_at`) while their status is open. */
type CheckedTable = TablesWith<{ uuid: string; status: string; next_check_at: unknown }>

/** The statuses a row of `T` can be in. */
type StatusOf<T extends CheckedTable> = Database[T] extends { status: infer S } ? S : never

/**
 * The rows of `table` in one of the `open` statuses whose provider check is due, claimed until `leaseUntil`:
 * SKIP LOCKED keeps workers apart, and a worker that dies leaves its claims to be taken again once the lease
 * runs out.
 */
export const claimDueChecks = <T extends CheckedTable>(
  db: Executor,
  table: T,
  open: readonly StatusOf<T>[],
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<Selectable<Database[T]>[]> =>
  // biome-ignore lint/suspicious/noExplicitAny: the table is the caller's, checked by the signature
  (db as any)
    .updateTable(table)
    .set({ next_check_at: leaseUntil })
    .where(
      'uuid',
      'in',
      // biome-ignore lint/suspicious/noExplicitAny: as above
      (db as any)
        .selectFrom(table)
        .select('uuid')
        .where('status', 'in', open)
        .where('next_check_at', '<=', now)
        .orderBy('next_check_at')
        .limit(limit)
        .forUpdate()
        .skipLocked(),
    )
    .returningAll()
    .execute()

/** A checked table whose rows a connector account holds under its own reference. */
type HandedOverTable = CheckedTable &
  TablesWith<{ account_uuid: string | null; provider_reference: string | null }>

/**
 * `SELECT * FROM <table> WHERE account_uuid = … AND provider_reference = …`: the row a connector account has under
 * its reference `reference`, for the caller to lock or read.
 */
export const selectByAccountReference = <T extends HandedOverTable>(
  db: Executor,
  table: T,
  accountUuid: string,
  reference: string,
): SelectQueryBuilder<Database, T, Selectable<Database[T]>> =>
  // biome-ignore lint/suspicious/noExplicitAny: the table is the caller's, checked by the signature
  (db as any)
    .selectFrom(table)
    .selectAll()
    .where('account_uuid', '=', accountUuid)
    .where('provider_reference', '=', reference)

/**
 * Makes the check of the row in one of the `open` statuses that a connector account has under `reference` due at
 * `at`; whether there is one.
 */
export async function recheckOpen<T extends HandedOverTable>(
  db: Executor,
  table: T,
  open: readonly StatusOf<T>[],
  accountUuid: string,
  reference: string,
  at: Date,
): Promise<boolean> {
  // biome-ignore lint/suspicious/noExplicitAny: the table is the caller's, checked by the signature
  const { numUpdatedRows } = await (db as any)
    .updateTable(table)
    .set({ next_check_at: at })
    .where('account_uuid', '=', accountUuid)
    .where('provider_reference', '=', reference)
    .where('status', 'in', open)
    .executeTakeFirst()
  return Number(numUpdatedRows) > 0
}

import type { DialectAdapter } from 'kysely'

/**
 * How statements reach the database (DATABASE_DRIVER):
 *
 * - `prepared`: through this folder's layer under Kysely. Statements with parameters are prepared once per
 *   connection and their rows built with the shape learned (`prepared.ts`, `shaped-query.ts`, which reach into
 *   node-postgres' internals); on PostgreSQL, statements outside a transaction share a few pipelined
 *   connections; the hot statements' texts are built once (`insert.ts`, `statement.ts`).
 * - `plain`: Kysely's PostgresDialect over an ordinary pg.Pool, every statement built by Kysely and sent
 *   unnamed. `prepared.ts` and `shaped-query.ts` are then never loaded.
 *
 * Both give the same rows, the same types and the same errors.
 */
export const DATABASE_DRIVERS = ['prepared', 'plain'] as const
export type DatabaseDriver = (typeof DATABASE_DRIVERS)[number]

/** An executor: the Kysely instance, one of its transactions, or either with a plugin. */
interface Executing {
  getExecutor(): { readonly adapter: DialectAdapter }
}

/**
 * The dialect adapters of the Kysely instances the layer drives. An instance's transactions and its copies with
 * plugins keep its adapter, so the adapter tells, for any executor, which way its instance was made.
 */
const prepared = new WeakSet<DialectAdapter>()

/** Marks `db` (a Kysely instance just made over the layer's pool) as driven by the layer. */
export function markPrepared(db: Executing): void {
  prepared.add(db.getExecutor().adapter)
}

/**
 * Whether `db` runs over the layer: `insert.ts` and `statement.ts` keep their statements' texts only then, and
 * otherwise let Kysely build every statement.
 */
export const isPrepared = (db: Executing): boolean => prepared.has(db.getExecutor().adapter)

import type { PostgresPool, PostgresPoolClient } from 'kysely'
import { isDatabaseUnavailable } from './unavailable.ts'

/** How long one statement of a request may wait for the database by default (DATABASE_QUERY_TIMEOUT). */
export const DEFAULT_QUERY_TIMEOUT_MS = 10_000

/** A statement outlived DATABASE_QUERY_TIMEOUT: its outcome is unknown, and its connection is set aside. */
export class DatabaseTimeoutError extends Error {
  readonly code = 'MG_QUERY_TIMEOUT'
  constructor(timeoutMs: number) {
    super(`The database did not answer within ${timeoutMs} ms.`)
    this.name = 'DatabaseTimeoutError'
  }
}

/** A client that can be handed back broken (node-postgres' PoolClient, and the driver layer's). */
export interface ReleasableClient extends PostgresPoolClient {
  release(destroy?: Error | boolean): void
}

export interface ReleasablePool {
  connect(): Promise<ReleasableClient>
  end(): Promise<void>
}

const settle = () => {}

/**
 * Marks `error` as one whose statement may have taken effect though it failed: a COMMIT, or a write outside a
 * transaction, whose connection was cut or whose answer did not come in time. The database may have applied it
 * (a COMMIT waiting for a synchronous standby completes when one returns), so what it did is unknown.
 */
export function outcomeUnknown(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { outcomeUnknown?: boolean }).outcomeUnknown === true
  )
}

const markUnknown = (error: unknown): unknown => {
  if (typeof error === 'object' && error !== null) Object.assign(error, { outcomeUnknown: true })
  return error
}

/** A statement that may change the database by itself: anything outside a transaction but a plain read. */
const READ = /^\s*select\b/i
const BEGIN = /^\s*(begin|start transaction)\b/i
const END = /^\s*(commit|rollback|end)\b/i
const COMMIT = /^\s*(commit|end)\b/i

/**
 * `pool` with every statement bounded by `timeoutMs` (none when null): one that has not answered by then fails
 * with DatabaseTimeoutError (which the API answers as 503 `unavailable`), and so does every later statement on
 * its connection. What it waits for goes on: a COMMIT that a synchronous standby has not confirmed, a lock held
 * by such a transaction, a server that stopped answering. It is never cancelled (a cancelled COMMIT on a primary
 * that lost its standbys is committed locally and never replicated, and the client would be told nothing).
 *
 * The connection stays checked out until the statement ends and is then closed, never reused: it may be inside a
 * transaction the caller has given up. So a process holds no more connections than its pool allows, whatever
 * the database does: requests beyond them wait for a free one up to the connect timeout and fail with 503.
 *
 * A COMMIT, or a write outside a transaction, that fails this way or by a cut connection may still have taken
 * effect: its error is marked (`outcomeUnknown`), and an Idempotency-Key it ran under is kept rather than
 * released, so that a retry finds the committed object or waits out the key's lease.
 *
 * A statement that streams (a cursor) is not bounded here: each of its reads is the caller's to bound.
 */
export function boundedPool(pool: ReleasablePool, timeoutMs: number | null): PostgresPool {
  return {
    end: () => pool.end(),
    connect: async () => {
      const client = await pool.connect()
      let failed: DatabaseTimeoutError | null = null
      let outstanding: Promise<unknown> | null = null
      let inTransaction = false
      const query = ((sql: unknown, parameters: ReadonlyArray<unknown>) => {
        if (failed) return Promise.reject(failed)
        const running: Promise<unknown> = client.query(sql as string, parameters)
        if (typeof sql !== 'string') return running
        // Whether this statement's failure would leave its effect unknown.
        const uncertain = COMMIT.test(sql) || (!inTransaction && !READ.test(sql) && !BEGIN.test(sql))
        if (BEGIN.test(sql)) inTransaction = true
        else if (END.test(sql)) inTransaction = false
        return new Promise<unknown>((resolve, reject) => {
          const timer =
            timeoutMs === null
              ? undefined
              : setTimeout(() => {
                  failed = new DatabaseTimeoutError(timeoutMs)
                  outstanding = running.then(settle, settle)
                  reject(uncertain ? markUnknown(failed) : failed)
                }, timeoutMs)
          running.then(
            (result) => {
              clearTimeout(timer)
              resolve(result)
            },
            (error: unknown) => {
              clearTimeout(timer)
              reject(uncertain && isDatabaseUnavailable(error) ? markUnknown(error) : error)
            },
          )
        })
      }) as PostgresPoolClient['query']
      return {
        query,
        release: () => {
          if (!outstanding) return client.release()
          const broken = failed as DatabaseTimeoutError
          void outstanding.then(() => client.release(broken))
        },
      }
    },
  }
}

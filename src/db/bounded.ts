import type { PostgresPool, PostgresPoolClient } from 'kysely'

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
 * `pool` with every statement bounded by `timeoutMs`: one that has not answered by then fails with
 * DatabaseTimeoutError (which the API answers as 503 `unavailable`), and so does every later statement on its
 * connection. What it waits for goes on: a COMMIT that a synchronous standby has not confirmed, a lock held by
 * such a transaction, a server that stopped answering. It is never cancelled (a cancelled COMMIT on a primary
 * that lost its standbys is committed locally and never replicated, and the client would be told nothing), so
 * its outcome is unknown and is left to the Idempotency-Key and the crash-recovery paths.
 *
 * The connection stays checked out until the statement ends and is then closed, never reused: it may be inside a
 * transaction the caller has given up. So a process holds no more connections than its pool allows, whatever
 * the database does: requests beyond them wait for a free one up to the connect timeout and fail with 503.
 *
 * A statement that streams (a cursor) is not bounded here: each of its reads is the caller's to bound.
 */
export function boundedPool(pool: ReleasablePool, timeoutMs: number): PostgresPool {
  return {
    end: () => pool.end(),
    connect: async () => {
      const client = await pool.connect()
      let failed: DatabaseTimeoutError | null = null
      let outstanding: Promise<unknown> | null = null
      const query = ((sql: unknown, parameters: ReadonlyArray<unknown>) => {
        if (failed) return Promise.reject(failed)
        const running: Promise<unknown> = client.query(sql as string, parameters)
        if (typeof sql !== 'string') return running
        return new Promise<unknown>((resolve, reject) => {
          const timer = setTimeout(() => {
            failed = new DatabaseTimeoutError(timeoutMs)
            outstanding = running.then(settle, settle)
            reject(failed)
          }, timeoutMs)
          running.then(
            (result) => {
              clearTimeout(timer)
              resolve(result)
            },
            (error: unknown) => {
              clearTimeout(timer)
              reject(error)
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

import { sql } from 'kysely'
import type pg from 'pg'
import { APPLICATION_NAME, type Db } from '../../src/db/index.ts'
import { deferred } from './deferred.ts'

/** The local server .ci/run uses: where a suite that needs PostgreSQL runs without TEST_DATABASE_URL. */
const LOCAL_POSTGRES = 'postgres://postgres@127.0.0.1:5432/test'

/**
 * For a suite that only makes sense on PostgreSQL (sessions to cut, several processes on one database): nothing is
 * skipped, TEST_DATABASE_URL is the local server unless it is set. The server's URL, to connect as its
 * administrator (a database of the suite's own is made under it).
 */
export function onPostgres(): string {
  process.env.TEST_DATABASE_URL ??= LOCAL_POSTGRES
  return process.env.TEST_DATABASE_URL
}

/**
 * Ends the sessions on `database` that match `where` (SQL over pg_stat_activity), all of them but `admin`'s own
 * by default, as a failover, a restart or an administrator does: how many.
 */
export async function terminateSessions(admin: pg.Client, database: string, where = 'true'): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (
       SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = $1 AND pid <> pg_backend_pid() AND (${where})
     ) ended`,
    [database],
  )
  return rows[0]?.n ?? 0
}

/** The service's sessions on `database` that LISTEN (for new webhook deliveries), by pid. */
export async function listenerPids(admin: pg.Client, database: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
     WHERE datname = $1 AND application_name = $2 AND query LIKE 'LISTEN%'`,
    [database, APPLICATION_NAME],
  )
  return rows.map((row) => row.pid)
}

/** Sessions in the database `db` is on that LISTEN for new deliveries: one per running dispatcher. */
export async function listeningSessions(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND query LIKE 'LISTEN%'`.execute(db)
  return rows[0]?.n ?? 0
}

/** `url` with `application_name` set to `name`, so that one process's sessions can be told apart in pg_stat_activity. */
export function sessionUrl(url: string | URL, name: string): string {
  const named = new URL(url)
  named.searchParams.set('application_name', name)
  return named.toString()
}

/**
 * Sessions on the database `db` is on whose application_name is `name` (see `sessionUrl`): all of them, or only
 * those waiting on a lock.
 */
export async function sessionsOf(
  db: Db,
  name: string,
  options: { waitingOnLock?: boolean } = {},
): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = ${name}
      AND (${!options.waitingOnLock} OR wait_event_type = 'Lock')`.execute(db)
  return rows[0]?.n ?? 0
}

/** Locks a test holds in a transaction of its own; `release` commits it (a second call does nothing). */
export interface HeldLocks {
  release(): Promise<void>
}

/**
 * Runs `lock` in a transaction of the test's own and keeps that transaction open, so that the locks it took hold a
 * process under test at a chosen step, until `release`.
 */
export async function holdLocks(db: Db, lock: (trx: Db) => Promise<unknown>): Promise<HeldLocks> {
  const taken = deferred()
  const held = deferred()
  const done = db.transaction().execute(async (trx) => {
    await lock(trx)
    taken.resolve()
    await held.promise
  })
  await Promise.race([taken.promise, done])
  let released = false
  return {
    release: async () => {
      if (released) return
      released = true
      held.resolve()
      await done
    },
  }
}

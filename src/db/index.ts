import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { Kysely, Migrator, PostgresDialect, type Transaction } from 'kysely'
import pg from 'pg'
import lockfile from 'proper-lockfile'
import * as foundation from './migrations/0001_foundation.ts'
import * as lifecycle from './migrations/0002_lifecycle.ts'
import * as ledger from './migrations/0003_ledger.ts'
import * as refunds from './migrations/0004_refunds.ts'
import * as payouts from './migrations/0005_payouts.ts'
import { preparingPool } from './prepared.ts'
import type { Database } from './types.ts'

export type Db = Kysely<Database>
export type Trx = Transaction<Database>
/** A repository function takes either the pool or an open transaction as its first argument. */
export type Executor = Db | Trx

export interface DbHandle {
  db: Db
  kind: 'postgres' | 'pglite'
  /** Calls `onNotify` on every NOTIFY on `channel` (from any process on PostgreSQL); returns the unsubscribe. */
  listen(channel: string, onNotify: () => void): Promise<() => Promise<void>>
  /** Connections of the pool (PostgreSQL); null for the embedded database's single session. */
  poolStats(): { total: number; idle: number; waiting: number; max: number } | null
  close(): Promise<void>
}

export class EmbeddedDatabaseBusyError extends Error {}

// int8 columns hold amounts below 2^53 (the largest is 10^11 × a small factor), so a JS number is exact.
const INT8_OID = 20
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

export async function connectPostgres(url: string, poolSize = 10): Promise<DbHandle> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, types })
  // An idle connection the server ends (restart, failover, an administrator) leaves the pool and the next
  // query opens another; without a listener the pool's 'error' event would crash the process.
  pool.on('error', () => {})
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) })
  return {
    db,
    kind: 'postgres',
    async listen(channel, onNotify) {
      // LISTEN needs a session of its own, outside the pool.
      const client = new pg.Client({ connectionString: url })
      client.on('error', () => {})
      await client.connect()
      client.on('notification', (message) => {
        if (message.channel === channel) onNotify()
      })
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
      return () => client.end()
    },
    poolStats: () => ({
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      max: poolSize,
    }),
    close: () => db.destroy(),
  }
}

/**
 * The embedded database: PGlite, one session, spoken to through its own node-postgres adapter so that
 * Kysely's PostgresDialect drives it exactly as it drives PostgreSQL. A pool of one connection means a
 * transaction holds the only session until it ends, so transactions can never interleave.
 *
 * `dataDir` null keeps the database in memory (tests). On disk, a lock file keeps a second process out:
 * two processes writing one PGlite directory would corrupt it.
 */
export async function connectPglite(dataDir: string | null): Promise<DbHandle> {
  let release: (() => Promise<void>) | null = null
  let path = 'memory://'
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true })
    path = join(dataDir, 'pglite')
    try {
      release = await lockfile.lock(dataDir, { lockfilePath: join(dataDir, 'pglite.lock'), stale: 15_000 })
    } catch (error) {
      if ((error as { code?: string }).code === 'ELOCKED') {
        throw new EmbeddedDatabaseBusyError(
          `The embedded database in ${dataDir} is in use by another process (most likely a running server). ` +
            'Stop that process first, or point DATABASE_URL at PostgreSQL to run several processes at once.',
        )
      }
      throw error
    }
  }
  // Loaded here, not at the top: the embedded database's module holds about 35 MiB that a process on
  // PostgreSQL never needs.
  const [{ PGlite }, { pg_trgm }, { createPgConfig }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
    import('@electric-sql/pglite/node-postgres'),
  ])
  // PGlite starts its single-user backend with -F (fsync off): the embedded default trades durability for
  // speed, as it is for trying the service and for development.
  const pglite = await PGlite.create(path, { extensions: { pg_trgm }, relaxedDurability: true })
  const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1, types })
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) })
  return {
    db,
    kind: 'pglite',
    async listen(channel, onNotify) {
      return pglite.listen(channel, () => onNotify())
    },
    poolStats: () => null,
    async close() {
      await db.destroy()
      await pglite.close()
      await release?.()
    },
  }
}

export function connect(options: {
  databaseUrl: string | null
  dataDir: string | null
  poolSize?: number
}): Promise<DbHandle> {
  return options.databaseUrl
    ? connectPostgres(options.databaseUrl, options.poolSize)
    : connectPglite(options.dataDir)
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: {
      getMigrations: async () => ({
        '0001_foundation': foundation,
        '0002_lifecycle': lifecycle,
        '0003_ledger': ledger,
        '0004_refunds': refunds,
        '0005_payouts': payouts,
      }),
    },
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

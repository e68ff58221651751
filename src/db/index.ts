import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { Kysely, Migrator, PostgresDialect, type PostgresPool, type Transaction } from 'kysely'
import pg from 'pg'
import lockfile from 'proper-lockfile'
import { boundedPool, DEFAULT_QUERY_TIMEOUT_MS, type ReleasablePool } from './bounded.ts'
import { type DatabaseDriver, markPrepared } from './driver/mode.ts'
import type { SharedConnections } from './driver/prepared.ts'
import * as foundation from './migrations/0001_foundation.ts'
import * as lifecycle from './migrations/0002_lifecycle.ts'
import * as ledger from './migrations/0003_ledger.ts'
import * as refunds from './migrations/0004_refunds.ts'
import * as payouts from './migrations/0005_payouts.ts'
import * as exactlyOnce from './migrations/0006_exactly_once.ts'
import * as eventsApi from './migrations/0007_events_api.ts'
import * as balanceTransactions from './migrations/0008_balance_transactions.ts'
import * as refundList from './migrations/0009_refund_list.ts'
import * as dashboardUsers from './migrations/0010_dashboard_users.ts'
import * as dashboardTotp from './migrations/0011_dashboard_totp.ts'
import * as apiKeyLastUsed from './migrations/0012_api_key_last_used.ts'
import * as webhookConfigTarget from './migrations/0013_webhook_config_target.ts'
import * as transactionListFilters from './migrations/0014_transaction_list_filters.ts'
import * as deliveryBodyFromEvent from './migrations/0015_delivery_body_from_event.ts'
import * as transactionExternalIdIndex from './migrations/0016_transaction_external_id_index.ts'
import * as transactionStatistics from './migrations/0017_transaction_statistics.ts'
import * as connectorAccounts from './migrations/0018_connector_accounts.ts'
import * as paymentHandovers from './migrations/0019_payment_handovers.ts'
import * as refundPayoutAccounts from './migrations/0020_refund_payout_accounts.ts'
import * as chainPayouts from './migrations/0021_chain_payouts.ts'
import * as chainDeposits from './migrations/0022_chain_deposits.ts'
import * as apiKeyNames from './migrations/0023_api_key_names.ts'
import type { Database } from './types.ts'

export type Db = Kysely<Database>
export type Trx = Transaction<Database>
/** A repository function takes either the pool or an open transaction as its first argument. */
export type Executor = Db | Trx

export interface DbHandle {
  db: Db
  /** How its statements reach the database (DATABASE_DRIVER, `driver/mode.ts`). */
  driver: DatabaseDriver
  /**
   * The database of the workers (expiry, settlement, payout and refund jobs, the outbox dispatcher,
   * housekeeping): on PostgreSQL a pool of its own, made on first use, so that the jobs never wait behind
   * requests for a connection; on the embedded database `db` itself.
   */
  readonly background: Db
  kind: 'postgres' | 'pglite'
  /** Calls `onNotify` on every NOTIFY on `channel` (from any process on PostgreSQL); returns the unsubscribe. */
  listen(channel: string, onNotify: () => void): Promise<() => Promise<void>>
  /**
   * Connections of both pools together, all this process holds (PostgreSQL), with the workers' pool on its
   * own in `background` (all 0 until `background` is first used); null for the embedded database's single
   * session.
   */
  poolStats(): (PoolStats & { background: PoolStats }) | null
  /** The embedded database's files as a tarball, to start another from (`connectPglite`'s `loadDataDir`). */
  dumpDataDir?(): Promise<Blob>
  close(): Promise<void>
}

/** Open connections, the idle ones among them, queries waiting for one, and the most that may be open. */
export interface PoolStats {
  total: number
  idle: number
  waiting: number
  max: number
}

export class EmbeddedDatabaseBusyError extends Error {}

// int8 columns hold amounts below 2^53 (the largest is 10^11 × a small factor), so a JS number is exact.
const INT8_OID = 20
/** The type parsers of every `pg` connection: int8 read as a number, the rest as `pg` reads them. */
export const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

/** How the service names its sessions in `pg_stat_activity` (an `application_name` in the URL wins). */
export const APPLICATION_NAME = 'merchant-gateway'
/** How long a request waits for a connection (a free one of the pool, or a new one) before it fails with 503. */
const CONNECT_TIMEOUT_MS = 5_000
/** The LISTEN connection's reconnection delay: from the first, doubling up to the last, each with jitter. */
const LISTEN_RETRY_FIRST_MS = 100
const LISTEN_RETRY_MAX_MS = 5_000

/** Where the database layer reports a lost and a regained LISTEN session (the service's logger). */
export interface DbLog {
  warn(fields: object, message: string): void
  info(fields: object, message: string): void
}

/** The driver layer's pool (`driver/prepared.ts`), loaded only when the layer is on. */
type Layer = typeof import('./driver/prepared.ts')

/**
 * The layer's module for `driver`, or null for the plain one: `prepared.ts` (and `shaped-query.ts`, which
 * requires node-postgres' internals) are then never loaded.
 */
const loadLayer = async (driver: DatabaseDriver): Promise<Layer | null> =>
  driver === 'prepared' ? await import('./driver/prepared.ts') : null

/**
 * Kysely over `pool`: through the driver layer (with its `shared` connections, if any), or, without it, Kysely's
 * PostgresDialect over the pool itself; with every statement bounded by `queryTimeoutMs` when given
 * (`bounded.ts`). Also what the shared connections hold now (none without the layer).
 */
function kyselyOver(
  pool: pg.Pool,
  layer: Layer | null,
  options: { shared?: SharedConnections; queryTimeoutMs?: number | null } = {},
): { db: Db; sharedStats(): { open: number; idle: number } } {
  // PostgreSQL's pools (with or without a bound); the embedded database's single session loses no connection.
  const bound = (inner: ReleasablePool): PostgresPool =>
    options.queryTimeoutMs === undefined ? inner : boundedPool(inner, options.queryTimeoutMs)
  // The pool listens for errors on a client only while it is idle in the pool. One checked out (between the
  // statements of a transaction, or just connected: the server's FATAL may arrive in the same read as its
  // ReadyForQuery) whose connection is cut would emit 'error' with no listener, and that ends the process.
  // With this one, present from the moment the pool hands the client out, the running or next statement
  // fails instead, and the pool drops the client, no longer queryable, when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {})
  })
  if (!layer)
    return {
      db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: bound(pool) }) }),
      sharedStats: () => ({ open: 0, idle: 0 }),
    }
  const preparing = layer.preparingPool(pool, options.shared)
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: bound(preparing) }) })
  markPrepared(db)
  return { db, sharedStats: () => preparing.sharedStats() }
}

export async function connectPostgres(
  url: string,
  poolSize = 10,
  log?: DbLog,
  /** The workers' pool (`background`), besides `poolSize`. */
  backgroundPoolSize = 3,
  driver: DatabaseDriver = 'prepared',
  /**
   * The bound on each statement of the requests' pool (`bounded.ts`); null for none. The workers' pool has none:
   * a job that waits out an outage carries on after it.
   */
  queryTimeoutMs: number | null = DEFAULT_QUERY_TIMEOUT_MS,
): Promise<DbHandle> {
  const layer = await loadLayer(driver)
  const settings = {
    connectionString: url,
    application_name: APPLICATION_NAME,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A server gone without a word (a failover behind a virtual IP) is noticed on a connection left open.
    keepAlive: true,
  }
  // With the layer, a quarter of the connections (at least one, and none of a pool of 1) are shared by the
  // statements that run outside a transaction, pipelined; the rest are checked out by transactions (see
  // preparingPool). Without it, every statement checks a connection out of the pool.
  const sharedCount = layer && poolSize > 1 ? Math.max(1, Math.floor(poolSize / 4)) : 0
  const pool = new pg.Pool({ ...settings, max: poolSize - sharedCount, types: pgTypes })
  const shared: SharedConnections | undefined =
    sharedCount > 0
      ? {
          size: sharedCount,
          open: async () => {
            const client = new pg.Client({ ...settings, types: pgTypes, pipeline: true } as pg.ClientConfig)
            client.on('error', () => {})
            await client.connect()
            return client
          },
        }
      : undefined
  // An idle connection the server ends (restart, failover, an administrator) leaves the pool and the next
  // query opens another; without a listener the pool's 'error' event would crash the process. A connection
  // checked out when it is cut: see kyselyOver.
  pool.on('error', () => {})
  const { db, sharedStats } = kyselyOver(pool, layer, { shared, queryTimeoutMs })
  // The workers' connections, apart from the requests': under a burst of requests (a server starting while
  // clients already send) the jobs would otherwise queue behind them and give up after CONNECT_TIMEOUT_MS.
  // Made when first asked for, so a process that runs no workers neither opens nor counts it. No shared
  // connections: the jobs' statements run mostly in transactions.
  let jobs: { pool: pg.Pool; db: Db } | null = null
  const openBackground = () => {
    if (!jobs) {
      const pool = new pg.Pool({ ...settings, max: backgroundPoolSize, types: pgTypes })
      pool.on('error', () => {})
      jobs = { pool, db: kyselyOver(pool, layer).db }
    }
    return jobs
  }
  return {
    db,
    driver,
    get background() {
      return openBackground().db
    },
    kind: 'postgres',
    listen: (channel, onNotify) => listenWithReconnect(settings, channel, onNotify, log),
    poolStats: () => {
      // The pool's connections and the shared ones, against DATABASE_POOL_SIZE; then the workers' pool.
      const sharedNow = sharedStats()
      const background = {
        total: jobs?.pool.totalCount ?? 0,
        idle: jobs?.pool.idleCount ?? 0,
        waiting: jobs?.pool.waitingCount ?? 0,
        max: jobs ? backgroundPoolSize : 0,
      }
      return {
        total: pool.totalCount + sharedNow.open + background.total,
        idle: pool.idleCount + sharedNow.idle + background.idle,
        waiting: pool.waitingCount + background.waiting,
        max: poolSize + background.max,
        background,
      }
    },
    close: async () => {
      await Promise.all([db.destroy(), jobs?.db.destroy()])
    },
  }
}

/**
 * LISTEN on a session of its own, outside the pool, kept open: when the server ends it (restart, failover, an
 * administrator) it is opened again after a delay that starts at 100 ms and doubles up to 5 s, with jitter so
 * that many processes do not all come back at once, and LISTEN is issued again. Whatever was notified while
 * it was away is lost, so `onNotify` is called once after every reconnection: the listener looks for work as
 * if told. A first connection that fails is retried the same way (a database still starting, or one that
 * refuses for a moment, must not leave the listener on polling alone for the life of the process); the
 * unsubscribe stops the reconnecting and ends the session.
 */
async function listenWithReconnect(
  settings: pg.ClientConfig,
  channel: string,
  onNotify: () => void,
  log?: DbLog,
): Promise<() => Promise<void>> {
  const statement = `LISTEN ${pg.escapeIdentifier(channel)}`
  let stopped = false
  let current: pg.Client | null = null
  let retry: NodeJS.Timeout | null = null
  let delay = LISTEN_RETRY_FIRST_MS
  let failures = 0

  /** A connected session that listens; `onLost` runs once if the connection goes afterwards. */
  async function open(onLost: (error: unknown) => void): Promise<pg.Client> {
    const client = new pg.Client(settings)
    let live = false
    let lost = false
    const lose = (error: unknown) => {
      if (!live || lost) return
      lost = true
      if (current === client) current = null
      client.end().catch(() => {})
      onLost(error)
    }
    // Without a listener an 'error' (the server ending the session) would end the process.
    client.on('error', lose)
    client.on('end', () => lose(new Error('Connection terminated')))
    client.on('notification', (message) => {
      if (message.channel === channel) onNotify()
    })
    try {
      await client.connect()
      await client.query(statement)
    } catch (error) {
      await client.end().catch(() => {})
      throw error
    }
    live = true
    return client
  }

  function reconnectLater(error: unknown): void {
    if (stopped || retry) return
    // Half the delay, plus up to as much again at random.
    const wait = Math.round(delay / 2 + (Math.random() * delay) / 2)
    delay = Math.min(delay * 2, LISTEN_RETRY_MAX_MS)
    failures++
    log?.warn(
      { err: error, channel, attempt: failures, retryInMs: wait },
      'LISTEN session lost; reconnecting',
    )
    retry = setTimeout(() => {
      retry = null
      if (stopped) return
      open(reconnectLater).then(
        (client) => {
          if (stopped) {
            client.end().catch(() => {})
            return
          }
          current = client
          log?.info({ channel, attempts: failures }, 'LISTEN session reconnected')
          delay = LISTEN_RETRY_FIRST_MS
          failures = 0
          // Anything notified while the session was away was missed.
          onNotify()
        },
        (err: unknown) => reconnectLater(err),
      )
    }, wait)
    retry.unref()
  }

  try {
    current = await open(reconnectLater)
  } catch (error) {
    reconnectLater(error)
  }
  return async () => {
    stopped = true
    if (retry) clearTimeout(retry)
    retry = null
    const client = current
    current = null
    await client?.end()
  }
}

/**
 * The embedded database: PGlite, one session, spoken to through its own node-postgres adapter so that
 * Kysely's PostgresDialect drives it exactly as it drives PostgreSQL. A pool of one connection means a
 * transaction holds the only session until it ends, so transactions can never interleave.
 *
 * `dataDir` null keeps the database in memory (tests). On disk, a lock file keeps a second process out:
 * two processes writing one PGlite directory would corrupt it.
 *
 * The workers' `background` is `db` itself: the single session is all there is, so a pool of their own would
 * only queue for that same session; requests and jobs take turns on it, one transaction at a time.
 */
export async function connectPglite(
  dataDir: string | null,
  options: {
    /** Start from another embedded database's files (`dumpDataDir`) rather than an empty one. */
    loadDataDir?: Blob
    /** How statements reach it (`driver/mode.ts`); the layer's by default. */
    driver?: DatabaseDriver
  } = {},
): Promise<DbHandle> {
  const driver = options.driver ?? 'prepared'
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
            'Stop that process first, or point DATABASE_URL at PostgreSQL to run several processes at once. ' +
            "(The demo owner's lost password needs no command: start the server with --reset-demo-password.)",
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
  const pglite = await PGlite.create(path, {
    extensions: { pg_trgm },
    relaxedDurability: true,
    loadDataDir: options.loadDataDir,
  })
  const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1, types: pgTypes })
  const { db } = kyselyOver(pool, await loadLayer(driver))
  return {
    db,
    driver,
    background: db,
    kind: 'pglite',
    async listen(channel, onNotify) {
      return pglite.listen(channel, () => onNotify())
    },
    poolStats: () => null,
    dumpDataDir: async () => pglite.dumpDataDir('none'),
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
  /** The workers' own pool (PostgreSQL): `background`. */
  workerPoolSize?: number
  /** Reports of the LISTEN connection's losses and reconnections (PostgreSQL). */
  log?: DbLog
  /** How statements reach the database (DATABASE_DRIVER); the layer's by default. */
  driver?: DatabaseDriver
  /** The bound on each statement of a request (DATABASE_QUERY_TIMEOUT; PostgreSQL), null for none. */
  queryTimeoutMs?: number | null
}): Promise<DbHandle> {
  return options.databaseUrl
    ? connectPostgres(
        options.databaseUrl,
        options.poolSize,
        options.log,
        options.workerPoolSize,
        options.driver,
        options.queryTimeoutMs,
      )
    : connectPglite(options.dataDir, { driver: options.driver })
}

/** The service's migrations, by name, in order. */
export const migrator = (db: Db) =>
  new Migrator({
    db,
    provider: {
      getMigrations: async () => ({
        '0001_foundation': foundation,
        '0002_lifecycle': lifecycle,
        '0003_ledger': ledger,
        '0004_refunds': refunds,
        '0005_payouts': payouts,
        '0006_exactly_once': exactlyOnce,
        '0007_events_api': eventsApi,
        '0008_balance_transactions': balanceTransactions,
        '0009_refund_list': refundList,
        '0010_dashboard_users': dashboardUsers,
        '0011_dashboard_totp': dashboardTotp,
        '0012_api_key_last_used': apiKeyLastUsed,
        '0013_webhook_config_target': webhookConfigTarget,
        '0014_transaction_list_filters': transactionListFilters,
        '0015_delivery_body_from_event': deliveryBodyFromEvent,
        '0016_transaction_external_id_index': transactionExternalIdIndex,
        '0017_transaction_statistics': transactionStatistics,
        '0018_connector_accounts': connectorAccounts,
        '0019_payment_handovers': paymentHandovers,
        '0020_refund_payout_accounts': refundPayoutAccounts,
        '0021_chain_payouts': chainPayouts,
        '0022_chain_deposits': chainDeposits,
        '0023_api_key_names': apiKeyNames,
      }),
    },
  })

export async function migrateToLatest(db: Db): Promise<string[]> {
  const { error, results } = await migrator(db).migrateToLatest()
  if (error) throw error
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import ipaddr from 'ipaddr.js'
import { DEFAULT_QUERY_TIMEOUT_MS } from './db/bounded.ts'
import { DATABASE_DRIVERS, type DatabaseDriver } from './db/driver/mode.ts'

export type AppEnv = 'development' | 'production'

export interface Config {
  appEnv: AppEnv
  /** PostgreSQL URL; null means the embedded PGlite database under `dataDir`. */
  databaseUrl: string | null
  /** How many PostgreSQL connections one process's pool may open (not used on the embedded database). */
  databasePoolSize: number
  /**
   * How many PostgreSQL connections the workers' own pool may open, besides `databasePoolSize`: the jobs never
   * wait behind requests for a connection (not used on the embedded database, nor by a `--role api` process).
   */
  databaseWorkerPoolSize: number
  /**
   * How statements reach the database (DATABASE_DRIVER): `prepared`, through the driver layer (the default);
   * `plain`, Kysely over an ordinary node-postgres pool (src/db/driver/mode.ts).
   */
  databaseDriver: DatabaseDriver
  /**
   * How long one statement of a request may wait for PostgreSQL before the request answers 503 `unavailable`
   * (DATABASE_QUERY_TIMEOUT, 10 s by default; `off` for no bound): a primary without a synchronous standby, or
   * one that stopped answering, holds a COMMIT with no end (src/db/bounded.ts).
   */
  databaseQueryTimeoutMs: number | null
  dataDir: string
  port: number
  host: string
  publicBaseUrl: string
  masterKey: Buffer
  redisUrl: string | null
  logLevel: string
  /**
   * How log lines are written (LOG_FORMAT): `json`, one object a line for a collector; `pretty`, readable lines
   * for a person; null (unset): pretty when standard output is a terminal, else JSON.
   */
  logFormat: 'json' | 'pretty' | null
  /** Seconds a market rate stays usable; null means no limit. */
  fxMaxAgeSeconds: number | null
  webhookAllowPrivateNetworks: boolean
  /** How long an API key lookup is trusted in process before the database is asked again. */
  keyCacheTtlMs: number
  /** How long a process reuses the market rates it read (a payment then needs no query for its rate). */
  rateCacheMs: number
  /** Where Prometheus metrics are served (GET /metrics); null: not served. */
  metrics: { port: number; host: string } | null
  /** Per API key: a token bucket refilled at perSecond, holding at most burst (docs/API.md, Rate limits). */
  rateLimit: { perSecond: number; burst: number }
  /** How long a running request holds its Idempotency-Key; past this a crashed request's key can be taken over. */
  idempotencyLeaseMs: number
  /**
   * How long a refund or payout may wait on its hand-over to the provider before a worker asks the provider
   * again (or hands it over again): the bound on what a crash between our commit and the provider's answer
   * leaves in flight.
   */
  providerRecheckMs: number
  /**
   * How many days events are kept for GET /integration/events (with their deliveries) before housekeeping
   * deletes them; at least 30, the API's promise to merchants.
   */
  eventRetentionDays: number
  /** How many days the callback log keeps a provider's callback before housekeeping deletes it; at least 7. */
  callbackRetentionDays: number
  /**
   * When status sync asks a provider about a payment it holds, in milliseconds after each previous ask
   * (PROVIDER_SYNC_SCHEDULE, seconds separated by commas); after the last, again at the last interval until the
   * payment expires plus PROVIDER_SYNC_GRACE_SECONDS. `handoverLeaseMs` (PROVIDER_HANDOVER_LEASE_MS): how long a
   * try of a hand-over, or a status ask, may take before status sync takes the payment over.
   */
  providerSync: { scheduleMs: number[]; graceMs: number; handoverLeaseMs: number }
  /** How often a worker's chain watchers look for new blocks (CHAIN_WATCH_INTERVAL_MS). */
  chainWatchIntervalMs: number
  /**
   * Which peers' X-Forwarded-For is believed for the client's address (Fastify's `trustProxy`): false (none,
   * the default), the addresses and CIDR ranges of the proxies, or a count of proxy hops (as a function).
   */
  trustProxy: TrustProxy
  /**
   * The max-age of Strict-Transport-Security (HSTS_MAX_AGE); null: not sent. Only production with an https
   * PUBLIC_BASE_URL sends it: a browser that saw it over plain http locally would refuse that host's http.
   */
  hstsMaxAgeSeconds: number | null
  /** The dashboard's sessions and sign-in throttling (docs/DASHBOARD.md). */
  dashboard: {
    /** A session unused this long ends. */
    sessionIdleSeconds: number
    /** A session ends this long after sign-in, however much it is used. */
    sessionAbsoluteSeconds: number
    /** Failed sign-ins counted over this window… */
    loginWindowSeconds: number
    /** …at most this many per email address… */
    loginMaxFailuresPerAccount: number
    /** …and this many per client address, before sign-in answers 429. */
    loginMaxFailuresPerAddress: number
  }
  webhook: {
    /** Delays before attempts 2…n, seconds (default the Standard Webhooks schedule: 10 attempts in all). */
    retrySchedule: number[]
    /** The whole HTTP exchange of one attempt. */
    timeoutMs: number
    /** How long a worker's claim on a delivery holds; longer than the timeout. */
    leaseMs: number
  }
}

/** The Standard Webhooks schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h. */
export const STANDARD_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]

function parseSchedule(value: string | undefined): number[] {
  if (!value) return STANDARD_RETRY_SCHEDULE
  const delays = value.split(',').map((part) => Number(part.trim()))
  if (delays.length === 0 || delays.some((d) => !Number.isFinite(d) || d < 0)) {
    throw new ConfigError(
      `WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds such as 5,300,1800; got "${value}"`,
    )
  }
  return delays
}

function parsePositive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0)
    throw new ConfigError(`${name} must be a positive number, got "${value}"`)
  return n
}

export class ConfigError extends Error {}

/** Positive numbers of seconds separated by commas, as milliseconds. */
function parseSyncSchedule(name: string, value: string | undefined, fallback: number[]): number[] {
  if (value === undefined || value.trim() === '') return fallback.map((s) => s * 1000)
  return value.split(',').map((part) => {
    const seconds = Number(part.trim())
    if (part.trim() === '' || !Number.isFinite(seconds) || seconds <= 0)
      throw new ConfigError(`${name} must be positive numbers of seconds separated by commas, got "${value}"`)
    return seconds * 1000
  })
}

/** A whole number of at least 1. */
function parseWhole(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1)
    throw new ConfigError(`${name} must be a whole number of at least 1, got "${value}"`)
  return n
}

/** The least retention of events: merchants are promised 30 days to catch up (docs/API.md §22). */
const MIN_EVENT_RETENTION_DAYS = 30
/** The least retention of providers' callbacks: a week, to look into what a provider sent. */
const MIN_CALLBACK_RETENTION_DAYS = 7
const DEFAULT_CALLBACK_RETENTION_DAYS = 90
/** About a century: beyond it a cut-off date would leave the range of a timestamp. */
const MAX_RETENTION_DAYS = 36_500

function parseRetentionDays(name: string, value: string | undefined, min: number, fallback: number): number {
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!/^\d+$/.test(value.trim()) || n < min || n > MAX_RETENTION_DAYS)
    throw new ConfigError(
      `${name} must be a whole number of days from ${min} to ${MAX_RETENTION_DAYS}, got "${value}"`,
    )
  return n
}

/**
 * TRUST_PROXY: off by default; a comma list of proxy addresses and CIDR ranges (`10.0.0.1,10.1.0.0/16`), or
 * a number of hops. Never "everything": a client could then name any address it liked.
 */
export type TrustProxy = false | string[] | ((address: string, hop: number) => boolean)

export function parseTrustProxy(value: string | undefined): TrustProxy {
  if (value === undefined || value.trim() === '' || ['false', 'off', 'no', '0'].includes(value.trim()))
    return false
  const text = value.trim()
  if (/^\d+$/.test(text)) {
    const hops = Number(text)
    if (hops > 100) throw new ConfigError(`TRUST_PROXY as a hop count must be from 1 to 100, got "${value}"`)
    // What Fastify makes of a number: the peer is hop 0, the address it forwarded hop 1, and so on.
    return (_address, hop) => hop < hops
  }
  const entries = text.split(',').map((entry) => entry.trim())
  for (const entry of entries) {
    const valid = entry.includes('/') ? isCidr(entry) : ipaddr.isValid(entry)
    if (!valid)
      throw new ConfigError(
        `TRUST_PROXY must be off, a number of proxy hops, or a comma list of addresses and CIDR ranges (10.0.0.1,10.1.0.0/16); "${entry}" is none of these`,
      )
  }
  return entries
}

function isCidr(text: string): boolean {
  try {
    ipaddr.parseCIDR(text)
    return true
  } catch {
    return false
  }
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']

function parseLogLevel(value: string | undefined): string {
  if (value === undefined || value === '') return 'info'
  if (!LOG_LEVELS.includes(value))
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${value}"`)
  return value
}

function parseLogFormat(value: string | undefined): 'json' | 'pretty' | null {
  if (value === undefined || value === '' || value === 'auto') return null
  if (value === 'json' || value === 'pretty') return value
  throw new ConfigError(`LOG_FORMAT must be json, pretty or auto, got "${value}"`)
}

export function parseDatabaseDriver(value: string | undefined): DatabaseDriver {
  if (value === undefined || value === '') return 'prepared'
  if ((DATABASE_DRIVERS as readonly string[]).includes(value)) return value as DatabaseDriver
  throw new ConfigError(`DATABASE_DRIVER must be ${DATABASE_DRIVERS.join(' or ')}, got "${value}"`)
}

function parsePort(name: string, value: string): number {
  const port = Number(value)
  if (value.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`${name} must be 0-65535, got "${value}"`)
  return port
}

type Env = Record<string, string | undefined>

function parseBoolean(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback
  if (['1', 'true', 'yes', 'on'].includes(value.toLowerCase())) return true
  if (['0', 'false', 'no', 'off'].includes(value.toLowerCase())) return false
  throw new ConfigError(`${name} must be true or false, got "${value}"`)
}

/** "3600", "90s", "15m", "1h", "2d" → seconds. */
function parseQueryTimeout(value: string | undefined): number | null {
  if (value === undefined || value === '') return DEFAULT_QUERY_TIMEOUT_MS
  if (value.trim() === 'off') return null
  const seconds = parseDuration('DATABASE_QUERY_TIMEOUT', value)
  if (seconds < 1) throw new ConfigError(`DATABASE_QUERY_TIMEOUT must be at least 1s, or off; got "${value}"`)
  return seconds * 1000
}

export function parseDuration(name: string, value: string): number {
  const match = /^(\d+)\s*(s|m|h|d)?$/.exec(value.trim())
  if (!match)
    throw new ConfigError(`${name} must be a duration such as 3600, 90s, 15m, 1h or 2d; got "${value}"`)
  const unit = { s: 1, m: 60, h: 3600, d: 86400 }[(match[2] ?? 's') as 's' | 'm' | 'h' | 'd']
  return Number(match[1]) * unit
}

function parseMasterKey(value: string): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64')
  if (key.length !== 32) throw new ConfigError('MASTER_KEY must be 32 bytes, as 64 hex characters or base64')
  return key
}

/** The embedded default keeps its master key beside its data, made once on first start. */
function embeddedMasterKey(dataDir: string): Buffer {
  const file = join(dataDir, 'master.key')
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true })
    writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' })
  }
  return parseMasterKey(readFileSync(file, 'utf8').trim())
}

/** A session limit: a duration from 1 minute to 30 days. */
function parseSessionLimit(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback
  const seconds = parseDuration(name, value)
  if (seconds < 60 || seconds > 30 * 86400)
    throw new ConfigError(`${name} must be from 1 minute to 30 days (e.g. 30m, 12h), got "${value}"`)
  return seconds
}

function parseDashboard(env: Env): Config['dashboard'] {
  const sessionIdleSeconds = parseSessionLimit('DASHBOARD_SESSION_IDLE', env.DASHBOARD_SESSION_IDLE, 1800)
  const sessionAbsoluteSeconds = parseSessionLimit(
    'DASHBOARD_SESSION_MAX_AGE',
    env.DASHBOARD_SESSION_MAX_AGE,
    12 * 3600,
  )
  if (sessionIdleSeconds > sessionAbsoluteSeconds)
    throw new ConfigError(
      `DASHBOARD_SESSION_IDLE (${sessionIdleSeconds} s) must not be longer than DASHBOARD_SESSION_MAX_AGE (${sessionAbsoluteSeconds} s)`,
    )
  return {
    sessionIdleSeconds,
    sessionAbsoluteSeconds,
    loginWindowSeconds: 15 * 60,
    loginMaxFailuresPerAccount: 5,
    loginMaxFailuresPerAddress: 20,
  }
}

/** Reads the environment once into one validated object; nothing else reads process.env. */
export function loadConfig(env: Env = process.env): Config {
  const appEnv = (env.APP_ENV ?? 'development') as AppEnv
  if (appEnv !== 'development' && appEnv !== 'production') {
    throw new ConfigError(`APP_ENV must be development or production, got "${env.APP_ENV}"`)
  }
  const production = appEnv === 'production'
  const databaseUrl = env.DATABASE_URL || null
  const dataDir = resolve(env.DATA_DIR || './data')
  if (production && !databaseUrl) {
    throw new ConfigError(
      'APP_ENV=production needs DATABASE_URL: the embedded database is for trying the service only',
    )
  }
  if (production && !env.MASTER_KEY) {
    throw new ConfigError(
      'APP_ENV=production needs MASTER_KEY (32 bytes as 64 hex characters): it encrypts API secrets at rest',
    )
  }
  // Outside production a missing key is made once and kept in DATA_DIR, so a development setup just works.
  const masterKey = env.MASTER_KEY ? parseMasterKey(env.MASTER_KEY) : embeddedMasterKey(dataDir)

  const port = parsePort('PORT', env.PORT ?? '3000')
  const host = env.HOST || '127.0.0.1'
  const publicBaseUrl = (
    env.PUBLIC_BASE_URL || `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`
  ).replace(/\/+$/, '')
  try {
    new URL(publicBaseUrl)
  } catch {
    throw new ConfigError(`PUBLIC_BASE_URL must be an absolute URL, got "${env.PUBLIC_BASE_URL}"`)
  }

  const fxMaxAge = env.FX_MAX_AGE
  const fxMaxAgeSeconds =
    fxMaxAge === undefined || fxMaxAge === ''
      ? production
        ? 3600
        : null
      : ['none', 'off', '0'].includes(fxMaxAge)
        ? null
        : parseDuration('FX_MAX_AGE', fxMaxAge)

  return {
    appEnv,
    databaseUrl,
    databasePoolSize: parseWhole('DATABASE_POOL_SIZE', env.DATABASE_POOL_SIZE, 10),
    databaseWorkerPoolSize: parseWhole('DATABASE_WORKER_POOL_SIZE', env.DATABASE_WORKER_POOL_SIZE, 3),
    databaseDriver: parseDatabaseDriver(env.DATABASE_DRIVER),
    databaseQueryTimeoutMs: parseQueryTimeout(env.DATABASE_QUERY_TIMEOUT),
    dataDir,
    port,
    host,
    publicBaseUrl,
    masterKey,
    redisUrl: env.REDIS_URL || null,
    logLevel: parseLogLevel(env.LOG_LEVEL),
    logFormat: parseLogFormat(env.LOG_FORMAT),
    fxMaxAgeSeconds,
    webhookAllowPrivateNetworks: parseBoolean(
      'WEBHOOK_ALLOW_PRIVATE_NETWORKS',
      env.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
      !production,
    ),
    keyCacheTtlMs: 5000,
    rateCacheMs: 1000,
    metrics: env.METRICS_PORT
      ? { port: parsePort('METRICS_PORT', env.METRICS_PORT), host: env.METRICS_HOST || '127.0.0.1' }
      : null,
    rateLimit: {
      perSecond: parsePositive('RATE_LIMIT_PER_SECOND', env.RATE_LIMIT_PER_SECOND, 100),
      burst: parseWhole('RATE_LIMIT_BURST', env.RATE_LIMIT_BURST, 200),
    },
    idempotencyLeaseMs: parsePositive('IDEMPOTENCY_LEASE_MS', env.IDEMPOTENCY_LEASE_MS, 60_000),
    providerRecheckMs: parsePositive('PROVIDER_RECHECK_MS', env.PROVIDER_RECHECK_MS, 60_000),
    eventRetentionDays: parseRetentionDays(
      'EVENT_RETENTION_DAYS',
      env.EVENT_RETENTION_DAYS,
      MIN_EVENT_RETENTION_DAYS,
      MIN_EVENT_RETENTION_DAYS,
    ),
    callbackRetentionDays: parseRetentionDays(
      'PROVIDER_CALLBACK_RETENTION_DAYS',
      env.PROVIDER_CALLBACK_RETENTION_DAYS,
      MIN_CALLBACK_RETENTION_DAYS,
      DEFAULT_CALLBACK_RETENTION_DAYS,
    ),
    providerSync: {
      scheduleMs: parseSyncSchedule(
        'PROVIDER_SYNC_SCHEDULE',
        env.PROVIDER_SYNC_SCHEDULE,
        [60, 300, 900, 3600],
      ),
      graceMs: parsePositive('PROVIDER_SYNC_GRACE_SECONDS', env.PROVIDER_SYNC_GRACE_SECONDS, 3600) * 1000,
      handoverLeaseMs: parsePositive('PROVIDER_HANDOVER_LEASE_MS', env.PROVIDER_HANDOVER_LEASE_MS, 30_000),
    },
    chainWatchIntervalMs: parsePositive('CHAIN_WATCH_INTERVAL_MS', env.CHAIN_WATCH_INTERVAL_MS, 1000),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    hstsMaxAgeSeconds:
      production &&
      publicBaseUrl.startsWith('https:') &&
      !['off', 'none', '0'].includes(env.HSTS_MAX_AGE ?? '')
        ? parseWhole('HSTS_MAX_AGE', env.HSTS_MAX_AGE, 31_536_000)
        : null,
    dashboard: parseDashboard(env),
    webhook: {
      retrySchedule: parseSchedule(env.WEBHOOK_RETRY_SCHEDULE),
      timeoutMs: parsePositive('WEBHOOK_TIMEOUT_MS', env.WEBHOOK_TIMEOUT_MS, 15_000),
      leaseMs: parsePositive('WEBHOOK_LEASE_MS', env.WEBHOOK_LEASE_MS, 60_000),
    },
  }
}

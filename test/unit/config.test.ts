import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { ConfigError, loadConfig, parseDuration } from '../../src/config.ts'

const MASTER_KEY = randomBytes(32).toString('hex')
const PRODUCTION = { APP_ENV: 'production', DATABASE_URL: 'postgres://db.internal/gateway', MASTER_KEY }
const DEVELOPMENT = { APP_ENV: 'development', MASTER_KEY }

const refused = (env: Record<string, string>, message: RegExp) =>
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => error instanceof ConfigError && message.test(error.message),
  )

describe('loadConfig', () => {
  it('LOG_FORMAT: json or pretty, auto or unset leaves it to the terminal, anything else refused', () => {
    assert.equal(loadConfig(DEVELOPMENT).logFormat, null)
    assert.equal(loadConfig({ ...DEVELOPMENT, LOG_FORMAT: 'auto' }).logFormat, null)
    assert.equal(loadConfig({ ...DEVELOPMENT, LOG_FORMAT: 'pretty' }).logFormat, 'pretty')
    assert.equal(loadConfig({ ...PRODUCTION, LOG_FORMAT: 'json' }).logFormat, 'json')
    refused({ ...DEVELOPMENT, LOG_FORMAT: 'text' }, /LOG_FORMAT must be json, pretty or auto, got "text"/)
  })

  it('DATABASE_DRIVER: the driver layer unless plain, anything else refused', () => {
    assert.equal(loadConfig(DEVELOPMENT).databaseDriver, 'prepared')
    assert.equal(loadConfig({ ...DEVELOPMENT, DATABASE_DRIVER: '' }).databaseDriver, 'prepared')
    assert.equal(loadConfig({ ...PRODUCTION, DATABASE_DRIVER: 'prepared' }).databaseDriver, 'prepared')
    assert.equal(loadConfig({ ...PRODUCTION, DATABASE_DRIVER: 'plain' }).databaseDriver, 'plain')
    refused(
      { ...DEVELOPMENT, DATABASE_DRIVER: 'Plain' },
      /DATABASE_DRIVER must be prepared or plain, got "Plain"/,
    )
  })

  it('sends HSTS only in production behind an https address, for a year unless HSTS_MAX_AGE says otherwise', () => {
    const https = { ...PRODUCTION, PUBLIC_BASE_URL: 'https://pay.example' }
    assert.equal(loadConfig(https).hstsMaxAgeSeconds, 31_536_000)
    assert.equal(loadConfig({ ...https, HSTS_MAX_AGE: '600' }).hstsMaxAgeSeconds, 600)
    assert.equal(loadConfig({ ...https, HSTS_MAX_AGE: 'off' }).hstsMaxAgeSeconds, null)
    assert.equal(loadConfig({ ...PRODUCTION, PUBLIC_BASE_URL: 'http://pay.example' }).hstsMaxAgeSeconds, null)
    assert.equal(
      loadConfig({ ...DEVELOPMENT, PUBLIC_BASE_URL: 'https://pay.example' }).hstsMaxAgeSeconds,
      null,
    )
  })

  const dirs: string[] = []
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  it('production refuses to start without DATABASE_URL, and says why', () => {
    refused({ APP_ENV: 'production', MASTER_KEY }, /DATABASE_URL/)
    refused({ APP_ENV: 'production', MASTER_KEY, DATABASE_URL: '' }, /DATABASE_URL/)
  })

  it('production refuses to start without MASTER_KEY, and says why', () => {
    refused({ APP_ENV: 'production', DATABASE_URL: 'postgres://db/gw' }, /MASTER_KEY/)
  })

  it('refuses an unknown APP_ENV and a malformed MASTER_KEY', () => {
    refused({ APP_ENV: 'staging', MASTER_KEY }, /APP_ENV/)
    refused({ ...DEVELOPMENT, MASTER_KEY: 'abc' }, /MASTER_KEY must be 32 bytes/)
    refused({ ...DEVELOPMENT, MASTER_KEY: 'a'.repeat(62) }, /MASTER_KEY must be 32 bytes/)
  })

  it('accepts MASTER_KEY as hex or base64', () => {
    const key = randomBytes(32)
    assert.deepEqual(loadConfig({ ...DEVELOPMENT, MASTER_KEY: key.toString('hex') }).masterKey, key)
    assert.deepEqual(loadConfig({ ...DEVELOPMENT, MASTER_KEY: key.toString('base64') }).masterKey, key)
  })

  it('outside production makes a master key once and keeps it in DATA_DIR', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mg-config-'))
    dirs.push(dir)
    const first = loadConfig({ APP_ENV: 'development', DATA_DIR: dir })
    const second = loadConfig({ APP_ENV: 'development', DATA_DIR: dir })
    assert.equal(first.masterKey.length, 32)
    assert.deepEqual(second.masterKey, first.masterKey)
    const file = join(dir, 'master.key')
    assert.equal(readFileSync(file, 'utf8').trim(), first.masterKey.toString('hex'))
    assert.equal(statSync(file).mode & 0o777, 0o600)
    assert.equal(first.databaseUrl, null)
    assert.equal(first.dataDir, dir)
  })

  it('FX_MAX_AGE defaults to 3600 s in production and to no limit otherwise', () => {
    assert.equal(loadConfig(PRODUCTION).fxMaxAgeSeconds, 3600)
    assert.equal(loadConfig(DEVELOPMENT).fxMaxAgeSeconds, null)
    assert.equal(loadConfig({ ...PRODUCTION, FX_MAX_AGE: '' }).fxMaxAgeSeconds, 3600)
  })

  it('FX_MAX_AGE takes durations, and none/off/0 for no limit', () => {
    assert.equal(loadConfig({ ...DEVELOPMENT, FX_MAX_AGE: '15m' }).fxMaxAgeSeconds, 900)
    assert.equal(loadConfig({ ...PRODUCTION, FX_MAX_AGE: '120' }).fxMaxAgeSeconds, 120)
    for (const value of ['none', 'off', '0']) {
      assert.equal(loadConfig({ ...PRODUCTION, FX_MAX_AGE: value }).fxMaxAgeSeconds, null, value)
    }
    refused({ ...DEVELOPMENT, FX_MAX_AGE: 'soon' }, /FX_MAX_AGE/)
  })

  it('PORT defaults to 3000 and must be 0-65535', () => {
    assert.equal(loadConfig(DEVELOPMENT).port, 3000)
    assert.equal(loadConfig({ ...DEVELOPMENT, PORT: '8080' }).port, 8080)
    assert.equal(loadConfig({ ...DEVELOPMENT, PORT: '0' }).port, 0)
    for (const port of ['abc', '65536', '-1', '80.5', '99999'])
      refused({ ...DEVELOPMENT, PORT: port }, /PORT/)
  })

  it('PUBLIC_BASE_URL defaults from host and port, loses trailing slashes, and must be absolute', () => {
    assert.equal(loadConfig({ ...DEVELOPMENT, PORT: '4000' }).publicBaseUrl, 'http://127.0.0.1:4000')
    assert.equal(loadConfig({ ...DEVELOPMENT, HOST: '0.0.0.0' }).publicBaseUrl, 'http://127.0.0.1:3000')
    assert.equal(
      loadConfig({ ...DEVELOPMENT, PUBLIC_BASE_URL: 'https://pay.example.com//' }).publicBaseUrl,
      'https://pay.example.com',
    )
    refused({ ...DEVELOPMENT, PUBLIC_BASE_URL: 'pay.example.com' }, /PUBLIC_BASE_URL/)
  })

  it('WEBHOOK_ALLOW_PRIVATE_NETWORKS defaults on outside production and off in it', () => {
    assert.equal(loadConfig(DEVELOPMENT).webhookAllowPrivateNetworks, true)
    assert.equal(loadConfig(PRODUCTION).webhookAllowPrivateNetworks, false)
    assert.equal(
      loadConfig({ ...PRODUCTION, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }).webhookAllowPrivateNetworks,
      true,
    )
    assert.equal(
      loadConfig({ ...DEVELOPMENT, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'off' }).webhookAllowPrivateNetworks,
      false,
    )
    refused({ ...DEVELOPMENT, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'maybe' }, /WEBHOOK_ALLOW_PRIVATE_NETWORKS/)
  })

  it('reads the rest with their defaults', () => {
    const config = loadConfig({ ...PRODUCTION, REDIS_URL: 'redis://cache:6379', LOG_LEVEL: 'warn' })
    assert.equal(config.appEnv, 'production')
    assert.equal(config.databaseUrl, PRODUCTION.DATABASE_URL)
    assert.equal(config.redisUrl, 'redis://cache:6379')
    assert.equal(config.logLevel, 'warn')
    assert.equal(loadConfig(DEVELOPMENT).redisUrl, null)
    assert.equal(loadConfig(DEVELOPMENT).logLevel, 'info')
    assert.equal(loadConfig(DEVELOPMENT).host, '127.0.0.1')
  })

  it('DATABASE_POOL_SIZE defaults to 10 and must be a whole number of at least 1', () => {
    assert.equal(loadConfig(DEVELOPMENT).databasePoolSize, 10)
    assert.equal(loadConfig({ ...DEVELOPMENT, DATABASE_POOL_SIZE: '' }).databasePoolSize, 10)
    assert.equal(loadConfig({ ...PRODUCTION, DATABASE_POOL_SIZE: '32' }).databasePoolSize, 32)
    for (const bad of ['0', '-3', '2.5', 'ten'])
      refused({ ...DEVELOPMENT, DATABASE_POOL_SIZE: bad }, /DATABASE_POOL_SIZE must be a whole number/)
  })

  it('DATABASE_WORKER_POOL_SIZE defaults to 3 and must be a whole number of at least 1', () => {
    assert.equal(loadConfig(DEVELOPMENT).databaseWorkerPoolSize, 3)
    assert.equal(loadConfig({ ...DEVELOPMENT, DATABASE_WORKER_POOL_SIZE: '' }).databaseWorkerPoolSize, 3)
    assert.equal(loadConfig({ ...PRODUCTION, DATABASE_WORKER_POOL_SIZE: '1' }).databaseWorkerPoolSize, 1)
    assert.equal(loadConfig({ ...PRODUCTION, DATABASE_WORKER_POOL_SIZE: '5' }).databaseWorkerPoolSize, 5)
    for (const bad of ['0', '-1', '1.5', 'two'])
      refused(
        { ...DEVELOPMENT, DATABASE_WORKER_POOL_SIZE: bad },
        /DATABASE_WORKER_POOL_SIZE must be a whole number of at least 1, got/,
      )
  })

  it('DATABASE_QUERY_TIMEOUT defaults to 10 s, takes a duration of at least 1 s, or off', () => {
    assert.equal(loadConfig(DEVELOPMENT).databaseQueryTimeoutMs, 10_000)
    assert.equal(loadConfig({ ...PRODUCTION, DATABASE_QUERY_TIMEOUT: '4s' }).databaseQueryTimeoutMs, 4_000)
    assert.equal(loadConfig({ ...PRODUCTION, DATABASE_QUERY_TIMEOUT: '1m' }).databaseQueryTimeoutMs, 60_000)
    assert.equal(loadConfig({ ...PRODUCTION, DATABASE_QUERY_TIMEOUT: 'off' }).databaseQueryTimeoutMs, null)
    refused({ ...DEVELOPMENT, DATABASE_QUERY_TIMEOUT: '0' }, /DATABASE_QUERY_TIMEOUT must be at least 1s/)
    refused({ ...DEVELOPMENT, DATABASE_QUERY_TIMEOUT: 'soon' }, /DATABASE_QUERY_TIMEOUT must be a duration/)
  })

  it('EVENT_RETENTION_DAYS defaults to 30 and may only be longer: merchants are promised 30 days', () => {
    assert.equal(loadConfig(DEVELOPMENT).eventRetentionDays, 30)
    assert.equal(loadConfig(PRODUCTION).eventRetentionDays, 30)
    assert.equal(loadConfig({ ...DEVELOPMENT, EVENT_RETENTION_DAYS: '' }).eventRetentionDays, 30)
    assert.equal(loadConfig({ ...DEVELOPMENT, EVENT_RETENTION_DAYS: '30' }).eventRetentionDays, 30)
    assert.equal(loadConfig({ ...PRODUCTION, EVENT_RETENTION_DAYS: '90' }).eventRetentionDays, 90)
    assert.equal(loadConfig({ ...PRODUCTION, EVENT_RETENTION_DAYS: '36500' }).eventRetentionDays, 36500)
    for (const bad of ['29', '0', '-30', '45.5', '1e2', 'forever', '36501', '30d'])
      refused(
        { ...DEVELOPMENT, EVENT_RETENTION_DAYS: bad },
        /EVENT_RETENTION_DAYS must be a whole number of days from 30 to 36500/,
      )
  })

  it('PROVIDER_CALLBACK_RETENTION_DAYS defaults to 90, from 7 days to a century', () => {
    assert.equal(loadConfig(PRODUCTION).callbackRetentionDays, 90)
    assert.equal(
      loadConfig({ ...PRODUCTION, PROVIDER_CALLBACK_RETENTION_DAYS: '7' }).callbackRetentionDays,
      7,
    )
    for (const bad of ['6', '0', 'a week', '36501'])
      refused(
        { ...DEVELOPMENT, PROVIDER_CALLBACK_RETENTION_DAYS: bad },
        /PROVIDER_CALLBACK_RETENTION_DAYS must be a whole number of days from 7 to 36500/,
      )
  })

  it('PROVIDER_HANDOVER_LEASE_MS defaults to 30 s and must be a positive number', () => {
    assert.equal(loadConfig(PRODUCTION).providerSync.handoverLeaseMs, 30_000)
    assert.equal(
      loadConfig({ ...DEVELOPMENT, PROVIDER_HANDOVER_LEASE_MS: '4000' }).providerSync.handoverLeaseMs,
      4000,
    )
    for (const bad of ['0', '-1', 'soon'])
      refused(
        { ...DEVELOPMENT, PROVIDER_HANDOVER_LEASE_MS: bad },
        /PROVIDER_HANDOVER_LEASE_MS must be a positive number/,
      )
  })

  it('dashboard sessions: 30 min idle and 12 h absolute by default, each from 1 min to 30 days, idle within absolute', () => {
    const defaults = loadConfig(DEVELOPMENT).dashboard
    assert.equal(defaults.sessionIdleSeconds, 1800)
    assert.equal(defaults.sessionAbsoluteSeconds, 43200)
    const set = loadConfig({ ...DEVELOPMENT, DASHBOARD_SESSION_IDLE: '10m', DASHBOARD_SESSION_MAX_AGE: '8h' })
    assert.equal(set.dashboard.sessionIdleSeconds, 600)
    assert.equal(set.dashboard.sessionAbsoluteSeconds, 28800)
    for (const bad of ['30', '0', 'soon', '31d'])
      refused({ ...DEVELOPMENT, DASHBOARD_SESSION_IDLE: bad }, /DASHBOARD_SESSION_IDLE must/)
    refused({ ...DEVELOPMENT, DASHBOARD_SESSION_MAX_AGE: '45s' }, /DASHBOARD_SESSION_MAX_AGE must/)
    refused(
      { ...DEVELOPMENT, DASHBOARD_SESSION_IDLE: '2h', DASHBOARD_SESSION_MAX_AGE: '1h' },
      /DASHBOARD_SESSION_IDLE \(7200 s\) must not be longer than DASHBOARD_SESSION_MAX_AGE/,
    )
  })

  it('TRUST_PROXY is off by default; takes proxy addresses and CIDR ranges, or a hop count; refuses the rest', () => {
    assert.equal(loadConfig(DEVELOPMENT).trustProxy, false)
    assert.equal(loadConfig({ ...DEVELOPMENT, TRUST_PROXY: 'off' }).trustProxy, false)
    assert.deepEqual(loadConfig({ ...DEVELOPMENT, TRUST_PROXY: '10.0.0.1, 10.1.0.0/16,::1' }).trustProxy, [
      '10.0.0.1',
      '10.1.0.0/16',
      '::1',
    ])
    const hops = loadConfig({ ...DEVELOPMENT, TRUST_PROXY: '2' }).trustProxy
    assert.equal(typeof hops, 'function')
    if (typeof hops === 'function')
      assert.deepEqual(
        [0, 1, 2].map((hop) => hops('10.0.0.1', hop)),
        [true, true, false],
      )
    for (const value of ['true', '*', '10.0.0.300', '10.0.0.0/33', 'proxy.internal', '101'])
      refused({ ...DEVELOPMENT, TRUST_PROXY: value }, /TRUST_PROXY/)
  })
})

describe('parseDuration', () => {
  it('reads seconds, minutes, hours and days', () => {
    const seconds = { '3600': 3600, '90s': 90, '15m': 900, '1h': 3600, '2d': 172800, ' 30 m ': 1800 }
    for (const [text, expected] of Object.entries(seconds))
      assert.equal(parseDuration('X', text), expected, text)
  })

  it('refuses anything else, naming the variable', () => {
    for (const value of ['', 'abc', '1.5h', '-5', '10w', 'h', '1h30m']) {
      assert.throws(
        () => parseDuration('SETTLEMENT_HOLD', value),
        (error: unknown) => error instanceof ConfigError && /SETTLEMENT_HOLD/.test(error.message),
        JSON.stringify(value),
      )
    }
  })
})

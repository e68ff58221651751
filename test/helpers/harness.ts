import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { after, before } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { type KyselyPlugin, sql } from 'kysely'
import pg from 'pg'
import { buildApp, createLogger, createServices, type ServiceOptions, type Services } from '../../src/app.ts'
import { type Config, loadConfig, parseDatabaseDriver } from '../../src/config.ts'
import type { DatabaseDriver } from '../../src/db/driver/mode.ts'
import {
  connectPglite,
  connectPostgres,
  type Db,
  type DbHandle,
  migrateToLatest,
} from '../../src/db/index.ts'
import type { Mode } from '../../src/db/types.ts'
import { sign } from '../../src/http/auth.ts'
import { responseContract } from './contract.ts'
import { programEnv } from './program.ts'

export type Backend = 'pglite' | 'postgres'

/** Every suite runs on embedded PGlite, and on PostgreSQL too when TEST_DATABASE_URL is set. */
export function backends(): Backend[] {
  return process.env.TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite']
}

/**
 * How the suites' databases are reached: DATABASE_DRIVER, as the program reads it (the driver layer unless
 * `plain`). A test of the layer itself asks for `prepared`.
 */
export const testDriver = (): DatabaseDriver => parseDatabaseDriver(process.env.DATABASE_DRIVER)

/**
 * A fresh database for the suite this is called in, made before its tests and dropped after them. Returns
 * the way to reach it from inside the tests.
 */
export function suiteDatabase(backend: Backend, driver = testDriver()): () => Db {
  let fresh: { handle: DbHandle; drop(): Promise<void> } | null = null
  before(async () => {
    fresh = await freshDatabase(backend, driver)
  })
  after(() => fresh?.drop())
  return () => {
    if (!fresh) throw new Error('the suite database is made in before()')
    return fresh.handle.db
  }
}

/** A fresh, empty database of the given kind; `drop` removes it. */
export async function freshDatabase(
  backend: Backend,
  driver = testDriver(),
): Promise<{ handle: DbHandle; drop(): Promise<void> }> {
  if (backend === 'pglite') {
    const handle = await connectPglite(null, { driver })
    return { handle, drop: () => handle.close() }
  }
  const adminUrl = process.env.TEST_DATABASE_URL as string
  const name = `mg_test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const handle = await connectPostgres(url.toString(), 20, undefined, undefined, driver)
  return {
    handle,
    async drop() {
      await handle.close()
      const cleanup = new pg.Client({ connectionString: adminUrl })
      await cleanup.connect()
      await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await cleanup.end()
    },
  }
}

/**
 * A fresh database of the given kind with every migration applied. An embedded one starts from a migrated
 * template's files (`pgliteTemplate`), which skips the seconds of initdb that an empty one takes.
 */
export async function migratedDatabase(
  backend: Backend,
  driver = testDriver(),
): Promise<{ handle: DbHandle; drop(): Promise<void> }> {
  if (backend === 'pglite') {
    const handle = await connectPglite(null, { loadDataDir: await pgliteTemplate(), driver }).catch(() =>
      // A kept template that cannot be started from (cut short, or left by another version): made again.
      pgliteTemplate(true).then((made) => connectPglite(null, { loadDataDir: made, driver })),
    )
    // Applies nothing when the template is current; a test that changes a migration sees it applied.
    await migrateToLatest(handle.db)
    return { handle, drop: () => handle.close() }
  }
  const fresh = await freshDatabase(backend, driver)
  await migrateToLatest(fresh.handle.db)
  return fresh
}

let template: Promise<Blob> | null = null
const TEMPLATE_PREFIX = 'mg-pglite-template-'
/** A template's name, or that of one being written (`.<pid>` after it). */
const TEMPLATE_FILE = /^mg-pglite-template-[0-9a-f]{16}\.tar(\.\d+)?$/

/**
 * Templates of other versions (and files a writer left half-written) unused for an hour: each is a whole migrated
 * database. A process touches the template it starts from, so one that another checkout's suite uses stays; one
 * removed under a suite all the same is made again by it.
 */
function removeStaleTemplates(current: string) {
  const hourAgo = Date.now() - 3_600_000
  for (const name of readdirSync(tmpdir())) {
    const path = join(tmpdir(), name)
    if (!TEMPLATE_FILE.test(name) || path === current) continue
    try {
      if (statSync(path).mtimeMs < hourAgo) rmSync(path, { force: true })
    } catch {
      // Removed by another suite meanwhile.
    }
  }
}

/**
 * A migrated embedded database's files: made once and kept in the temporary directory, where every suite's
 * process finds it, under a name that changes with the migrations' sources and PGlite's and Kysely's versions.
 */
function pgliteTemplate(remake = false): Promise<Blob> {
  if (remake) template = null
  template ??= (async () => {
    const hash = createHash('sha256')
    const root = new URL('../../', import.meta.url)
    const migrations = new URL('src/db/migrations/', root)
    for (const name of readdirSync(migrations).sort())
      hash.update(name).update(readFileSync(new URL(name, migrations)))
    hash.update(readFileSync(new URL('src/db/index.ts', root)))
    for (const pkg of ['@electric-sql/pglite', 'kysely'])
      hash.update(readFileSync(new URL(`node_modules/${pkg}/package.json`, root)))
    const file = join(tmpdir(), `${TEMPLATE_PREFIX}${hash.digest('hex').slice(0, 16)}.tar`)
    try {
      if (remake) throw new Error('made again')
      const kept = new Blob([readFileSync(file)])
      // In use: another checkout's suite that makes its own template leaves this one alone (removeStaleTemplates).
      utimesSync(file, new Date(), new Date())
      return kept
    } catch {
      const handle = await connectPglite(null)
      await migrateToLatest(handle.db)
      const dump = (await handle.dumpDataDir?.()) as Blob
      await handle.close()
      // Written aside and renamed: a process that reads it at the same time sees all of it or none.
      const partial = `${file}.${process.pid}`
      writeFileSync(partial, Buffer.from(await dump.arrayBuffer()))
      renameSync(partial, file)
      removeStaleTemplates(file)
      return dump
    }
  })()
  return template
}

/** The connection URL of a PostgreSQL context's own database, for a real program to run on it. */
export async function postgresUrlOf(ctx: { db: Db }): Promise<string> {
  const { rows } = await sql<{ name: string }>`SELECT current_database() AS name`.execute(ctx.db)
  const url = new URL(process.env.TEST_DATABASE_URL as string)
  url.pathname = `/${rows[0]?.name}`
  return url.toString()
}

export const TEST_MASTER_KEY = randomBytes(32).toString('hex')

/**
 * The environment of a real `serve` on a test's PostgreSQL database (postgresUrlOf): development, the suites'
 * master key, warnings only, on 127.0.0.1:`port`; `extra` adds to it. Nothing of the caller's leaks in.
 */
export const serviceEnv = (databaseUrl: string, port: number, extra: Record<string, string> = {}) =>
  programEnv({
    APP_ENV: 'development',
    DATABASE_URL: databaseUrl,
    MASTER_KEY: TEST_MASTER_KEY,
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: String(port),
    ...extra,
  })

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...loadConfig({
      APP_ENV: 'development',
      MASTER_KEY: TEST_MASTER_KEY,
      PUBLIC_BASE_URL: 'http://gateway.test',
      LOG_LEVEL: 'info',
    }),
    // Suites fire requests far faster than a merchant would; the rate-limit suite sets its own limits.
    rateLimit: { perSecond: 1_000_000, burst: 1_000_000 },
    // Suites change rates straight in the database and expect the next request to see it.
    rateCacheMs: 0,
    ...overrides,
  }
}

export interface TestMerchant {
  uuid: string
  keys: Record<Mode, { key_id: string; secret: string }>
}

export interface TestContext {
  backend: Backend
  handle: DbHandle
  app: FastifyInstance
  db: Db
  config: Config
  services: Services
  merchant: TestMerchant
  other: TestMerchant
  /** Every log line the app wrote, as text. */
  logs: string[]
  /** Every secret the context created: none may appear in a log line. */
  secrets: string[]
  /** Responses with status ≥ 500 seen so far (the suites allow none). */
  serverErrors: { method: string; url: string; status: number }[]
  /**
   * Responses that do not match the served OpenAPI document (an undeclared status or header, or a body the
   * declared schema refuses), checked on every response; the suites allow none.
   */
  contractViolations: string[]
  newMerchant(name?: string): Promise<TestMerchant>
  close(): Promise<void>
}

export const DEMO_TEST_RATES: Record<string, string> = {
  USD: '1',
  EUR: '0.92',
  RUB: '92.15',
  JPY: '151.2',
  KWD: '0.307',
}

/**
 * A running app on a fresh database: migrated, with rates, requisites and two merchants. `close()` fails
 * the suite when any response was a 5xx or any secret reached the logs.
 */
export async function createTestContext(
  backend: Backend,
  configOverrides: Partial<Config> = {},
  serviceOptions: ServiceOptions = {},
  /** Kysely plugins on the app's database only (a suite injects database failures with one). */
  appPlugins: KyselyPlugin[] = [],
): Promise<TestContext> {
  const { handle, drop } = await migratedDatabase(backend)
  const config = testConfig(configOverrides)
  const appDb = appPlugins.reduce<Db>((db, plugin) => db.withPlugin(plugin), handle.db)
  const services = createServices(appDb, config, serviceOptions)
  const logs: string[] = []
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(chunk.toString())
      done()
    },
  })
  const logger = createLogger('info', sink)
  const app = await buildApp({ db: appDb, config, services, logger })
  const serverErrors: TestContext['serverErrors'] = []
  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode >= 500)
      serverErrors.push({ method: request.method, url: request.url, status: reply.statusCode })
  })
  // Every answer is checked against the served document, as a third-party client would check it.
  const contractViolations: string[] = []
  let contract: ReturnType<typeof responseContract> | null = null
  app.addHook('onSend', async (request, reply, payload) => {
    if (contract && (typeof payload === 'string' || payload === null || payload === undefined)) {
      const violation = contract.check({
        method: request.method,
        route: request.routeOptions.url,
        url: request.url,
        status: reply.statusCode,
        headers: reply.getHeaders(),
        body: payload ?? '',
        dashboard: request.headers['x-dashboard-mode'] !== undefined,
      })
      if (violation) contractViolations.push(violation)
    }
    return payload
  })
  await app.ready()
  contract = responseContract(app.swagger() as Record<string, unknown>)

  for (const [currency, rate] of Object.entries(DEMO_TEST_RATES))
    await services.rates.setMarketRate(currency, rate)
  await services.requisites.add('p2p_card', {
    card_number: '2200700112345678',
    bank_name: 'Test Bank',
    holder_name: 'A. Smith',
  })
  await services.requisites.add('bank_transfer', {
    account_number: '40817810099910004312',
    bank_name: 'Test Bank',
  })

  const secrets: string[] = [config.masterKey.toString('hex')]
  const newMerchant = async (name = 'Shop') => {
    const { merchant, keys } = await services.merchants.createMerchant({ name })
    secrets.push(keys.test.secret, keys.live.secret)
    return { uuid: merchant.uuid, keys }
  }
  const merchant = await newMerchant('Main Shop')
  const other = await newMerchant('Other Shop')

  return {
    backend,
    handle,
    app,
    db: handle.db,
    config,
    services,
    merchant,
    other,
    logs,
    secrets,
    serverErrors,
    contractViolations,
    newMerchant,
    async close() {
      await app.close()
      await services.close()
      await drop()
      if (serverErrors.length)
        throw new Error(`responses with status >= 500: ${JSON.stringify(serverErrors)}`)
      if (contractViolations.length)
        throw new Error(
          `${contractViolations.length} response(s) do not match the OpenAPI document:\n${[...new Set(contractViolations)].join('\n')}`,
        )
      const leaked = secrets.filter((s) => logs.some((line) => line.includes(s)))
      if (leaked.length) throw new Error(`${leaked.length} secret(s) appeared in the logs`)
    },
  }
}

/**
 * `app.inject` that always ends. A server-sent-events answer (`GET /integration/events/stream`) stays open: it
 * is read until its first message, then the server ends its streams, so that the request completes (and is
 * logged) as any other; its body is what the stream sent until then. Any other answer is read whole.
 */
export async function injectToEnd(ctx: TestContext, options: InjectOptions): Promise<LightMyRequestResponse> {
  const res = await ctx.app.inject({ ...options, payloadAsStream: true })
  const stream = String(res.headers['content-type'] ?? '').startsWith('text/event-stream')
  const chunks: Buffer[] = []
  for await (const chunk of res.stream()) {
    chunks.push(Buffer.from(chunk))
    // Its first messages are written as it opens: ending it once they start to come still delivers them.
    if (stream && chunks.length === 1) ctx.services.webhooks.endStreams()
  }
  const raw = Buffer.concat(chunks)
  const text = raw.toString('utf8')
  return Object.assign(res, { rawPayload: raw, payload: text, body: text, json: () => JSON.parse(text) })
}

export interface CallOptions {
  /** Which credentials: a key of `merchant` (default the context's main merchant, test mode). */
  as?: { merchant?: TestMerchant; mode?: Mode }
  /** `apiKey` (default), `signature`, or `none`. */
  auth?: 'apiKey' | 'signature' | 'none'
  idempotencyKey?: string
  headers?: Record<string, string>
  /** Sent as is instead of JSON.stringify(body). */
  rawBody?: string
  /** Signature timestamp override (unix seconds). */
  timestamp?: number
}

/** One HTTP call through app.inject with the chosen credentials. */
export async function call(
  ctx: TestContext,
  method: InjectOptions['method'],
  url: string,
  body?: unknown,
  options: CallOptions = {},
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON it is answered, field by field.
): Promise<LightMyRequestResponse & { json<T = any>(): T }> {
  const merchant = options.as?.merchant ?? ctx.merchant
  const key = merchant.keys[options.as?.mode ?? 'test']
  const payload = options.rawBody ?? (body === undefined ? undefined : JSON.stringify(body))
  const headers: Record<string, string> = {
    ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
  }
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey
  const auth = options.auth ?? 'apiKey'
  if (auth === 'apiKey') headers['x-api-key'] = key.secret
  if (auth === 'signature') {
    const t = options.timestamp ?? Math.floor(Date.now() / 1000)
    const v1 = sign(key.secret, t, String(method), url, options.idempotencyKey ?? '', payload ?? '')
    headers['x-signature'] = `key_id=${key.key_id},t=${t},v1=${v1}`
  }
  Object.assign(headers, options.headers)
  return ctx.app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) })
}

let counter = 0
/** A unique external_id for a test. */
export const extId = (prefix = 'ord') => `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`

export const newTransaction = (overrides: Record<string, unknown> = {}) => ({
  amount: 150000,
  currency: 'RUB',
  payment_method: 'card',
  external_id: extId(),
  description: 'Order',
  ...overrides,
})

/**
 * A transaction created through the API and reported paid through the sandbox, as `as` (default: the
 * context's merchant, test mode): its JSON as the sandbox answered it. In test mode its money is available at once.
 */
export async function paidTransaction(
  ctx: TestContext,
  overrides: Record<string, unknown> = {},
  as?: CallOptions['as'],
  outcome: 'paid' | 'failed' = 'paid',
) {
  const created = await call(ctx, 'POST', '/integration/transactions', newTransaction(overrides), { as })
  assert.equal(created.statusCode, 201, created.body)
  const done = await call(
    ctx,
    'POST',
    `/integration/sandbox/transactions/${created.json().uuid}/${outcome}`,
    undefined,
    {
      as,
    },
  )
  assert.equal(done.statusCode, 200, done.body)
  return done.json()
}

/** Polls `check` until it returns a value or the deadline passes; never a fixed sleep. */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 5000,
  intervalMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

type NewTransactionRow = import('../../src/db/types.ts').NewTransaction

let rowCounter = 0
/**
 * A complete `transactions` row for direct inserts through `ctx.db`, when a test needs to control columns the
 * API sets itself (created_at, status, uuid). Defaults: a pending 1000.00 RUB card payment in test mode.
 */
export function transactionRow(
  merchantUuid: string,
  overrides: Partial<NewTransactionRow> = {},
): NewTransactionRow {
  const n = rowCounter++
  const createdAt = overrides.created_at ?? new Date()
  return {
    uuid: globalThis.crypto.randomUUID(),
    merchant_uuid: merchantUuid,
    mode: 'test',
    type: 'payment',
    external_id: `row-${n}-${randomBytes(4).toString('hex')}`,
    amount: 100000,
    gross_amount: 100000,
    net_amount: 100000,
    fee_amount: 0,
    fee_bps: 0,
    fee_payer: 'merchant',
    merchant_fee_share_bps: 10000,
    merchant_fee_merchant_amount: 0,
    merchant_fee_customer_amount: 0,
    currency: 'RUB',
    settlement_currency: 'USDT',
    settlement_amount: 10851871,
    fx_rate: '92.15',
    fx_rate_updated_at: createdAt,
    payment_method: 'card',
    status: 'pending',
    description: null,
    metadata: null,
    callback_url: null,
    success_url: null,
    fail_url: null,
    payment_token: randomBytes(16).toString('base64url'),
    requisites: null,
    requisite_uuid: null,
    expires_at: new Date(new Date(createdAt).getTime() + 30 * 60 * 1000),
    paid_at: null,
    settle_available_at: null,
    aggregate_version: 1,
    created_at: createdAt,
    updated_at: createdAt,
    ...overrides,
  }
}

/** One request a receiver got. */
export interface Received {
  headers: Record<string, string | string[] | undefined>
  body: string
  at: number
}

/**
 * A real HTTP server on 127.0.0.1 that records what it receives. `respond` decides each reply
 * (status, optional headers, or `'hang'` to never answer).
 */
export async function startReceiver(
  respond: (
    req: Received,
    index: number,
  ) => { status: number; headers?: Record<string, string>; body?: string } | 'hang' = () => ({ status: 200 }),
) {
  const { createServer } = await import('node:http')
  const received: Received[] = []
  const hanging = new Set<import('node:http').ServerResponse>()
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const entry = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      received.push(entry)
      const answer = respond(entry, received.length - 1)
      if (answer === 'hang') {
        hanging.add(res)
        return
      }
      res.writeHead(answer.status, answer.headers).end(answer.body ?? '')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as import('node:net').AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    /** The parsed bodies received so far. */
    events: () => received.map((r) => JSON.parse(r.body)),
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import type { KyselyPlugin } from 'kysely'
import { buildApp, createLogger, createServices, type ServiceOptions, type Services } from '../../src/app.ts'
import type { Config } from '../../src/config.ts'
import type { Db, DbHandle } from '../../src/db/index.ts'
import type { Mode } from '../../src/db/types.ts'
import { testConfig } from './config.ts'
import { responseContract } from './contract.ts'
import { type Backend, migratedDatabase } from './database.ts'

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

/**
 * The served OpenAPI document (`GET /integration/openapi.json`), and the dashboard's own API's document, made
 * without a database: the app is built on a Kysely that only compiles queries (none runs while a document is
 * made), with a throwaway master key. Run directly, it prints the merchant's document (the dashboard's with
 * `--dashboard`), or writes it to the file named by its argument; `npm run lint:openapi` lints what it writes,
 * and the security suite derives its table of operations from it.
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import type { Database } from '../src/db/types.ts'

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON of any shape.
export type OpenApiDocument = Record<string, any>

const DEFAULT_BASE_URL = 'http://127.0.0.1:3000'

/** What `read` makes of the app, built and ready, without a database. */
async function withApp<T>(publicBaseUrl: string, read: (app: FastifyInstance) => Promise<T>): Promise<T> {
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  })
  const config = loadConfig({
    APP_ENV: 'development',
    MASTER_KEY: randomBytes(32).toString('hex'),
    PUBLIC_BASE_URL: publicBaseUrl,
  })
  const app = await buildApp({ db, config })
  try {
    await app.ready()
    return await read(app)
  } finally {
    await app.close()
  }
}

/** The merchant API's document, as `GET /integration/openapi.json` serves it. */
async function served(app: FastifyInstance): Promise<OpenApiDocument> {
  const res = await app.inject({ method: 'GET', url: '/integration/openapi.json' })
  if (res.statusCode !== 200) throw new Error(`GET /integration/openapi.json answered ${res.statusCode}`)
  return res.json()
}

/**
 * The dashboard's own API's document (`/dashboard/api/…`): not served, so taken from the app itself, through
 * JSON as the served one is (what a generator reads is what a client would).
 */
const dashboardOf = async (app: FastifyInstance): Promise<OpenApiDocument> =>
  JSON.parse(JSON.stringify(app.dashboardSwagger()))

export const openApiDocument = (publicBaseUrl = DEFAULT_BASE_URL) => withApp(publicBaseUrl, served)

export const dashboardOpenApiDocument = (publicBaseUrl = DEFAULT_BASE_URL) =>
  withApp(publicBaseUrl, dashboardOf)

/** Both documents, from one app. */
export const openApiDocuments = (publicBaseUrl = DEFAULT_BASE_URL) =>
  withApp(publicBaseUrl, async (app) => ({ merchant: await served(app), dashboard: await dashboardOf(app) }))

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dashboard = process.argv.includes('--dashboard')
  const make = dashboard ? dashboardOpenApiDocument : openApiDocument
  const text = `${JSON.stringify(await make(process.env.PUBLIC_BASE_URL), null, 2)}\n`
  const target = process.argv.slice(2).find((arg) => arg !== '--dashboard')
  if (target) writeFileSync(target, text)
  else process.stdout.write(text)
}

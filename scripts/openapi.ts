/**
 * Prints the served OpenAPI document (`GET /integration/openapi.json`) without a database: the app is built on a
 * Kysely that only compiles queries (none runs while the document is made), with a throwaway master key.
 * `npm run lint:openapi` lints what this prints.
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import type { Database } from '../src/db/types.ts'

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
  PUBLIC_BASE_URL: process.env.PUBLIC_BASE_URL ?? 'http://127.0.0.1:3000',
})
const app = await buildApp({ db, config })
await app.ready()
const res = await app.inject({ method: 'GET', url: '/integration/openapi.json' })
await app.close()
if (res.statusCode !== 200) throw new Error(`GET /integration/openapi.json answered ${res.statusCode}`)
const text = `${JSON.stringify(res.json(), null, 2)}\n`
const target = process.argv[2]
if (target) writeFileSync(target, text)
else process.stdout.write(text)

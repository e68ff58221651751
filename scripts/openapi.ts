/**
 * The served OpenAPI document (`GET /integration/openapi.json`), made without a database: the app is built on
 * a Kysely that only compiles queries (none runs while the document is made), with a throwaway master key.
 * Run directly, it prints the document, or writes it to the file named by its argument; `npm run lint:openapi`
 * lints what it writes, and the security suite derives its table of operations from it.
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import type { Database } from '../src/db/types.ts'

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON of any shape.
export type OpenApiDocument = Record<string, any>

export async function openApiDocument(publicBaseUrl = 'http://127.0.0.1:3000'): Promise<OpenApiDocument> {
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
    const res = await app.inject({ method: 'GET', url: '/integration/openapi.json' })
    if (res.statusCode !== 200) throw new Error(`GET /integration/openapi.json answered ${res.statusCode}`)
    return res.json()
  } finally {
    await app.close()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const text = `${JSON.stringify(await openApiDocument(process.env.PUBLIC_BASE_URL), null, 2)}\n`
  const target = process.argv[2]
  if (target) writeFileSync(target, text)
  else process.stdout.write(text)
}

import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { parseDatabaseDriver } from '../../src/config.ts'
import type { DatabaseDriver } from '../../src/db/driver/mode.ts'
import {
  connectPglite,
  connectPostgres,
  type Db,
  type DbHandle,
  migrateToLatest,
} from '../../src/db/index.ts'

export type Backend = 'pglite' | 'postgres'

/** Every suite runs on embedded PGlite, and on PostgreSQL too when TEST_DATABASE_URL is set. */
export function backends(): Backend[] {
  const all: Backend[] = process.env.TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite']
  // TEST_BACKENDS (comma-separated) keeps some of them: a run that changes only how PostgreSQL is reached.
  const kept = process.env.TEST_BACKENDS?.split(',').map((name) => name.trim())
  return kept ? all.filter((backend) => kept.includes(backend)) : all
}

/**
 * A fresh database for the suite this is called in, made before its tests and dropped after them. Returns
 * the way to reach it from inside the tests.
 */
/**
 * How the suites' databases are reached: DATABASE_DRIVER, as the program reads it (the driver layer unless
 * `plain`). A test of the layer itself asks for `prepared`.
 */
export const testDriver = (): DatabaseDriver => parseDatabaseDriver(process.env.DATABASE_DRIVER)

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

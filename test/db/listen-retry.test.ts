import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, describe, it } from 'node:test'
import pg from 'pg'
import { connectPostgres, type DbHandle } from '../../src/db/index.ts'
import { eventually } from '../helpers/harness.ts'
import { onPostgres } from '../helpers/postgres.ts'

/**
 * A LISTEN session whose first connection fails (the database is not there yet, as when the service starts
 * before its database accepts it) keeps trying and listens once it can, rather than leaving the caller on
 * polling alone. Only PostgreSQL has a LISTEN session of its own.
 */

const ADMIN_URL = onPostgres()
const CHANNEL = 'mg_test_wake'

describe('LISTEN when the first connection fails (postgres)', () => {
  const name = `mg_test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: ADMIN_URL })
  let handle: DbHandle | undefined
  let unlisten: (() => Promise<void>) | undefined
  const logged: { level: string; message: string; fields: object }[] = []

  after(async () => {
    await unlisten?.()
    await handle?.close()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  })

  it('retries until the database accepts it, then listens and says it recovered', async () => {
    await admin.connect()
    const url = new URL(ADMIN_URL)
    url.pathname = `/${name}`
    handle = await connectPostgres(url.toString(), 4, {
      warn: (fields, message) => logged.push({ level: 'warn', message, fields }),
      info: (fields, message) => logged.push({ level: 'info', message, fields }),
    })
    let notified = 0
    // The database does not exist yet: the first LISTEN cannot succeed.
    unlisten = await handle.listen(CHANNEL, () => {
      notified++
    })
    await eventually(async () => logged.filter((l) => l.message.includes('reconnecting')).length >= 2, 10_000)
    assert.equal(notified, 0)

    await admin.query(`CREATE DATABASE ${name}`)
    await eventually(
      async () => logged.some((l) => l.level === 'info' && l.message.includes('reconnected')),
      15_000,
    )
    const sinceRecovery = notified

    const other = new pg.Client({ connectionString: url.toString() })
    await other.connect()
    try {
      await other.query(`NOTIFY ${CHANNEL}`)
      await eventually(async () => notified > sinceRecovery, 5_000)
    } finally {
      await other.end()
    }
  })
})

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { type DbHandle, migrateToLatest, migrator } from '../../src/db/index.ts'
import { backends, freshDatabase } from '../helpers/harness.ts'

for (const backend of backends()) {
  describe(`migrations over existing rows (${backend})`, () => {
    let fresh: { handle: DbHandle; drop(): Promise<void> }
    before(async () => {
      fresh = await freshDatabase(backend)
    })
    after(() => fresh.drop())

    it("0013 keeps each configured webhook URL's host beside it; a configuration without a URL has none", async () => {
      const { db } = fresh.handle
      const { error } = await migrator(db).migrateTo('0012_api_key_last_used')
      if (error) throw error
      const at = new Date('2026-11-01T00:00:00.000Z')
      await sql`INSERT INTO merchants (uuid, name, created_at, updated_at) VALUES
        ('00000000-0000-4000-8000-000000000001', 'A', ${at}, ${at}),
        ('00000000-0000-4000-8000-000000000002', 'B', ${at}, ${at})`.execute(db)
      await sql`INSERT INTO webhook_configs (merchant_uuid, mode, url, events, secret_sealed, updated_at) VALUES
        ('00000000-0000-4000-8000-000000000001', 'test', 'https://Hooks.Example:443/in', '[]', 's', ${at}),
        ('00000000-0000-4000-8000-000000000001', 'live', 'https://hooks.example:8443/in', '[]', 's', ${at}),
        ('00000000-0000-4000-8000-000000000002', 'test', NULL, '[]', 's', ${at})`.execute(db)

      assert.deepEqual(await migrateTo(db, '0013_webhook_config_target'), ['0013_webhook_config_target'])
      const rows = await db
        .selectFrom('webhook_configs')
        .select(['merchant_uuid', 'mode', 'url', 'target'])
        .orderBy('merchant_uuid')
        .orderBy('mode')
        .execute()
      assert.deepEqual(
        rows.map((r) => [r.mode, r.url, r.target]),
        [
          ['live', 'https://hooks.example:8443/in', 'hooks.example:8443'],
          ['test', 'https://Hooks.Example:443/in', 'hooks.example'],
          ['test', null, null],
        ],
      )

      // An earlier version still running changes a URL without its target: the trigger takes the URL's host.
      await sql`UPDATE webhook_configs SET url = 'https://user:pw@New.Example:8443/x?y=1#z'
        WHERE mode = 'live'`.execute(db)
      await sql`UPDATE webhook_configs SET url = 'http://first.example/h'
        WHERE merchant_uuid = '00000000-0000-4000-8000-000000000002'`.execute(db)
      // This version sets both: its own target stands, even when the host stays the same.
      await sql`UPDATE webhook_configs SET url = 'https://Hooks.Example:443/other', target = 'hooks.example'
        WHERE merchant_uuid = '00000000-0000-4000-8000-000000000001' AND mode = 'test'`.execute(db)
      const after = await db
        .selectFrom('webhook_configs')
        .select(['mode', 'target'])
        .orderBy('merchant_uuid')
        .orderBy('mode')
        .execute()
      assert.deepEqual(
        after.map((r) => [r.mode, r.target]),
        [
          ['live', 'new.example:8443'],
          ['test', 'hooks.example'],
          ['test', 'first.example'],
        ],
      )
    })

    it("0014 moves the list's payment-method and currency filters into the list's index, and back down", async () => {
      const { db } = fresh.handle
      const indexes = async () =>
        (
          await sql<{ indexname: string; indexdef: string }>`
            SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'transactions' ORDER BY indexname`.execute(
            db,
          )
        ).rows
      const listIndexes = async () =>
        (await indexes())
          .filter((i) => /\(merchant_uuid, mode, /.test(i.indexdef) && !/UNIQUE|lower/.test(i.indexdef))
          .map((i) => `${i.indexname}: ${i.indexdef.replace(/^.*USING btree /, '')}`)
      const before = await indexes()

      assert.deepEqual(await migrateToLatest(db), ['0014_transaction_list_filters'])
      assert.deepEqual(await listIndexes(), [
        'transactions_list_filters_idx: (merchant_uuid, mode, created_at DESC, uuid DESC, payment_method, currency)',
        'transactions_status_idx: (merchant_uuid, mode, status, created_at DESC, uuid DESC)',
      ])
      assert.equal((await indexes()).length, before.length - 2)

      assert.deepEqual(await migrateTo(db, '0013_webhook_config_target'), ['0014_transaction_list_filters'])
      assert.deepEqual(await indexes(), before)
      assert.deepEqual(await migrateToLatest(db), ['0014_transaction_list_filters'])
    })
  })
}

async function migrateTo(db: DbHandle['db'], name: string): Promise<string[]> {
  const { error, results } = await migrator(db).migrateTo(name)
  if (error) throw error
  return (results ?? []).map((r) => r.migrationName)
}

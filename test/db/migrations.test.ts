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

      assert.deepEqual(await migrateTo(db, '0014_transaction_list_filters'), [
        '0014_transaction_list_filters',
      ])
      assert.deepEqual(await listIndexes(), [
        'transactions_list_filters_idx: (merchant_uuid, mode, created_at DESC, uuid DESC, payment_method, currency)',
        'transactions_status_idx: (merchant_uuid, mode, status, created_at DESC, uuid DESC)',
      ])
      assert.equal((await indexes()).length, before.length - 2)

      assert.deepEqual(await migrateTo(db, '0013_webhook_config_target'), ['0014_transaction_list_filters'])
      assert.deepEqual(await indexes(), before)
      assert.deepEqual(await migrateTo(db, '0014_transaction_list_filters'), [
        '0014_transaction_list_filters',
      ])
    })

    it("0015 lets an event's delivery read the event's body instead of a copy; down writes the copies back", async () => {
      const { db } = fresh.handle
      const at = new Date('2026-11-02T00:00:00.000Z')
      const merchant = '00000000-0000-4000-8000-000000000001'
      const event = (uuid: string, body: string) => sql`
        INSERT INTO events (uuid, merchant_uuid, mode, event, aggregate_type, aggregate_uuid, aggregate_version, body, occurred_at)
        VALUES (${uuid}, ${merchant}, 'test', 'transaction.paid', 'transaction', ${uuid}, 1, ${body}, ${at})`
      const delivery = (uuid: string, eventId: string, body: string | null) => sql`
        INSERT INTO webhook_deliveries (uuid, event_id, merchant_uuid, mode, event, url, target, body, status, created_at, updated_at)
        VALUES (${uuid}, ${eventId}, ${merchant}, 'test', 'transaction.paid', 'https://hooks.example/in', 'hooks.example',
          ${body}, 'pending', ${at}, ${at})`
      const state = async () => ({
        bodies: (
          await sql<{ uuid: string; body: string | null }>`
            SELECT uuid, body FROM webhook_deliveries ORDER BY uuid`.execute(db)
        ).rows.map((r) => [r.uuid.slice(-1), r.body]),
        nullable: (
          await sql<{ is_nullable: string }>`SELECT is_nullable FROM information_schema.columns
            WHERE table_name = 'webhook_deliveries' AND column_name = 'body'`.execute(db)
        ).rows[0]?.is_nullable,
        options: (
          await sql<{ reloptions: string[] | null }>`
            SELECT reloptions FROM pg_class WHERE relname = 'webhook_deliveries'`.execute(db)
        ).rows[0]?.reloptions,
      })
      // A delivery written before 0015 keeps its copy.
      await event('00000000-0000-7000-8000-00000000000a', '{"v":"a"}').execute(db)
      await delivery(
        '00000000-0000-7000-8000-00000000000b',
        '00000000-0000-7000-8000-00000000000a',
        '{"v":"a"}',
      ).execute(db)
      await assert.rejects(
        delivery(
          '00000000-0000-7000-8000-00000000000d',
          '00000000-0000-7000-8000-00000000000a',
          null,
        ).execute(db),
        /null value in column "body"/,
      )

      assert.deepEqual(await migrateTo(db, '0015_delivery_body_from_event'), [
        '0015_delivery_body_from_event',
      ])
      await event('00000000-0000-7000-8000-00000000000c', '{"v":"c"}').execute(db)
      await delivery(
        '00000000-0000-7000-8000-00000000000d',
        '00000000-0000-7000-8000-00000000000c',
        null,
      ).execute(db)
      assert.deepEqual(await state(), {
        bodies: [
          ['b', '{"v":"a"}'],
          ['d', null],
        ],
        nullable: 'YES',
        options: ['fillfactor=70'],
      })

      assert.deepEqual(await migrateTo(db, '0014_transaction_list_filters'), [
        '0015_delivery_body_from_event',
      ])
      assert.deepEqual(await state(), {
        bodies: [
          ['b', '{"v":"a"}'],
          ['d', '{"v":"c"}'],
        ],
        nullable: 'NO',
        options: null,
      })
      assert.deepEqual(await migrateToLatest(db), ['0015_delivery_body_from_event'])
    })
  })
}

async function migrateTo(db: DbHandle['db'], name: string): Promise<string[]> {
  const { error, results } = await migrator(db).migrateTo(name)
  if (error) throw error
  return (results ?? []).map((r) => r.migrationName)
}

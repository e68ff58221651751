import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { type DbHandle, migrateToLatest, migrator } from '../../src/db/index.ts'
import { COLUMNS_WITHOUT_STATISTICS } from '../../src/db/migrations/0017_transaction_statistics.ts'
import { isUniqueViolation } from '../../src/db/unique.ts'
import * as transactions from '../../src/modules/transactions/repository.ts'
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
      const indexes = () => transactionIndexes(db)
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
      assert.deepEqual(await migrateTo(db, '0015_delivery_body_from_event'), [
        '0015_delivery_body_from_event',
      ])
    })

    it("0016 keeps one unique index on a payment's external_id, which the lookup and the search read, and back down", async () => {
      const { db } = fresh.handle
      const indexes = () => transactionIndexes(db)
      const externalIdIndexes = async () =>
        (await indexes())
          .filter((i) => /external_id/.test(i.indexdef))
          .map(
            (i) =>
              `${i.indexname}: ${i.indexdef.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ USING btree /, '$1')}`,
          )
      const before = await indexes()
      assert.deepEqual(await externalIdIndexes(), [
        'transactions_external_id_key: UNIQUE (merchant_uuid, mode, external_id)',
        'transactions_external_id_prefix_idx: (merchant_uuid, mode, lower(external_id) text_pattern_ops)',
      ])
      const merchant = '00000000-0000-4000-8000-000000000003'
      const at = new Date('2026-11-01T00:00:00.000Z')
      await sql`INSERT INTO merchants (uuid, name, created_at, updated_at) VALUES (${merchant}, 'C', ${at}, ${at})`.execute(
        db,
      )
      const insert = (externalId: string, token: string) =>
        sql`INSERT INTO transactions (uuid, merchant_uuid, mode, type, external_id, amount, gross_amount, net_amount,
            fee_amount, fee_bps, fee_payer, merchant_fee_share_bps, merchant_fee_merchant_amount,
            merchant_fee_customer_amount, currency, settlement_currency, settlement_amount, fx_rate, fx_rate_updated_at,
            payment_method, status, payment_token, expires_at, created_at, updated_at)
          VALUES (gen_random_uuid(), ${merchant}, 'test', 'payment', ${externalId}, 100, 100, 100, 0, 0, 'merchant', 0,
            0, 0, 'RUB', 'USDT', 1, '0.01', ${at}, 'card', 'pending', ${token}, ${at}, ${at}, ${at})`.execute(
          db,
        )
      const duplicate = async (externalId: string, token: string) => {
        const error = await insert(externalId, token).then(
          () => undefined,
          (e: unknown) => e,
        )
        return error && isUniqueViolation(error, 'transactions_external_id_key')
      }
      await insert('Order-1', 'tok-1')

      assert.deepEqual(await migrateTo(db, '0016_transaction_external_id_index'), [
        '0016_transaction_external_id_index',
      ])
      assert.deepEqual(await externalIdIndexes(), [
        'transactions_external_id_key: UNIQUE (merchant_uuid, mode, lower(external_id) text_pattern_ops, external_id)',
      ])
      assert.equal((await indexes()).length, before.length - 1)
      // As unique as the key it replaced, under the key's name: case still tells two external_ids apart.
      assert.equal(await duplicate('Order-1', 'tok-2'), true)
      await insert('order-1', 'tok-3')
      await insert('Order-10', 'tok-4')
      const scope = { merchantUuid: merchant, mode: 'test' as const }
      assert.equal((await transactions.findByExternalId(db, scope, 'Order-1'))?.payment_token, 'tok-1')
      assert.equal((await transactions.findByExternalId(db, scope, 'order-1'))?.payment_token, 'tok-3')
      assert.equal(await transactions.findByExternalId(db, scope, 'ORDER-1'), undefined)
      const prefix = await transactions
        .filtered(db, scope, { search: { text: 'ORDER-1', uuid: null } })
        .select('payment_token')
        .orderBy('payment_token')
        .execute()
      assert.deepEqual(
        prefix.map((r) => r.payment_token),
        ['tok-1', 'tok-3', 'tok-4'],
      )
      // The lookup reaches its entry through the index's lower(external_id), not from the merchant's first entry.
      const plan = await db.transaction().execute(async (trx) => {
        await sql`SET LOCAL enable_seqscan = off`.execute(trx)
        await sql`SET LOCAL enable_bitmapscan = off`.execute(trx)
        const rows = await transactions.byExternalId(trx, scope, 'Order-1').explain()
        return rows.map((r) => String(r['QUERY PLAN'])).join('\n')
      })
      assert.match(plan, /Index Scan using transactions_external_id_key/)
      assert.match(plan, /Index Cond: \(.*lower\(external_id\) = 'order-1'/)

      assert.deepEqual(await migrateTo(db, '0015_delivery_body_from_event'), [
        '0016_transaction_external_id_index',
      ])
      assert.deepEqual(await indexes(), before)
      assert.equal(await duplicate('order-1', 'tok-5'), true)
      assert.deepEqual(await migrateTo(db, '0016_transaction_external_id_index'), [
        '0016_transaction_external_id_index',
      ])
    })

    it('0017 stops ANALYZE computing statistics for the columns no query filters by, and back down', async () => {
      const { db } = fresh.handle
      const targets = async () => {
        // PostgreSQL 15 keeps -1 for the default target, 17 (PGlite) NULL.
        const { rows } = await sql<{ attname: string; target: number }>`
          SELECT attname, coalesce(attstattarget, -1)::int AS target FROM pg_attribute
          WHERE attrelid = 'transactions'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attname`.execute(
          db,
        )
        return Object.fromEntries(rows.map((r) => [r.attname, r.target]))
      }
      const before = await targets()
      assert.ok(Object.values(before).every((t) => t === -1))
      assert.deepEqual(await migrateTo(db, '0017_transaction_statistics'), ['0017_transaction_statistics'])
      const after = await targets()
      const withoutStatistics = new Set<string>(COLUMNS_WITHOUT_STATISTICS)
      for (const [column, target] of Object.entries(after))
        assert.equal(target, withoutStatistics.has(column) ? 0 : -1, column)
      assert.deepEqual(Object.keys(after), Object.keys(before))
      // Every column the service's queries filter, join, group or sort by (besides the unique keys) keeps its target.
      for (const column of [
        'merchant_uuid',
        'mode',
        'status',
        'payment_method',
        'currency',
        'created_at',
        'external_id',
        'description',
        'expires_at',
        'paid_at',
        'settled_at',
        'settle_available_at',
      ])
        assert.equal(withoutStatistics.has(column), false, column)

      // 2,000 payments of one merchant, then what ANALYZE keeps (in this database, never analysed before: an upgraded
      // one keeps the rows it had for these columns).
      const merchant = '00000000-0000-4000-8000-000000000004'
      const at = new Date('2026-11-01T00:00:00.000Z')
      await sql`INSERT INTO merchants (uuid, name, created_at, updated_at) VALUES (${merchant}, 'D', ${at}, ${at})`.execute(
        db,
      )
      await sql`INSERT INTO transactions (uuid, merchant_uuid, mode, type, external_id, amount, gross_amount, net_amount,
          fee_amount, fee_bps, fee_payer, merchant_fee_share_bps, merchant_fee_merchant_amount,
          merchant_fee_customer_amount, currency, settlement_currency, settlement_amount, fx_rate, fx_rate_updated_at,
          payment_method, status, description, payment_token, expires_at, created_at, updated_at)
        SELECT gen_random_uuid(), ${merchant}, 'test', 'payment', 'stat-' || i, 100 + i, 100 + i, 100 + i, 0, 0,
          'merchant', 0, 0, 0, CASE WHEN i % 4 = 0 THEN 'KZT' ELSE 'RUB' END, 'USDT', 1, '0.01', ${at}, 'card',
          CASE WHEN i % 10 = 0 THEN 'paid' ELSE 'pending' END, 'order ' || i, 'stat-token-' || i, ${at},
          ${at}::timestamptz + i * interval '1 second', ${at}
        FROM generate_series(1, 2000) AS i`.execute(db)
      await sql`ANALYZE transactions`.execute(db)
      const { rows: stats } = await sql<{ tablename: string; attname: string }>`
        SELECT tablename, attname FROM pg_stats
        WHERE tablename = 'transactions' OR tablename IN (SELECT indexname FROM pg_indexes WHERE tablename = 'transactions')`.execute(
        db,
      )
      const analysed = new Set(stats.map((s) => `${s.tablename}.${s.attname}`))
      for (const column of COLUMNS_WITHOUT_STATISTICS)
        assert.equal(analysed.has(`transactions.${column}`), false, column)
      for (const column of [
        'merchant_uuid',
        'mode',
        'status',
        'currency',
        'created_at',
        'description',
        'external_id',
      ])
        assert.equal(analysed.has(`transactions.${column}`), true, column)
      // The indexes' expressions, which the search's estimates read, keep theirs.
      assert.ok(analysed.has('transactions_description_trgm_idx.lower'), [...analysed].join(', '))
      assert.ok(analysed.has('transactions_external_id_key.lower'), [...analysed].join(', '))
      // The unique keys without statistics: the planner still expects one row from a uuid or a token (as it did with
      // them: a guard, not the migration's effect).
      const estimate = async (where: ReturnType<typeof sql>) => {
        const { rows } = await sql<{
          'QUERY PLAN': string
        }>`EXPLAIN SELECT * FROM transactions WHERE ${where}`.execute(db)
        return Number(/rows=(\d+)/.exec(rows.map((r) => r['QUERY PLAN']).join('\n'))?.[1])
      }
      assert.equal(await estimate(sql`payment_token = 'stat-token-7'`), 1)
      assert.equal(await estimate(sql`uuid = '00000000-0000-4000-8000-0000000000ff'`), 1)
      // A column that keeps its statistics still tells a rare value from a common one.
      assert.ok((await estimate(sql`status = 'paid'`)) < 400)
      assert.ok((await estimate(sql`status = 'pending'`)) > 1600)

      assert.deepEqual(await migrateTo(db, '0016_transaction_external_id_index'), [
        '0017_transaction_statistics',
      ])
      assert.deepEqual(await targets(), before)
      assert.deepEqual(await migrateTo(db, '0017_transaction_statistics'), ['0017_transaction_statistics'])
    })

    it('0018 adds the connector accounts, their callback secrets and callback log, and back down', async () => {
      const { db } = fresh.handle
      const tables = () => tablesLike(db, 'connector%')
      assert.deepEqual(await migrateTo(db, '0018_connector_accounts'), ['0018_connector_accounts'])
      assert.deepEqual(await tables(), [
        'connector_accounts',
        'connector_callback_secrets',
        'connector_callbacks',
        'connector_routes',
      ])
      // One name per account, and only the two modes and statuses.
      const at = new Date('2026-12-01T00:00:00.000Z')
      const account = {
        name: 'acquirer',
        kind: 'http-acquirer',
        settings: '{}',
        created_at: at,
        updated_at: at,
      }
      await db
        .insertInto('connector_accounts')
        .values({ ...account, uuid: '00000000-0000-4000-8000-000000000018', mode: 'live', status: 'enabled' })
        .execute()
      for (const row of [
        { uuid: '00000000-0000-4000-8000-000000000019', mode: 'live', status: 'enabled' },
        { uuid: '00000000-0000-4000-8000-00000000001a', name: 'other', mode: 'staging', status: 'enabled' },
        { uuid: '00000000-0000-4000-8000-00000000001b', name: 'other', mode: 'test', status: 'paused' },
      ])
        await assert.rejects(
          db
            .insertInto('connector_accounts')
            .values({ ...account, ...row } as never)
            .execute(),
        )
      assert.deepEqual(await migrateTo(db, '0017_transaction_statistics'), ['0018_connector_accounts'])
      assert.deepEqual(await tables(), [])
      await upToNewest(db, '0017_transaction_statistics')
    })

    it('0019 adds hand-overs, attempts and reviews, and the callback results stale and review', async () => {
      const { db } = fresh.handle
      const tables = () => tablesLike(db, 'payment\\_%')
      await migrateTo(db, '0018_connector_accounts')
      const at = new Date('2026-12-01T00:00:00.000Z')
      const accountUuid = '00000000-0000-4000-8000-000000000190'
      await db
        .insertInto('connector_accounts')
        .values({
          uuid: accountUuid,
          name: 'acquirer-0019',
          kind: 'http-acquirer',
          mode: 'live',
          status: 'enabled',
          settings: '{}',
          created_at: at,
          updated_at: at,
        })
        .execute()
      const callback = (uuid: string, result: string) =>
        db
          .insertInto('connector_callbacks')
          .values({
            uuid,
            account_uuid: accountUuid,
            received_at: at,
            headers: '{}',
            body: '{}',
            verification: 'verified',
            result,
            detail: '',
          } as never)
          .execute()
      await assert.rejects(callback('00000000-0000-4000-8000-000000000191', 'review'))
      assert.deepEqual(await migrateTo(db, '0019_payment_handovers'), ['0019_payment_handovers'])
      assert.deepEqual(await tables(), ['payment_attempts', 'payment_handovers', 'payment_reviews'])
      await callback('00000000-0000-4000-8000-000000000192', 'review')
      await callback('00000000-0000-4000-8000-000000000193', 'applied')
      await assert.rejects(callback('00000000-0000-4000-8000-000000000194', 'ignored'))
      assert.deepEqual(await migrateTo(db, '0018_connector_accounts'), ['0019_payment_handovers'])
      assert.deepEqual(await tables(), [])
      const kept = await db
        .selectFrom('connector_callbacks')
        .select('result')
        .where('account_uuid', '=', accountUuid)
        .execute()
      assert.deepEqual(kept, [{ result: 'applied' }])
      await upToNewest(db, '0018_connector_accounts')
    })

    it("0020 gives refunds and payouts the account that has them, unique with the account's reference, and back down", async () => {
      const { db } = fresh.handle
      const columns = async () => {
        const { rows } = await sql<{ name: string }>`
          SELECT table_name || '.' || column_name AS name FROM information_schema.columns
          WHERE table_schema = current_schema() AND column_name = 'account_uuid'
            AND table_name IN ('refunds', 'payouts') ORDER BY name`.execute(db)
        return rows.map((r) => r.name)
      }
      await downFromNewest(db, '0019_payment_handovers')
      assert.deepEqual(await columns(), [])
      const at = new Date('2026-12-01T00:00:00.000Z')
      const accountUuid = '00000000-0000-4000-8000-000000000190'
      const payout = (n: number, extra: Record<string, unknown> = {}) =>
        db
          .insertInto('payouts')
          .values({
            uuid: `00000000-0000-4000-8000-00000000020${n}`,
            merchant_uuid: '00000000-0000-4000-8000-000000000001',
            mode: 'live',
            external_id: `po-0020-${n}`,
            amount: 10000,
            currency: 'USD',
            method: 'usdt_wallet',
            destination: '{}',
            fx_rate: '1',
            fx_rate_updated_at: at,
            amount_usdt_micro: 100_000_000,
            fee_usdt_micro: 0,
            payout_usdt_amount_micro: 100_000_000,
            status: 'processing',
            failure_reason: null,
            provider_reference: 'po_1',
            metadata: null,
            callback_url: null,
            action_request_id: `00000000-0000-4000-8000-00000000021${n}`,
            aggregate_version: 1,
            created_at: at,
            updated_at: at,
            ...extra,
          } as never)
          .execute()
      // A payout of the simulator's, from before.
      await payout(0)
      assert.deepEqual(await migrateTo(db, '0020_refund_payout_accounts'), ['0020_refund_payout_accounts'])
      assert.deepEqual(await columns(), ['payouts.account_uuid', 'refunds.account_uuid'])
      await payout(1, { account_uuid: accountUuid })
      // An account answers one reference for one payout; the simulator's references are its own.
      await assert.rejects(payout(2, { account_uuid: accountUuid }), (error) =>
        isUniqueViolation(error, 'payouts_account_reference'),
      )
      await payout(3)
      await assert.rejects(payout(4, { account_uuid: '00000000-0000-4000-8000-0000000001ff' }))
      const rows = await db
        .selectFrom('payouts')
        .select(['external_id', 'account_uuid'])
        .where('external_id', 'like', 'po-0020-%')
        .orderBy('external_id')
        .execute()
      assert.deepEqual(rows, [
        { external_id: 'po-0020-0', account_uuid: null },
        { external_id: 'po-0020-1', account_uuid: accountUuid },
        { external_id: 'po-0020-3', account_uuid: null },
      ])
      assert.deepEqual(await migrateTo(db, '0019_payment_handovers'), ['0020_refund_payout_accounts'])
      assert.deepEqual(await columns(), [])
      const kept = await db
        .selectFrom('payouts')
        .select('external_id')
        .where('external_id', 'like', 'po-0020-%')
        .execute()
      assert.equal(kept.length, 3)
      await upToNewest(db, '0019_payment_handovers')
    })

    it("0021 keeps hot wallets' nonces and signed payout transactions, one hash once, and back down", async () => {
      const { db } = fresh.handle
      await downFromNewest(db, '0020_refund_payout_accounts')
      assert.deepEqual(await tablesLike(db, 'chain_%'), [])
      assert.deepEqual(await migrateTo(db, '0021_chain_payouts'), ['0021_chain_payouts'])
      assert.deepEqual(await tablesLike(db, 'chain_%'), ['chain_transactions', 'chain_wallets'])
      const at = new Date('2026-12-07T00:00:00.000Z')
      const wallet = { chain_id: 31337, address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' }
      await db
        .insertInto('chain_wallets')
        .values({ ...wallet, next_nonce: 0, created_at: at, updated_at: at })
        .execute()
      await assert.rejects(
        db
          .insertInto('chain_wallets')
          .values({ ...wallet, next_nonce: 5, created_at: at, updated_at: at })
          .execute(),
        (error) => isUniqueViolation(error, 'chain_wallets_pkey'),
      )
      const payoutUuid = (
        await db
          .selectFrom('payouts')
          .select('uuid')
          .where('external_id', '=', 'po-0020-0')
          .executeTakeFirstOrThrow()
      ).uuid
      const signed = (n: number, hash: string, payout = payoutUuid) =>
        db
          .insertInto('chain_transactions')
          .values({
            uuid: `00000000-0000-4000-8000-00000000021${n}`,
            payout_uuid: payout,
            chain_id: wallet.chain_id,
            wallet: wallet.address,
            nonce: 0,
            hash,
            raw: '0x02',
            max_fee_per_gas: '123456789012345678901234567890',
            max_priority_fee_per_gas: '1',
            replaces_uuid: null,
            signed_at_block: 1,
            created_at: at,
          })
          .execute()
      await signed(0, '0xaa')
      await assert.rejects(signed(1, '0xaa'), (error) =>
        isUniqueViolation(error, 'chain_transactions_hash_key'),
      )
      // Only a payout's transactions: none without one.
      await assert.rejects(signed(2, '0xbb', '00000000-0000-4000-8000-0000000002ff'))
      const [kept] = await db.selectFrom('chain_transactions').select(['max_fee_per_gas', 'nonce']).execute()
      assert.deepEqual(kept, { max_fee_per_gas: '123456789012345678901234567890', nonce: 0 })
      assert.deepEqual(await migrateTo(db, '0020_refund_payout_accounts'), ['0021_chain_payouts'])
      assert.deepEqual(await tablesLike(db, 'chain_%'), [])
      await upToNewest(db, '0020_refund_payout_accounts')
    })

    it('0022 keeps deposit addresses once a payment and an index once an account, transfers once, and back down', async () => {
      const { db } = fresh.handle
      await downFromNewest(db, '0021_chain_payouts')
      assert.deepEqual(await tablesLike(db, 'chain_%'), ['chain_transactions', 'chain_wallets'])
      await upToNewest(db, '0021_chain_payouts')
      const at = new Date('2026-12-07T00:00:00.000Z')
      const account = (
        await db.selectFrom('connector_accounts').select('uuid').orderBy('uuid').executeTakeFirstOrThrow()
      ).uuid
      const [first, second] = (
        await db.selectFrom('transactions').select('uuid').orderBy('uuid').limit(2).execute()
      ).map((row) => row.uuid)
      const deposit = (payment: string | undefined, index: number, address: string) =>
        db
          .insertInto('chain_deposits')
          .values({
            transaction_uuid: payment as string,
            account_uuid: account,
            derivation_index: index,
            address,
            amount: '1000000000000000000000',
            created_at: at,
          })
          .execute()
      await deposit(first, 0, '0xaa')
      await assert.rejects(deposit(first, 1, '0xbb'), (error) =>
        isUniqueViolation(error, 'chain_deposits_pkey'),
      )
      await assert.rejects(deposit(second, 0, '0xbb'), (error) =>
        isUniqueViolation(error, 'chain_deposits_index_key'),
      )
      await assert.rejects(deposit(second, 1, '0xaa'), (error) =>
        isUniqueViolation(error, 'chain_deposits_address_key'),
      )
      const transfer = () =>
        db
          .insertInto('chain_transfers')
          .values({
            account_uuid: account,
            transaction_hash: '0xcc',
            log_index: 3,
            block_number: 7,
            block_hash: '0xdd',
            payment_uuid: first as string,
            sender: '0xee',
            amount: '5',
            counted_at: null,
            created_at: at,
          })
          .execute()
      await transfer()
      await assert.rejects(transfer(), (error) => isUniqueViolation(error, 'chain_transfers_pkey'))
      const [kept] = await db.selectFrom('chain_deposits').select('amount').execute()
      assert.deepEqual(kept, { amount: '1000000000000000000000' })
      await downFromNewest(db, '0021_chain_payouts')
      assert.deepEqual(await tablesLike(db, 'chain_%'), ['chain_transactions', 'chain_wallets'])
      await upToNewest(db, '0021_chain_payouts')
    })

    it('0023 gives API keys an optional name, and back down', async () => {
      const { db } = fresh.handle
      const columns = async () => {
        const { rows } = await sql<{ name: string }>`
          SELECT column_name AS name FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = 'api_keys' AND column_name = 'name'`.execute(
          db,
        )
        return rows.map((r) => r.name)
      }
      await downFromNewest(db, '0022_chain_deposits')
      assert.deepEqual(await columns(), [])
      const at = new Date('2026-12-07T00:00:00.000Z')
      const key = (keyId: string) => ({
        uuid: `00000000-0000-4000-8000-0000000023${keyId.slice(-2)}`,
        merchant_uuid: '00000000-0000-4000-8000-000000000001',
        key_id: keyId,
        mode: 'test' as const,
        secret_hash: `hash-${keyId}`,
        secret_sealed: 'sealed',
        secret_last4: 'abcd',
        created_at: at,
        revoked_at: null,
      })
      await db.insertInto('api_keys').values(key('mk_test_0023_01')).execute()
      await upToNewest(db, '0022_chain_deposits')
      assert.deepEqual(await columns(), ['name'])
      const names = () =>
        db
          .selectFrom('api_keys')
          .select(['key_id', 'name'])
          .where('key_id', 'like', 'mk\\_test\\_0023\\_%')
          .orderBy('key_id')
          .execute()
      assert.deepEqual(await names(), [{ key_id: 'mk_test_0023_01', name: null }])
      await db
        .insertInto('api_keys')
        .values({ ...key('mk_test_0023_02'), name: 'Checkout server' })
        .execute()
      assert.deepEqual(await names(), [
        { key_id: 'mk_test_0023_01', name: null },
        { key_id: 'mk_test_0023_02', name: 'Checkout server' },
      ])
      await downFromNewest(db, '0022_chain_deposits')
      assert.deepEqual(await columns(), [])
      await upToNewest(db, '0022_chain_deposits')
    })
  })
}

async function migrateTo(db: DbHandle['db'], name: string): Promise<string[]> {
  const { error, results } = await migrator(db).migrateTo(name)
  if (error) throw error
  return (results ?? []).map((r) => r.migrationName)
}

/** The names of the migrations newer than `name`, oldest first. */
async function migrationsAfter(db: DbHandle['db'], name: string): Promise<string[]> {
  const names = (await migrator(db).getMigrations()).map((m) => m.name)
  assert.ok(names.includes(name), `no migration ${name}`)
  return names.slice(names.indexOf(name) + 1)
}

/** Goes up from `name` (the newest applied) to the newest, checking that each newer migration ran, in order. */
async function upToNewest(db: DbHandle['db'], name: string): Promise<void> {
  assert.deepEqual(await migrateToLatest(db), await migrationsAfter(db, name))
}

/** Goes down from the newest to `name`, checking that each newer migration was undone, newest first. */
async function downFromNewest(db: DbHandle['db'], name: string): Promise<void> {
  assert.deepEqual(await migrateTo(db, name), (await migrationsAfter(db, name)).reverse())
}

/** The names of the schema's tables that are LIKE `pattern`, in order. */
async function tablesLike(db: DbHandle['db'], pattern: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_name LIKE ${pattern} ORDER BY table_name`.execute(db)
  return rows.map((r) => r.name)
}

/** The indexes of `transactions`, by name, with their definitions. */
async function transactionIndexes(db: DbHandle['db']): Promise<{ indexname: string; indexdef: string }[]> {
  const { rows } = await sql<{ indexname: string; indexdef: string }>`
    SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'transactions' ORDER BY indexname`.execute(
    db,
  )
  return rows
}

import { type Kysely, sql } from 'kysely'
import { uniqueIndex } from './tables.ts'

/**
 * Refunds and payouts handed to connector accounts (docs/OPERATIONS.md, Refunds and payouts at an account).
 *
 * `account_uuid` is the account a refund or payout was handed to: for a refund, the account that has its payment;
 * for a payout, the first account of its payout route. Null for one the in-process simulator has, as every row
 * before this migration. With `provider_reference` (the account's reference of the refund or payout) it finds
 * what a callback is about; the reference is unique within an account.
 */
const TABLES = ['refunds', 'payouts'] as const

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    await db.schema
      .alterTable(table)
      .addColumn('account_uuid', 'uuid', (c) => c.references('connector_accounts.uuid'))
      .execute()
    await uniqueIndex(db, `${table}_account_reference`, table, ['account_uuid', 'provider_reference'])
      .where((eb) =>
        eb.and([
          eb(sql.ref('account_uuid'), 'is not', null),
          eb(sql.ref('provider_reference'), 'is not', null),
        ]),
      )
      .execute()
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    await db.schema.dropIndex(`${table}_account_reference`).execute()
    await db.schema.alterTable(table).dropColumn('account_uuid').execute()
  }
}

import { type Kysely, sql } from 'kysely'
import { createChildTable, createIndex, TIMESTAMP, withTimestamps } from './tables.ts'

/**
 * Payouts an `evm-erc20` account pays itself, from its hot wallet (docs/CONNECTORS.md, The evm-erc20 kind).
 *
 * `chain_wallets` is each hot wallet's next nonce on its chain: a payout's transaction takes it under the row's
 * lock, and the row moves on in the same database transaction, so any number of workers never take one nonce
 * twice nor leave one unused.
 *
 * `chain_transactions` is every signed transaction, kept (with its raw bytes, nonce, fees and hash) before it is
 * broadcast: after a crash the same bytes are broadcast again, never a new transaction. A replacement (the same
 * nonce with higher fees) is another row of the same payout, naming the one it replaces; whichever is mined is the
 * one counted, and the others can never be (one nonce is mined once).
 *
 * `payouts.transaction_hash` is the hash of the transaction that pays a payout, as the API shows it: the first
 * broadcast, then the one mined.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await withTimestamps(
    db.schema
      .createTable('chain_wallets')
      .addColumn('chain_id', 'bigint', (c) => c.notNull())
      .addColumn('address', 'text', (c) => c.notNull())
      .addColumn('next_nonce', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('chain_wallets_pkey', ['chain_id', 'address']),
  ).execute()
  await createChildTable(db, 'chain_transactions', 'payout_uuid', 'payouts.uuid')
    .addColumn('chain_id', 'bigint', (c) => c.notNull())
    .addColumn('wallet', 'text', (c) => c.notNull())
    .addColumn('nonce', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull().unique())
    .addColumn('raw', 'text', (c) => c.notNull())
    .addColumn('max_fee_per_gas', sql`numeric(78, 0)`, (c) => c.notNull())
    .addColumn('max_priority_fee_per_gas', sql`numeric(78, 0)`, (c) => c.notNull())
    .addColumn('replaces_uuid', 'uuid', (c) => c.references('chain_transactions.uuid'))
    /** The chain's height when this transaction was signed: how long it has waited is counted from there. */
    .addColumn('signed_at_block', 'bigint', (c) => c.notNull())
    .addColumn('created_at', TIMESTAMP, (c) => c.notNull())
    .execute()
  await createIndex(db, 'chain_transactions_payout', 'chain_transactions', ['payout_uuid', 'created_at'])
  await createIndex(db, 'chain_transactions_nonce', 'chain_transactions', ['chain_id', 'wallet', 'nonce'])
  await db.schema.alterTable('payouts').addColumn('transaction_hash', 'text').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('payouts').dropColumn('transaction_hash').execute()
  await db.schema.dropTable('chain_transactions').execute()
  await db.schema.dropTable('chain_wallets').execute()
}

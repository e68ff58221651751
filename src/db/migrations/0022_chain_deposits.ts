import { type Kysely, sql } from 'kysely'
import { createIndex, TIMESTAMP, withTimestamps } from './tables.ts'

/**
 * USDT deposits an `evm-erc20` account takes on its chain (docs/CONNECTORS.md, Deposits).
 *
 * `chain_deposit_keys` is each account's next derivation index: a payment's deposit address is derived from the
 * account's extended public key at an index taken from this row, and the row moves on in the same statement, so
 * an index is never given twice (a try that fails after taking one leaves it unused, never reused).
 *
 * `chain_deposits` is each payment's address, its index and the amount asked, in token units. An address is one
 * payment's, whatever the account: two accounts given the same key never share one.
 *
 * `chain_cursors` is where the account's chain watcher stands (the last block it read, by height and hash) and
 * which worker leads it (a lease, so that one process at a time follows the chain and a killed one is taken over).
 * `chain_blocks` keeps the hashes of the blocks the cursor stood on, so that a reorganisation is traced back to
 * the last block both chains share.
 *
 * `chain_transfers` is every Transfer of the token to a deposit address, recorded once (by its transaction's hash
 * and log index) with its block; it counts for the payment once it has the account's confirmations, and a transfer
 * of a block reorganised away before that is taken back. `transactions.amount_received` is what the payment
 * received in all, as counted.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await withTimestamps(
    db.schema
      .createTable('chain_deposit_keys')
      .addColumn('account_uuid', 'uuid', (c) => c.primaryKey().references('connector_accounts.uuid'))
      .addColumn('next_index', 'bigint', (c) => c.notNull()),
  ).execute()
  await db.schema
    .createTable('chain_deposits')
    .addColumn('transaction_uuid', 'uuid', (c) => c.primaryKey().references('transactions.uuid'))
    .addColumn('account_uuid', 'uuid', (c) => c.notNull().references('connector_accounts.uuid'))
    .addColumn('derivation_index', 'bigint', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('amount', sql`numeric(78, 0)`, (c) => c.notNull())
    .addColumn('created_at', TIMESTAMP, (c) => c.notNull())
    .addUniqueConstraint('chain_deposits_index_key', ['account_uuid', 'derivation_index'])
    .addUniqueConstraint('chain_deposits_address_key', ['address'])
    .execute()
  await withTimestamps(
    db.schema
      .createTable('chain_cursors')
      .addColumn('account_uuid', 'uuid', (c) => c.primaryKey().references('connector_accounts.uuid'))
      .addColumn('block_number', 'bigint', (c) => c.notNull())
      .addColumn('block_hash', 'text', (c) => c.notNull())
      .addColumn('leader', 'text')
      .addColumn('lease_until', TIMESTAMP),
  ).execute()
  await db.schema
    .createTable('chain_blocks')
    .addColumn('account_uuid', 'uuid', (c) => c.notNull().references('connector_accounts.uuid'))
    .addColumn('block_number', 'bigint', (c) => c.notNull())
    .addColumn('block_hash', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('chain_blocks_pkey', ['account_uuid', 'block_number'])
    .execute()
  await db.schema
    .createTable('chain_transfers')
    .addColumn('account_uuid', 'uuid', (c) => c.notNull().references('connector_accounts.uuid'))
    .addColumn('transaction_hash', 'text', (c) => c.notNull())
    .addColumn('log_index', 'integer', (c) => c.notNull())
    .addColumn('block_number', 'bigint', (c) => c.notNull())
    .addColumn('block_hash', 'text', (c) => c.notNull())
    .addColumn('payment_uuid', 'uuid', (c) => c.notNull().references('transactions.uuid'))
    .addColumn('sender', 'text', (c) => c.notNull())
    .addColumn('amount', sql`numeric(78, 0)`, (c) => c.notNull())
    .addColumn('counted_at', TIMESTAMP)
    .addColumn('created_at', TIMESTAMP, (c) => c.notNull())
    .addPrimaryKeyConstraint('chain_transfers_pkey', ['account_uuid', 'transaction_hash', 'log_index'])
    .execute()
  await createIndex(db, 'chain_transfers_payment', 'chain_transfers', ['payment_uuid', 'block_number'])
  await sql`CREATE INDEX chain_transfers_uncounted ON chain_transfers (account_uuid, block_number) WHERE counted_at IS NULL`.execute(
    db,
  )
  await db.schema.alterTable('transactions').addColumn('amount_received', 'bigint').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('transactions').dropColumn('amount_received').execute()
  for (const table of [
    'chain_transfers',
    'chain_blocks',
    'chain_cursors',
    'chain_deposits',
    'chain_deposit_keys',
  ])
    await db.schema.dropTable(table).execute()
}

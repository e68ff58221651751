import { type Kysely, sql } from 'kysely'
import { createChildTable, createIndex, createOwnedTable } from './tables.ts'

export async function up(db: Kysely<unknown>): Promise<void> {
  // One account per merchant, mode, currency and kind; `balance` is kept from the journal in the same
  // transaction as every entry, and `ledger verify` recomputes it from the lines.
  await createOwnedTable(db, 'ledger_accounts')
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('balance', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addUniqueConstraint('ledger_accounts_key', ['merchant_uuid', 'mode', 'currency', 'kind'])
    .execute()

  await createOwnedTable(db, 'journal_entries')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('reference_type', 'text', (c) => c.notNull())
    .addColumn('reference_uuid', 'uuid', (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    // The same movement for the same cause is posted once, however often the cause is replayed.
    .addUniqueConstraint('journal_entries_once', ['reference_type', 'reference_uuid', 'kind'])
    .execute()

  await createChildTable(db, 'journal_lines', 'entry_uuid', 'journal_entries.uuid')
    .addColumn('account_uuid', 'uuid', (c) => c.notNull().references('ledger_accounts.uuid'))
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .execute()
  await createIndex(db, 'journal_lines_entry_idx', 'journal_lines', ['entry_uuid'])
  await createIndex(db, 'journal_lines_account_idx', 'journal_lines', ['account_uuid'])

  await db.schema.alterTable('transactions').addColumn('settled_at', sql`timestamptz(3)`).execute()
  await sql`CREATE INDEX transactions_settlement_idx ON transactions (settle_available_at) WHERE settled_at IS NULL AND paid_at IS NOT NULL`.execute(
    db,
  )
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('transactions').dropColumn('settled_at').execute()
  for (const table of ['journal_lines', 'journal_entries', 'ledger_accounts'])
    await db.schema.dropTable(table).ifExists().execute()
}

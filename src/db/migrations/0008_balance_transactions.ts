import { type Kysely, sql } from 'kysely'

/**
 * Balance transactions (GET /integration/balance-transactions): the lines of the merchant's own accounts
 * (available, pending, reserved), newest first. A line carries neither its time nor whose it is, and a
 * merchant's lines are spread over several accounts (three per currency): an index on the account would still
 * sort all of a merchant's lines for every page. So each line gets a copy of its account's key (merchant, mode,
 * currency, kind) and of its entry's time, and two partial indexes hold exactly the lines of merchant balances
 * in list order: a page, filtered or not by currency, is one index range scan, deep in the list as on page one.
 *
 * The copies never change (an account's key and an entry's time are fixed). A foreign key from the line's
 * account and its copied key to the account's makes a line that disagrees with its account impossible; it
 * replaces the foreign key on the account alone, so a posting checks one key per line as before.
 *
 * The backfill rewrites journal_lines in the migration's transaction, which postings wait for: on a large
 * journal, migrate at a quiet time (docs/OPERATIONS.md §11).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('journal_lines')
    .addColumn('merchant_uuid', 'uuid')
    .addColumn('mode', 'text')
    .addColumn('currency', 'text')
    .addColumn('account_kind', 'text')
    .addColumn('created_at', sql`timestamptz(3)`)
    .execute()
  await sql`
    UPDATE journal_lines l
    SET merchant_uuid = a.merchant_uuid, mode = a.mode, currency = a.currency, account_kind = a.kind,
        created_at = e.created_at
    FROM ledger_accounts a, journal_entries e
    WHERE a.uuid = l.account_uuid AND e.uuid = l.entry_uuid`.execute(db)
  for (const column of ['merchant_uuid', 'mode', 'currency', 'account_kind', 'created_at'])
    await db.schema
      .alterTable('journal_lines')
      .alterColumn(column, (c) => c.setNotNull())
      .execute()

  await sql`ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_line_key UNIQUE (uuid, merchant_uuid, mode, currency, kind)`.execute(
    db,
  )
  await sql`
    ALTER TABLE journal_lines ADD CONSTRAINT journal_lines_account_key_fkey
    FOREIGN KEY (account_uuid, merchant_uuid, mode, currency, account_kind)
    REFERENCES ledger_accounts (uuid, merchant_uuid, mode, currency, kind)`.execute(db)
  await sql`ALTER TABLE journal_lines DROP CONSTRAINT journal_lines_account_uuid_fkey`.execute(db)

  // A process of the previous version, still running during a rolling upgrade, writes lines without the
  // copies: they are filled in from the account and the entry, before the foreign key checks them.
  await sql`
    CREATE FUNCTION journal_lines_fill_copies() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.merchant_uuid IS NULL OR NEW.mode IS NULL OR NEW.currency IS NULL OR NEW.account_kind IS NULL THEN
        SELECT a.merchant_uuid, a.mode, a.currency, a.kind
          INTO NEW.merchant_uuid, NEW.mode, NEW.currency, NEW.account_kind
          FROM ledger_accounts a WHERE a.uuid = NEW.account_uuid;
      END IF;
      IF NEW.created_at IS NULL THEN
        SELECT e.created_at INTO NEW.created_at FROM journal_entries e WHERE e.uuid = NEW.entry_uuid;
      END IF;
      RETURN NEW;
    END $$`.execute(db)
  await sql`
    CREATE TRIGGER journal_lines_fill_copies BEFORE INSERT ON journal_lines
    FOR EACH ROW EXECUTE FUNCTION journal_lines_fill_copies()`.execute(db)

  // The predicate is written out in the queries the same way (src/modules/ledger/repository.ts), as literals:
  // a prepared statement's generic plan can use a partial index only when its predicate is implied without
  // parameters.
  await sql`
    CREATE INDEX journal_lines_balance_idx ON journal_lines (merchant_uuid, mode, created_at DESC, uuid DESC)
    WHERE account_kind IN ('available', 'pending', 'reserved')`.execute(db)
  await sql`
    CREATE INDEX journal_lines_balance_currency_idx
    ON journal_lines (merchant_uuid, mode, currency, created_at DESC, uuid DESC)
    WHERE account_kind IN ('available', 'pending', 'reserved')`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS journal_lines_fill_copies ON journal_lines`.execute(db)
  await sql`DROP FUNCTION IF EXISTS journal_lines_fill_copies()`.execute(db)
  await sql`DROP INDEX IF EXISTS journal_lines_balance_currency_idx`.execute(db)
  await sql`DROP INDEX IF EXISTS journal_lines_balance_idx`.execute(db)
  await sql`
    ALTER TABLE journal_lines ADD CONSTRAINT journal_lines_account_uuid_fkey
    FOREIGN KEY (account_uuid) REFERENCES ledger_accounts (uuid)`.execute(db)
  await sql`ALTER TABLE journal_lines DROP CONSTRAINT journal_lines_account_key_fkey`.execute(db)
  await sql`ALTER TABLE ledger_accounts DROP CONSTRAINT ledger_accounts_line_key`.execute(db)
  await db.schema
    .alterTable('journal_lines')
    .dropColumn('created_at')
    .dropColumn('account_kind')
    .dropColumn('currency')
    .dropColumn('mode')
    .dropColumn('merchant_uuid')
    .execute()
}

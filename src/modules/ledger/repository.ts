import { sql } from 'kysely'
import { compiledOnce } from '../../db/driver/statement.ts'
import {
  JOURNAL_ENTRY_KINDS,
  JOURNAL_REFERENCE_TYPES,
  type JournalEntryKind,
  type JournalReferenceType,
} from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import { type Cursor, keysetPage } from '../../db/keyset.ts'
import type { Scope } from '../../db/scope.ts'
import type { AccountKind, Mode } from '../../db/types.ts'

/** A journal entry with its lines, as `postEntries` writes it. */
export interface EntryToPost {
  uuid: string
  kind: JournalEntryKind
  referenceType: JournalReferenceType
  referenceUuid: string
  /** What each account's balance moves by (one per account). */
  moves: { kind: AccountKind; amount: number }[]
  /** The lines in the order they are written (each line's account must have a move). */
  lines: { uuid: string; kind: AccountKind; amount: number }[]
}

/** Where the entries go: one merchant's accounts in one mode and currency, at one time. */
export interface EntriesTarget {
  merchantUuid: string
  mode: Mode
  currency: string
  at: Date
}

/**
 * Journal entries of one merchant, mode and currency (each of its own kind) in one statement: each entry is
 * inserted unless one exists for the same cause (reference and kind); when any is, all of the merchant's
 * accounts in the currency are locked in kind order, the balances move by the inserted entries' moves and
 * their lines are written. The accounts must exist (`ensureAccounts`). Answers the uuid of each entry inserted,
 * by kind (an entry posted before is absent: nothing of it moved), and each moved account's new balance.
 *
 * One statement, because the accounts stay locked until the commit and every payment and refund of the
 * merchant waits on them: no round trip to the application happens while they are held but the commit's (a
 * payment received and settled at once is two entries of one statement).
 *
 * Row locks on every account, not one advisory lock on the set (which would write no WAL for the accounts a
 * posting does not move): during a rolling upgrade the running versions lock these rows in kind order, and a
 * posting that held only the rows it moved across two postings could deadlock with them.
 */
export async function postEntries(
  db: Executor,
  target: EntriesTarget,
  entries: EntryToPost[],
): Promise<{ posted: Map<JournalEntryKind, string>; balances: Map<AccountKind, number> }> {
  if (new Set(entries.map((e) => e.kind)).size !== entries.length)
    throw new Error('postEntries: one entry of each kind in a statement')
  // The statement's text depends only on how many entries, moves and lines there are: built once for each.
  const counts = entries.map((e) => `${e.moves.length}.${e.lines.length}`)
  const values: unknown[] = [target.merchantUuid, target.mode, target.currency, target.at]
  for (const e of entries) {
    values.push(e.uuid, e.kind, e.referenceType, e.referenceUuid)
    for (const m of e.moves) values.push(m.kind, m.amount)
    for (const l of e.lines) values.push(l.uuid, l.kind, l.amount)
  }
  const statement = compiledOnce(db, `journal.postEntries:${counts.join(',')}`, values, (...v) => {
    let at = 4
    const next = () => v[at++]
    const rebuilt = entries.map((e) => ({
      uuid: next(),
      kind: next(),
      referenceType: next(),
      referenceUuid: next(),
      moves: e.moves.map(() => ({ kind: next(), amount: next() })),
      lines: e.lines.map(() => ({ uuid: next(), kind: next(), amount: next() })),
    })) as EntryToPost[]
    const [merchantUuid, mode, currency, when] = v as [string, Mode, string, Date]
    const query = postEntriesQuery({ merchantUuid, mode, currency, at: when }, rebuilt)
    return { compile: () => query.compile(db) }
  })
  const result = await db.executeQuery(statement)
  const row = result.rows[0]
  return {
    posted: new Map((row?.entries ?? []).map((e) => [e.kind, e.uuid])),
    balances: new Map((row?.balances ?? []).map((b) => [b.kind, Number(b.balance)])),
  }
}

/** postEntries' statement. */
function postEntriesQuery(target: EntriesTarget, entries: EntryToPost[]) {
  const { merchantUuid, mode, currency, at } = target
  const values = sql.join(
    entries.map(
      (e) =>
        sql`(${e.uuid}::uuid, ${merchantUuid}::uuid, ${mode}::text, ${e.kind}::text, ${e.referenceType}::text, ${e.referenceUuid}::uuid, ${at}::timestamptz)`,
    ),
  )
  const moves = sql.join(
    entries.flatMap((e) => e.moves.map((m) => sql`(${e.kind}::text, ${m.kind}::text, ${m.amount}::bigint)`)),
  )
  const lines = sql.join(
    entries
      .flatMap((e) => e.lines.map((l) => ({ entry: e.kind, ...l })))
      .map(
        (l, n) => sql`(${l.uuid}::uuid, ${l.entry}::text, ${l.kind}::text, ${l.amount}::bigint, ${n}::int)`,
      ),
  )
  return sql<{
    entries: { uuid: string; kind: JournalEntryKind }[] | null
    balances: { kind: AccountKind; balance: number }[] | null
  }>`
    WITH entry AS (
      INSERT INTO journal_entries (uuid, merchant_uuid, mode, kind, reference_type, reference_uuid, created_at)
      VALUES ${values}
      ON CONFLICT (reference_type, reference_uuid, kind) DO NOTHING
      RETURNING uuid, kind
    ), locked AS (
      SELECT a.uuid, a.kind FROM ledger_accounts AS a
      WHERE a.merchant_uuid = ${merchantUuid} AND a.mode = ${mode} AND a.currency = ${currency}
        AND EXISTS (SELECT 1 FROM entry)
      ORDER BY a.kind
      FOR UPDATE
    ), delta AS (
      SELECT v.kind, sum(v.amount)::bigint AS amount
      FROM (VALUES ${moves}) AS v(entry_kind, kind, amount) JOIN entry AS e ON e.kind = v.entry_kind
      GROUP BY v.kind
    ), moved AS (
      UPDATE ledger_accounts AS a SET balance = a.balance + d.amount, updated_at = ${at}
      FROM locked AS l JOIN delta AS d ON d.kind = l.kind
      WHERE a.uuid = l.uuid
      RETURNING a.uuid, a.kind, a.balance
    ), written AS (
      INSERT INTO journal_lines (uuid, entry_uuid, account_uuid, amount, merchant_uuid, mode, currency, account_kind, created_at)
      SELECT x.uuid, e.uuid, m.uuid, x.amount, ${merchantUuid}, ${mode}, ${currency}, x.kind, ${at}
      FROM (VALUES ${lines}) AS x(uuid, entry_kind, kind, amount, n)
        JOIN entry AS e ON e.kind = x.entry_kind JOIN moved AS m ON m.kind = x.kind
      ORDER BY x.n
    )
    SELECT (SELECT json_agg(json_build_object('uuid', uuid, 'kind', kind)) FROM entry) AS entries,
      (SELECT json_agg(json_build_object('kind', kind, 'balance', balance)) FROM moved) AS balances`
}

/** Which of the merchant's accounts in this mode and currency exist (no lock). */
export const accountKinds = async (db: Executor, merchantUuid: string, mode: Mode, currency: string) =>
  (
    await db
      .selectFrom('ledger_accounts')
      .select('kind')
      .where('merchant_uuid', '=', merchantUuid)
      .where('mode', '=', mode)
      .where('currency', '=', currency)
      .execute()
  ).map((row) => row.kind)

export const accountsOf = (db: Executor, merchantUuid: string, mode: Mode) =>
  db
    .selectFrom('ledger_accounts')
    .selectAll()
    .where('merchant_uuid', '=', merchantUuid)
    .where('mode', '=', mode)
    .orderBy('currency')
    .execute()

/** Accounts whose kept balance differs from the sum of their lines. */
export async function balanceMismatches(db: Executor) {
  const result = await sql<{
    uuid: string
    merchant_uuid: string
    mode: string
    currency: string
    kind: string
    balance: string
    journal: string
  }>`
    SELECT a.uuid, a.merchant_uuid, a.mode, a.currency, a.kind, a.balance::text AS balance, COALESCE(SUM(l.amount), 0)::text AS journal
    FROM ledger_accounts a LEFT JOIN journal_lines l ON l.account_uuid = a.uuid
    GROUP BY a.uuid
    HAVING a.balance <> COALESCE(SUM(l.amount), 0)`.execute(db)
  return result.rows
}

/** Entries whose lines do not sum to zero, or that mix currencies. */
export async function unbalancedEntries(db: Executor) {
  const result = await sql<{ uuid: string; total: string; currencies: number }>`
    SELECT e.uuid, COALESCE(SUM(l.amount), 0)::text AS total, COUNT(DISTINCT a.currency)::int AS currencies
    FROM journal_entries e LEFT JOIN journal_lines l ON l.entry_uuid = e.uuid LEFT JOIN ledger_accounts a ON a.uuid = l.account_uuid
    GROUP BY e.uuid
    HAVING COALESCE(SUM(l.amount), 0) <> 0 OR COUNT(DISTINCT a.currency) > 1`.execute(db)
  return result.rows
}

export const countEntries = async (db: Executor) =>
  Number(
    (
      await db
        .selectFrom('journal_entries')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )

/**
 * Creates the accounts that do not exist yet, in kind order. Two transactions creating the same account wait
 * on each other's insert; doing it in one order keeps that wait from closing a cycle.
 */
export async function ensureAccounts(
  db: Executor,
  merchantUuid: string,
  mode: Mode,
  currency: string,
  kinds: AccountKind[],
  at: Date,
  newUuid: () => string,
) {
  await db
    .insertInto('ledger_accounts')
    .values(
      [...new Set(kinds)].sort().map((kind) => ({
        uuid: newUuid(),
        merchant_uuid: merchantUuid,
        mode,
        currency,
        kind,
        balance: 0,
        updated_at: at,
      })),
    )
    .onConflict((oc) => oc.columns(['merchant_uuid', 'mode', 'currency', 'kind']).doNothing())
    .execute()
}

/** A merchant's balance transactions, as the list filters them (src/modules/ledger/balance-transactions.ts). */
export interface BalanceTransactionFilters {
  /** Entries of these kinds; with `otherKinds`, also those of any kind outside JOURNAL_ENTRY_KINDS. */
  kinds?: { known: JournalEntryKind[]; otherKinds: boolean }
  currency?: string
  /** The transaction, refund or payout that caused them. */
  sourceUuid?: string
  from?: Date
  to?: Date
}

/**
 * The lines of the merchant's own balances (available, pending, reserved) in one mode with their entries,
 * filtered, as a query without order or limit: a page is `keysetPage` of it, an export walks it with
 * `keysetBatches`. Its columns are named as the view reads them, and it selects from a subquery so that the
 * keyset's `created_at` and `uuid` name the line's. PostgreSQL flattens the subquery: a page is a range scan of
 * journal_lines_balance_idx (or _currency_idx) in list order, whose predicate is written here as literals;
 * a source is found through the entries' unique index. Measured on 1.3 million lines (750 000 of one
 * merchant), every page takes well under a millisecond of the database, deep pages included. A type filter
 * is checked on the entry of each line walked in order: fast for the common types, a long walk for a type
 * that is rare among the newer movements (bound it with a date range).
 */
export function filteredBalanceTransactions(db: Executor, scope: Scope, filters: BalanceTransactionFilters) {
  let query = db
    .selectFrom('journal_lines as l')
    .innerJoin('journal_entries as e', 'e.uuid', 'l.entry_uuid')
    .select([
      'l.uuid',
      'l.amount',
      'l.currency',
      'l.account_kind as balance',
      'l.created_at',
      'e.kind',
      'e.reference_type',
      'e.reference_uuid',
    ])
    .where('l.merchant_uuid', '=', scope.merchantUuid)
    .where('l.mode', '=', scope.mode)
    .where(sql<boolean>`l.account_kind IN ('available', 'pending', 'reserved')`)
  const kinds = filters.kinds
  if (kinds)
    query = query.where((eb) =>
      eb.or([
        ...(kinds.known.length ? [eb('e.kind', 'in', kinds.known)] : []),
        ...(kinds.otherKinds ? [eb('e.kind', 'not in', [...JOURNAL_ENTRY_KINDS])] : []),
      ]),
    )
  if (filters.currency) query = query.where('l.currency', '=', filters.currency)
  // Named with every reference type, the cause's entries are found through the unique index of
  // (reference_type, reference_uuid, kind), a few probes, rather than by walking the merchant's lines.
  if (filters.sourceUuid)
    query = query
      .where('e.reference_type', 'in', [...JOURNAL_REFERENCE_TYPES])
      .where('e.reference_uuid', '=', filters.sourceUuid)
  if (filters.from) query = query.where('l.created_at', '>=', filters.from)
  if (filters.to) query = query.where('l.created_at', '<=', filters.to)
  return db.selectFrom(query.as('bt')).selectAll()
}

/** One page of them in keyset order. */
export const balanceTransactionPage = (
  db: Executor,
  scope: Scope,
  filters: BalanceTransactionFilters,
  cursor: Cursor | null,
  limit: number,
) => keysetPage(filteredBalanceTransactions(db, scope, filters), cursor, limit)

export type BalanceTransactionRow = Awaited<
  ReturnType<ReturnType<typeof filteredBalanceTransactions>['executeTakeFirstOrThrow']>
>

/** One of the merchant's balance transactions by its uuid (a line of a platform account is none). */
export const findBalanceTransaction = (db: Executor, scope: Scope, uuid: string) =>
  filteredBalanceTransactions(db, scope, {}).where('uuid', '=', uuid).executeTakeFirst()

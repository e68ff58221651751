import { LRUCache } from 'lru-cache'
import type { JournalEntryKind, JournalReferenceType } from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import type { AccountKind, Merchant, Mode } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError } from '../../http/errors.ts'
import { filteredExport, filteredPage } from '../../http/filtered-list.ts'
import { newId } from '../../lib/ids.ts'
import { BALANCE_TRANSACTION_LIST, getBalanceTransaction } from './balance-transactions.ts'
import type { LedgerDeps } from './deps.ts'
import * as repo from './repository.ts'
import type { BalanceSummaryInput, ListBalanceTransactionsInput } from './schemas.ts'
import { balanceSummary } from './summary.ts'

export interface Posting {
  merchantUuid: string
  mode: Mode
  /** What moved: payment_received, payment_settled, … */
  kind: JournalEntryKind
  /** The cause; one entry per (reference, kind), so replaying a cause never moves money twice. */
  reference: { type: JournalReferenceType; uuid: string }
  currency: string
  /** Signed amounts per account; they must sum to zero. */
  lines: { account: AccountKind; amount: number }[]
  at: Date
  /** Accounts this posting must not take below zero (else 422 insufficient_balance, and nothing is written). */
  mustStayNonNegative?: AccountKind[]
}

/**
 * The accounts every merchant has per mode and currency: every kind, created together by the first posting,
 * before it locks them. A transaction that holds a merchant's accounts never has one to create: two postings
 * in one transaction (a payment received and settled at once) cannot wait on another's new account while it
 * holds the locks that one waits for. (A merchant whose accounts an earlier version made four at a time gets
 * the others on its next posting, the same way.)
 */
const ALL_KINDS: AccountKind[] = [
  'available',
  'payout_fees',
  'payouts_out',
  'pending',
  'provider_clearing',
  'refunds_out',
  'reserved',
]

export type LedgerService = ReturnType<typeof createLedgerService>

/**
 * A double-entry ledger: every movement is a journal entry whose lines sum to zero, posted in the caller's
 * database transaction together with the state change that causes it. Account balances are kept in the same
 * transaction, so they never disagree with the journal; `verifyLedger` recomputes them to prove it.
 */
export function createLedgerService(deps: LedgerDeps) {
  const { db } = deps
  const committed = committedAccounts()
  return {
    post: (trx: Executor, posting: Posting) => postJournalEntry(trx, posting, committed),
    /** Entries of one merchant, mode and currency in one statement (see postJournalEntries). */
    postTogether: (trx: Executor, postings: Posting[]) => postJournalEntries(trx, postings, committed),
    balances: (merchantUuid: string, mode: Mode) => merchantBalances(db, merchantUuid, mode),
    balancesView: (merchant: Merchant, mode: Mode) => balancesView(db, merchant, mode),
    listBalanceTransactions: (auth: AuthContext, query: ListBalanceTransactionsInput) =>
      filteredPage(deps, auth, BALANCE_TRANSACTION_LIST, query),
    exportBalanceTransactions: (auth: AuthContext, query: ListBalanceTransactionsInput) =>
      filteredExport(deps, auth, BALANCE_TRANSACTION_LIST, query),
    getBalanceTransaction: (auth: AuthContext, uuid: string) => getBalanceTransaction(deps, auth, uuid),
    summary: (auth: AuthContext, query: BalanceSummaryInput) =>
      balanceSummary(db, auth.merchant, auth.mode, query),
    verify: () => verifyLedger(db),
  }
}

/** What one database transaction knows of the accounts it posts to, by (merchant, mode, currency). */
interface Ensured {
  /** The keys whose accounts, every kind, exist. */
  complete: Set<string>
  /** The keys this transaction created accounts for (not committed until it is). */
  created: Set<string>
}
const ensuredIn = new WeakMap<Executor, Ensured>()

/**
 * The (merchant, mode, currency) keys whose accounts, every kind, are committed: accounts are never deleted, so
 * a posting to them skips the check. Only what a transaction read without creating any goes in.
 */
export type CommittedAccounts = LRUCache<string, true>
export const committedAccounts = (): CommittedAccounts => new LRUCache({ max: 10_000 })

/** Posts the entry unless it was posted before for the same cause; returns whether it posted. */
export async function postJournalEntry(
  trx: Executor,
  posting: Posting,
  committed?: CommittedAccounts,
): Promise<boolean> {
  const [posted] = await postJournalEntries(trx, [posting], committed)
  return posted === true
}

/**
 * Posts entries of one merchant, mode and currency (each of its own kind) in one statement, each unless it
 * was posted before for the same cause; returns whether each posted. Only a single posting may name accounts
 * that must stay non-negative.
 */
export async function postJournalEntries(
  trx: Executor,
  postings: Posting[],
  committed?: CommittedAccounts,
): Promise<boolean[]> {
  const [first] = postings
  if (!first) return []
  const { merchantUuid, mode, currency, at } = first
  for (const posting of postings) {
    const sum = posting.lines.reduce((total, line) => total + line.amount, 0)
    if (sum !== 0) throw new Error(`unbalanced journal entry ${posting.kind}: lines sum to ${sum}`)
    if (posting.merchantUuid !== merchantUuid || posting.mode !== mode || posting.currency !== currency)
      throw new Error('entries posted together move one merchant, mode and currency')
    if (postings.length > 1 && posting.mustStayNonNegative?.length)
      throw new Error('a posting with accounts that must stay non-negative is posted alone')
  }
  // The accounts first, outside the lock: made only when one is missing (the merchant's first posting in a
  // currency), all in kind order, before the posting locks them.
  const key = `${merchantUuid}|${mode}|${currency}`
  let ensured = ensuredIn.get(trx)
  if (!ensured) {
    ensured = { complete: new Set(), created: new Set() }
    ensuredIn.set(trx, ensured)
  }
  if (!ensured.complete.has(key) && !committed?.has(key)) {
    const existing = new Set<string>(await repo.accountKinds(trx, merchantUuid, mode, currency))
    const missing = ALL_KINDS.filter((kind) => !existing.has(kind))
    if (missing.length > 0) {
      await repo.ensureAccounts(trx, merchantUuid, mode, currency, missing, at, newId)
      ensured.created.add(key)
    }
    ensured.complete.add(key)
    // Read without this transaction's own new accounts: they are committed ones.
    if (!ensured.created.has(key)) committed?.set(key, true)
  }
  // Every posting locks all of the merchant's accounts in this currency, in one order, in its one statement;
  // a database transaction that posts several entries (or settles several merchants, in merchant order) cannot
  // deadlock.
  const entries = postings.map((posting) => {
    const moves = new Map<AccountKind, number>()
    for (const line of posting.lines) moves.set(line.account, (moves.get(line.account) ?? 0) + line.amount)
    // The lines in account order, as every version wrote them (a movement's lines are listed in that order).
    const ordered = [...posting.lines].sort((a, b) => a.account.localeCompare(b.account))
    return {
      posting,
      moves,
      entry: {
        uuid: newId(),
        kind: posting.kind,
        referenceType: posting.reference.type,
        referenceUuid: posting.reference.uuid,
        moves: [...moves].map(([kind, amount]) => ({ kind, amount })),
        lines: ordered.map((line) => ({ uuid: newId(), kind: line.account, amount: line.amount })),
      },
    }
  })
  const { posted, balances } = await repo.postEntries(
    trx,
    { merchantUuid, mode, currency, at },
    entries.map((e) => e.entry),
  )
  return entries.map(({ posting, moves }) => {
    if (!posted.has(posting.kind)) return false
    const unmoved = [...moves.keys()].filter((kind) => !balances.has(kind))
    if (unmoved.length > 0)
      throw new Error(`journal entry ${posting.kind}: no ${unmoved.join(', ')} account to post to`)
    for (const kind of posting.mustStayNonNegative ?? []) {
      const amount = moves.get(kind)
      const balance = balances.get(kind)
      if (amount === undefined || balance === undefined || balance >= 0) continue
      throw new AppError('insufficient_balance', `The ${kind} balance does not cover this.`, {
        [`${kind}_minor`]: balance - amount,
        required_minor: -amount,
        currency,
      })
    }
    return true
  })
}

/** The merchant's balances per currency in one mode: available, pending, reserved and their total. */
export async function merchantBalances(db: Executor, merchantUuid: string, mode: Mode) {
  const accounts = await repo.accountsOf(db, merchantUuid, mode)
  const byCurrency = new Map<
    string,
    { currency: string; available: number; pending: number; reserved: number; updated_at: Date }
  >()
  for (const a of accounts) {
    if (a.kind !== 'available' && a.kind !== 'pending' && a.kind !== 'reserved') continue
    const row = byCurrency.get(a.currency) ?? {
      currency: a.currency,
      available: 0,
      pending: 0,
      reserved: 0,
      updated_at: a.updated_at,
    }
    row[a.kind] = a.balance
    if (a.updated_at > row.updated_at) row.updated_at = a.updated_at
    byCurrency.set(a.currency, row)
  }
  return [...byCurrency.values()]
}

/**
 * What GET /integration/balances shows: every currency the merchant holds in this mode, with the total,
 * and its settlement currency always listed (at zero before any payment).
 */
export async function balancesView(db: Executor, merchant: Merchant, mode: Mode) {
  const rows = await merchantBalances(db, merchant.uuid, mode)
  if (!rows.some((r) => r.currency === merchant.settlement_currency)) {
    rows.unshift({
      currency: merchant.settlement_currency,
      available: 0,
      pending: 0,
      reserved: 0,
      updated_at: merchant.created_at,
    })
  }
  return {
    data: rows.map((r) => ({
      ...r,
      total: r.available + r.pending + r.reserved,
      updated_at: r.updated_at.toISOString(),
    })),
  }
}

/** Recomputes every balance from the journal and checks every entry balances. */
export async function verifyLedger(db: Executor) {
  const [mismatches, unbalanced, entries] = await Promise.all([
    repo.balanceMismatches(db),
    repo.unbalancedEntries(db),
    repo.countEntries(db),
  ])
  return { ok: mismatches.length === 0 && unbalanced.length === 0, entries, mismatches, unbalanced }
}

import { type ExpressionBuilder, type Insertable, sql } from 'kysely'
import { insertReturning, selectOneBy } from '../../db/driver/insert.ts'
import { compiledOnce, updateByUuid } from '../../db/driver/statement.ts'
import type { PaymentMethod, TransactionStatus } from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import { pagedList } from '../../db/keyset.ts'
import { selectScoped } from '../../db/queries.ts'
import type { Scope } from '../../db/scope.ts'
import type {
  Database,
  PaymentReviewsTable,
  ProviderCallbacksTable,
  TransactionRow,
  TransactionUpdate,
} from '../../db/types.ts'
import { amountCandidates, type SearchKey } from '../../lib/search.ts'

export interface TransactionFilters {
  statuses?: TransactionStatus[]
  paymentMethod?: PaymentMethod
  currency?: string
  from?: Date
  to?: Date
  search?: { text: string; uuid: string | null }
}

/** A new transaction's row as the service builds it: every column but `settled_at` and `amount_received`, JSON as text. */
export type NewTransactionRow = Omit<
  TransactionRow,
  'metadata' | 'requisites' | 'settled_at' | 'amount_received'
> & {
  metadata: string | null
  requisites: string | null
}

/**
 * Inserts a new transaction and gives back its row without reading the whole row back. Every column is known
 * here but the JSON ones, read back as PostgreSQL stores them (jsonb has its own order of an object's keys, and a
 * later read must show the same), and `settled_at` and `amount_received`, which a new row leaves null. A create costs the client and
 * PostgreSQL less: two columns to format, send and parse, not thirty-six.
 */
export async function insertTransaction(db: Executor, row: NewTransactionRow): Promise<TransactionRow> {
  const stored = await insertReturning(db, 'transactions', row, ['metadata', 'requisites'])
  return {
    ...row,
    settled_at: null,
    amount_received: null,
    metadata: stored.metadata,
    requisites: stored.requisites,
  }
}

const scoped = (db: Executor, scope: Scope) => selectScoped(db, 'transactions', scope)

/**
 * The transaction by its primary key, if it is the caller's. Only the key is in the query: with the merchant
 * and mode beside it, a planner with stale statistics was seen walking a merchant's whole index instead.
 */
export async function findByUuid(db: Executor, scope: Scope, uuid: string) {
  const row = await selectOneBy(db, 'transactions', 'uuid', uuid)
  return row && row.merchant_uuid === scope.merchantUuid && row.mode === scope.mode ? row : undefined
}

/** The transaction behind a hosted payment page, whatever its merchant and mode. */
export const findByPaymentToken = (db: Executor, token: string) =>
  db.selectFrom('transactions').selectAll().where('payment_token', '=', token).executeTakeFirst()

/**
 * The merchant's transaction with this external_id. Its unique index leads with lower(external_id), so the query
 * names that too: with the column alone the index would be read from the merchant's first entry.
 */
export const byExternalId = (db: Executor, scope: Scope, externalId: string) =>
  scoped(db, scope)
    .where(sql`lower(external_id)`, '=', sql<string>`lower(${externalId})`)
    .where('external_id', '=', externalId)

export const findByExternalId = (db: Executor, scope: Scope, externalId: string) =>
  byExternalId(db, scope, externalId).executeTakeFirst()

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/**
 * The merchant's transactions that match the filters, unordered: what a page and an export read. A column a query
 * here comes to filter or sort by needs its statistics: take it off migration 0017's COLUMNS_WITHOUT_STATISTICS.
 */
export function filtered(db: Executor, scope: Scope, filters: TransactionFilters) {
  let query = scoped(db, scope)
  if (filters.statuses?.length) query = query.where('status', 'in', filters.statuses)
  if (filters.paymentMethod) query = query.where('payment_method', '=', filters.paymentMethod)
  if (filters.currency) query = query.where('currency', '=', filters.currency)
  if (filters.from) query = query.where('created_at', '>=', filters.from)
  if (filters.to) query = query.where('created_at', '<=', filters.to)
  const search = filters.search
  if (search) {
    const lowered = search.text.toLowerCase()
    query = query.where((eb: ExpressionBuilder<Database, 'transactions'>) =>
      eb.or([
        ...(search.uuid ? [eb('uuid', '=', search.uuid)] : []),
        eb(sql`lower(external_id)`, 'like', `${escapeLike(lowered)}%`),
        eb(sql`lower(description)`, 'like', `%${escapeLike(lowered)}%`),
      ]),
    )
  }
  return query
}

/** One page of the merchant's transactions in keyset order, filtered. */
export const listPage = pagedList(filtered)

/** The transaction's amount, whatever its merchant and mode. */
export const findAmount = (db: Executor, uuid: string) =>
  db
    .selectFrom('transactions')
    .select(['amount', 'external_id'])
    .where('uuid', '=', uuid)
    .executeTakeFirstOrThrow()

/** The transaction row, locked for the rest of the caller's transaction. */
export const lockByUuid = async (db: Executor, uuid: string) =>
  (
    await db.executeQuery(
      compiledOnce(db, 'transactions.lockByUuid', [uuid], (u) =>
        db.selectFrom('transactions').selectAll().where('uuid', '=', u).forUpdate(),
      ),
    )
  ).rows[0]

/** The transactions with these uuids, locked in uuid order (so that two such locks never wait on each other). */
export const lockManyByUuid = (db: Executor, uuids: string[]) =>
  uuids.length === 0
    ? Promise.resolve([])
    : db
        .selectFrom('transactions')
        .selectAll()
        .where('uuid', 'in', uuids)
        .orderBy('uuid')
        .forUpdate()
        .execute()

/** Overdue pending transactions, locked; rows another worker holds are skipped, so workers never collide. */
export const lockOverdue = (db: Executor, now: Date, limit: number) =>
  db
    .selectFrom('transactions')
    .selectAll()
    .where('status', '=', 'pending')
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute()

/** Sets the columns `changes` gives a value (an undefined one is left as it is); the row as it is now. */
export const updateTransaction = (db: Executor, uuid: string, changes: TransactionUpdate) =>
  updateByUuid(db, 'transactions', uuid, changes)

/** `changes` to the transaction, with a provider's word about it kept by the same statement; the row as it is. */
export const updateTransactionKeeping = (
  db: Executor,
  uuid: string,
  changes: TransactionUpdate,
  word: Insertable<ProviderCallbacksTable>,
) =>
  db
    .with('word', (cte) => cte.insertInto('provider_callbacks').values(word))
    .updateTable('transactions')
    .set(changes)
    .where('uuid', '=', uuid)
    .returningAll()
    .executeTakeFirstOrThrow()

export const insertProviderCallback = async (db: Executor, row: Insertable<ProviderCallbacksTable>) => {
  await insertReturning(db, 'provider_callbacks', row, ['uuid'])
}

/** Paid transactions whose hold has ended and whose money is still pending, locked (others skipped). */
export const lockSettlementDue = (db: Executor, now: Date, limit: number) =>
  db
    .selectFrom('transactions')
    .selectAll()
    .where('paid_at', 'is not', null)
    .where('settled_at', 'is', null)
    .where('settle_available_at', '<=', now)
    .orderBy('settle_available_at')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute()

/** One day's payments in one currency, for the dashboard's home page. */
export interface DailyPayments {
  day: string
  currency: string
  created: number
  succeeded: number
  failed: number
  /** The sum of the succeeded payments' amounts, in minor units. */
  volume: number
}

const SUCCEEDED = sql`status IN ('paid', 'partially_refunded', 'refunded')`

/** Payments created since `since`, per UTC day and currency, oldest day first. */
export async function dailyPayments(db: Executor, scope: Scope, since: Date): Promise<DailyPayments[]> {
  const rows = await db
    .selectFrom('transactions')
    .select([
      sql<string>`to_char(date_trunc('day', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`.as('day'),
      'currency',
      sql<string>`count(*)`.as('created'),
      sql<string>`count(*) FILTER (WHERE ${SUCCEEDED})`.as('succeeded'),
      sql<string>`count(*) FILTER (WHERE status IN ('failed', 'expired'))`.as('failed'),
      sql<string>`coalesce(sum(amount) FILTER (WHERE ${SUCCEEDED}), 0)`.as('volume'),
    ])
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .where('created_at', '>=', since)
    .groupBy(['day', 'currency'])
    .orderBy('day')
    .orderBy('currency')
    .execute()
  return rows.map((row) => ({
    day: row.day,
    currency: row.currency,
    created: Number(row.created),
    succeeded: Number(row.succeeded),
    failed: Number(row.failed),
    volume: Number(row.volume),
  }))
}

/**
 * Opens a review of what a provider reported, unless the payment has one open already. The partial index's
 * predicate is written as a literal: as a parameter, a prepared statement's generic plan (from its sixth run on)
 * could no longer match it to the index, and PostgreSQL refuses an ON CONFLICT without one.
 */
export const openReview = (db: Executor, row: Insertable<PaymentReviewsTable>) =>
  db
    .insertInto('payment_reviews')
    .values(row)
    .onConflict((oc) =>
      oc.column('transaction_uuid').where(sql.ref('status'), '=', sql.lit('open')).doNothing(),
    )
    .execute()

export const openReviewOf = (db: Executor, transactionUuid: string) =>
  db
    .selectFrom('payment_reviews')
    .selectAll()
    .where('transaction_uuid', '=', transactionUuid)
    .where('status', '=', 'open')
    .executeTakeFirst()

/** The transaction by its primary key, whoever's it is (a worker's read). */
export const findAnyByUuid = (db: Executor, uuid: string) => selectOneBy(db, 'transactions', 'uuid', uuid)

/** Transactions by their primary keys, whoever's they are (a worker's read of a batch). */
export const findManyByUuid = (db: Executor, uuids: string[]) =>
  db.selectFrom('transactions').selectAll().where('uuid', 'in', uuids).execute()

/** The payment's latest review, locked for the rest of the caller's transaction (who holds the payment's lock). */
export const lockLatestReview = (db: Executor, transactionUuid: string) =>
  db
    .selectFrom('payment_reviews')
    .selectAll()
    .where('transaction_uuid', '=', transactionUuid)
    .orderBy('created_at', 'desc')
    .orderBy('uuid', 'desc')
    .limit(1)
    .forUpdate()
    .executeTakeFirst()

/** A review the operator resolved by returning this amount: a provider repeating that report changes nothing. */
export const findRefundedReview = (db: Executor, transactionUuid: string, amount: number, currency: string) =>
  db
    .selectFrom('payment_reviews')
    .select('uuid')
    .where('transaction_uuid', '=', transactionUuid)
    .where('status', '=', 'refunded')
    .where('reported_amount', '=', amount)
    .where('reported_currency', '=', currency)
    .executeTakeFirst()

/** The review leaves `open` for how the operator resolved it. */
export const resolveReview = (
  db: Executor,
  uuid: string,
  status: 'accepted' | 'refunded',
  resolution: string,
  at: Date,
) =>
  db
    .updateTable('payment_reviews')
    .set({ status, resolution, updated_at: at })
    .where('uuid', '=', uuid)
    .where('status', '=', 'open')
    .executeTakeFirstOrThrow()

/** Reviews with their payments, newest first: the operator's list. */
export const listReviews = (db: Executor, filter: { open: boolean; limit: number }) => {
  let query = db
    .selectFrom('payment_reviews as r')
    .innerJoin('transactions as t', 't.uuid', 'r.transaction_uuid')
    .selectAll('r')
    .select(['t.merchant_uuid', 't.mode', 't.status as payment_status', 't.amount', 't.currency'])
    .orderBy('r.created_at', 'desc')
    .orderBy('r.uuid', 'desc')
    .limit(filter.limit)
  if (filter.open) query = query.where('r.status', '=', 'open')
  return query.execute()
}

/**
 * Up to `limit` of the scope's payments a dashboard search names (docs/API.md, Search), newest first: by uuid,
 * external id, the provider's reference (the payments `referenced` names), an amount in any exponent (the
 * caller keeps those of the right currency), or an e-mail among the metadata's values.
 */
export function searchTransactions(
  db: Executor,
  scope: Scope,
  key: SearchKey,
  referenced: string[],
  limit: number,
) {
  const amounts = amountCandidates(key)
  return selectScoped(db, 'transactions', scope)
    .where((eb) =>
      eb.or([
        eb('external_id', '=', key.text),
        ...(key.uuid ? [eb('uuid', '=', key.uuid)] : []),
        ...(referenced.length ? [eb('uuid', 'in', referenced)] : []),
        ...(amounts.length ? [eb('amount', 'in', amounts)] : []),
        ...(key.email
          ? [
              sql<boolean>`EXISTS (SELECT 1 FROM jsonb_each_text(metadata) AS m WHERE lower(m.value) = ${key.email})`,
            ]
          : []),
      ]),
    )
    .orderBy('created_at', 'desc')
    .orderBy('uuid', 'desc')
    .limit(limit)
    .execute()
}

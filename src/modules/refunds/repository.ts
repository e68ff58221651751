import { type ExpressionBuilder, type Insertable, sql } from 'kysely'
import { insertReturningAll } from '../../db/driver/insert.ts'
import { compiledOnce, updateByUuid } from '../../db/driver/statement.ts'
import type { RefundStatus } from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import { pagedList } from '../../db/keyset.ts'
import { claimDueChecks, recheckOpen, selectByAccountReference, selectScoped } from '../../db/queries.ts'
import type { Scope } from '../../db/scope.ts'
import type { Database, RefundsTable } from '../../db/types.ts'
import { amountCandidates, type SearchKey } from '../../lib/search.ts'

export const insertRefund = (db: Executor, row: Insertable<RefundsTable>) =>
  insertReturningAll(db, 'refunds', row)

/** Sets the columns `changes` gives a value (an undefined one is left as it is); the row as it is now. */
export const updateRefund = (db: Executor, uuid: string, changes: Partial<Insertable<RefundsTable>>) =>
  updateByUuid(db, 'refunds', uuid, changes)

/** Pending and succeeded refunds of a transaction: what is already spoken for. */
export async function committedMinor(db: Executor, transactionUuid: string): Promise<number> {
  const row = await db
    .selectFrom('refunds')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('amount_minor'), eb.lit(0)).as('total'))
    .where('transaction_uuid', '=', transactionUuid)
    .where('status', 'in', ['pending', 'succeeded'])
    .executeTakeFirstOrThrow()
  return Number(row.total)
}

export const findRefund = (db: Executor, scope: Scope, uuid: string) =>
  db
    .selectFrom('refunds')
    .selectAll()
    .where('uuid', '=', uuid)
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .executeTakeFirst()

/** The refund made with this Idempotency-Key, if one was committed. */
export const findByIdempotencyKey = (db: Executor, scope: Scope, key: string) =>
  selectScoped(db, 'refunds', scope).where('idempotency_key', '=', key).executeTakeFirst()

/**
 * The refund row, locked for the rest of the caller's transaction (which holds its payment's lock, so the
 * payment's other refunds cannot change meanwhile), with what its payment's refunds sum to: pending and
 * succeeded (`committed`), and succeeded.
 */
export async function lockRefund(db: Executor, uuid: string, transactionUuid: string) {
  const statement = compiledOnce(db, 'refunds.lock', [uuid, transactionUuid], (uuid, transactionUuid) =>
    db
      .selectFrom('refunds as r')
      .selectAll('r')
      .select((eb) => [
        sumOf(eb, ['pending', 'succeeded']).as('committed_minor'),
        sumOf(eb, ['succeeded']).as('succeeded_minor'),
      ])
      .where('r.uuid', '=', uuid)
      // Only with the payment whose lock the caller holds.
      .where('r.transaction_uuid', '=', transactionUuid)
      .forUpdate('r'),
  )
  const row = (await db.executeQuery(statement)).rows[0]
  if (!row) return undefined
  const { committed_minor, succeeded_minor, ...refund } = row
  return { row: refund, committedMinor: Number(committed_minor), succeededMinor: Number(succeeded_minor) }
}

/** The sum of `r`'s payment's refunds in `statuses` (a subquery for lockRefund). */
const sumOf = (
  eb: ExpressionBuilder<Database & { r: RefundsTable }, 'r'>,
  statuses: RefundsTable['status'][],
) =>
  eb
    .selectFrom('refunds as s')
    .select((s) => s.fn.coalesce(s.fn.sum<number>('s.amount_minor'), s.lit(0)).as('total'))
    .whereRef('s.transaction_uuid', '=', 'r.transaction_uuid')
    .where('s.status', 'in', statuses)

/**
 * A payment's refunds together with the one made with `key` (which may belong to another payment, should a
 * key be used again after its record was purged): one query where two were, under the payment's lock.
 */
export async function refundsOfOrByKey(db: Executor, scope: Scope, transactionUuid: string, key: string) {
  const values = [transactionUuid, scope.merchantUuid, scope.mode, key] as const
  const statement = compiledOnce(
    db,
    'refunds.ofOrByKey',
    values,
    (transactionUuid, merchantUuid, mode, key) =>
      db
        .selectFrom('refunds')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb('transaction_uuid', '=', transactionUuid),
            eb.and([
              eb('merchant_uuid', '=', merchantUuid),
              eb('mode', '=', mode),
              eb('idempotency_key', '=', key),
            ]),
          ]),
        ),
  )
  const { rows } = await db.executeQuery(statement)
  const earlier = rows.find(
    (r) => r.idempotency_key === key && r.merchant_uuid === scope.merchantUuid && r.mode === scope.mode,
  )
  const committedMinor = rows
    .filter(
      (r) => r.transaction_uuid === transactionUuid && (r.status === 'pending' || r.status === 'succeeded'),
    )
    .reduce((sum, r) => sum + Number(r.amount_minor), 0)
  return { earlier, committedMinor }
}

/** Pending refunds whose provider check is due, claimed until `leaseUntil` (see claimDueChecks). */
export const claimDue = (db: Executor, now: Date, leaseUntil: Date, limit: number) =>
  claimDueChecks(db, 'refunds', ['pending'], now, leaseUntil, limit)

export interface RefundFilters {
  statuses?: RefundStatus[]
  transactionUuid?: string
  currency?: string
  from?: Date
  to?: Date
}

/**
 * The merchant's refunds that match the filters, unordered, each with what its view shows beside it: its
 * payment's amount and the pending and succeeded refunds of that payment. What a page and an export read.
 */
export function filtered(db: Executor, scope: Scope, filters: RefundFilters) {
  let query = db
    .selectFrom('refunds')
    .selectAll('refunds')
    .select([
      sql<number>`(SELECT t.amount FROM transactions t WHERE t.uuid = refunds.transaction_uuid)`.as(
        'transaction_amount_minor',
      ),
      sql<string>`(SELECT t.external_id FROM transactions t WHERE t.uuid = refunds.transaction_uuid)`.as(
        'transaction_external_id',
      ),
      sql<string>`(SELECT coalesce(sum(r.amount_minor), 0) FROM refunds r
        WHERE r.transaction_uuid = refunds.transaction_uuid AND r.status IN ('pending', 'succeeded'))`.as(
        'cumulative_refunded_minor',
      ),
    ])
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
  if (filters.statuses?.length) query = query.where('status', 'in', filters.statuses)
  if (filters.transactionUuid) query = query.where('transaction_uuid', '=', filters.transactionUuid)
  if (filters.currency) query = query.where('currency', '=', filters.currency)
  if (filters.from) query = query.where('created_at', '>=', filters.from)
  if (filters.to) query = query.where('created_at', '<=', filters.to)
  return query
}

export type ListedRefundRow = Awaited<ReturnType<ReturnType<typeof filtered>['execute']>>[number]

/** One page of the merchant's refunds in keyset order, filtered. */
export const listPage = pagedList(filtered)

/** The refund a connector account has under its reference `reference`. */
export const findByAccountReference = (db: Executor, accountUuid: string, reference: string) =>
  selectByAccountReference(db, 'refunds', accountUuid, reference).executeTakeFirst()

/** Makes the check of the pending refund the account has under `reference` due at `at`; whether there is one. */
export const recheckByAccountReference = (db: Executor, accountUuid: string, reference: string, at: Date) =>
  recheckOpen(db, 'refunds', ['pending'], accountUuid, reference, at)

/**
 * Up to `limit` of the scope's refunds a dashboard search names (docs/API.md, Search), newest first, with their
 * payment's external id: by uuid, the provider's reference, or an amount in any exponent (the caller keeps those
 * of the right currency).
 */
export function searchRefunds(db: Executor, scope: Scope, key: SearchKey, limit: number) {
  const amounts = amountCandidates(key)
  return selectScoped(db, 'refunds', scope)
    .select(
      sql<string>`(SELECT t.external_id FROM transactions t WHERE t.uuid = refunds.transaction_uuid)`.as(
        'transaction_external_id',
      ),
    )
    .where((eb) =>
      eb.or([
        eb('provider_reference', '=', key.text),
        ...(key.uuid ? [eb('uuid', '=', key.uuid)] : []),
        ...(amounts.length ? [eb('amount_minor', 'in', amounts)] : []),
      ]),
    )
    .orderBy('created_at', 'desc')
    .orderBy('uuid', 'desc')
    .limit(limit)
    .execute()
}

import { type Insertable, sql, type Updateable } from 'kysely'
import type { Executor } from '../../db/index.ts'
import { pagedList } from '../../db/keyset.ts'
import { claimDueChecks, recheckOpen, selectByAccountReference, selectScoped } from '../../db/queries.ts'
import type { Scope } from '../../db/scope.ts'
import type { PayoutCallbacksTable, PayoutQuotesTable, PayoutsTable } from '../../db/types.ts'
import { amountCandidates, type SearchKey } from '../../lib/search.ts'

export interface PayoutFilters {
  statuses?: string[]
  method?: string
  currency?: string
}

export const insertQuote = (db: Executor, row: Insertable<PayoutQuotesTable>) =>
  db.insertInto('payout_quotes').values(row).returningAll().executeTakeFirstOrThrow()

export const findQuote = (db: Executor, uuid: string) =>
  db.selectFrom('payout_quotes').selectAll().where('uuid', '=', uuid).executeTakeFirst()

/** Quotes that ran out before `before`: nothing refers to them once they cannot be used. */
export const deleteQuotesExpiredBefore = (db: Executor, before: Date) =>
  db.deleteFrom('payout_quotes').where('expires_at', '<', before).executeTakeFirst()

export const insertPayout = (db: Executor, row: Insertable<PayoutsTable>) =>
  db.insertInto('payouts').values(row).returningAll().executeTakeFirstOrThrow()

export const updatePayout = (db: Executor, uuid: string, changes: Updateable<PayoutsTable>) =>
  db.updateTable('payouts').set(changes).where('uuid', '=', uuid).returningAll().executeTakeFirstOrThrow()

const scoped = (db: Executor, scope: Scope) => selectScoped(db, 'payouts', scope)

/** The payout by its primary key, if it is the caller's (only the key in the query, as for transactions). */
export async function findPayout(db: Executor, scope: Scope, uuid: string) {
  const row = await db.selectFrom('payouts').selectAll().where('uuid', '=', uuid).executeTakeFirst()
  return row && row.merchant_uuid === scope.merchantUuid && row.mode === scope.mode ? row : undefined
}

/** The payout row, locked for the rest of the caller's transaction. */
export const lockPayout = (db: Executor, uuid: string) =>
  db.selectFrom('payouts').selectAll().where('uuid', '=', uuid).forUpdate().executeTakeFirst()

/** The merchant's payouts that match the filters, unordered: what a page and an export read. */
export function filtered(db: Executor, scope: Scope, filters: PayoutFilters) {
  let query = scoped(db, scope)
  if (filters.statuses?.length)
    query = query.where('status', 'in', filters.statuses as PayoutsTable['status'][])
  if (filters.method) query = query.where('method', '=', filters.method as PayoutsTable['method'])
  if (filters.currency) query = query.where('currency', '=', filters.currency)
  return query
}

/** One page of the merchant's payouts in keyset order, filtered. */
export const listPage = pagedList(filtered)

/** Open payouts whose provider check is due, claimed until `leaseUntil` (see claimDueChecks). */
export const claimDue = (db: Executor, now: Date, leaseUntil: Date, limit: number) =>
  claimDueChecks(db, 'payouts', ['pending', 'processing'], now, leaseUntil, limit)

export const insertCallback = (db: Executor, row: Insertable<PayoutCallbacksTable>) =>
  db.insertInto('payout_callbacks').values(row).execute()

/** The payout made with this Idempotency-Key, if one was committed. */
export const findByIdempotencyKey = (db: Executor, scope: Scope, key: string) =>
  scoped(db, scope).where('idempotency_key', '=', key).executeTakeFirst()

/** The payout a connector account has under its reference `reference`, locked for the caller's transaction. */
export const lockByAccountReference = (db: Executor, accountUuid: string, reference: string) =>
  selectByAccountReference(db, 'payouts', accountUuid, reference).forUpdate().executeTakeFirst()

/** Makes the check of the open payout the account has under `reference` due at `at`; whether there is one. */
export const recheckByAccountReference = (db: Executor, accountUuid: string, reference: string, at: Date) =>
  recheckOpen(db, 'payouts', ['pending', 'processing'], accountUuid, reference, at)

/**
 * Up to `limit` of the scope's payouts a dashboard search names (docs/API.md, Search), newest first: by uuid,
 * external id, the provider's reference or the chain transaction's hash, an amount in any exponent (the caller
 * keeps those of the right currency), or the last four digits of the card paid out to.
 */
export function searchPayouts(db: Executor, scope: Scope, key: SearchKey, limit: number) {
  const amounts = amountCandidates(key)
  return selectScoped(db, 'payouts', scope)
    .where((eb) =>
      eb.or([
        eb('external_id', '=', key.text),
        eb('provider_reference', '=', key.text),
        eb(sql`lower(transaction_hash)`, '=', key.text.toLowerCase()),
        ...(key.uuid ? [eb('uuid', '=', key.uuid)] : []),
        ...(amounts.length ? [eb('amount', 'in', amounts)] : []),
        ...(key.lastFour
          ? [sql<boolean>`method = 'card' AND right(destination->>'card_number', 4) = ${key.lastFour}`]
          : []),
      ]),
    )
    .orderBy('created_at', 'desc')
    .orderBy('uuid', 'desc')
    .limit(limit)
    .execute()
}

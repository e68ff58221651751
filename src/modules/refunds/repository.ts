import type { Insertable } from 'kysely'
import type { Executor } from '../../db/index.ts'
import type { Mode, RefundsTable } from '../../db/types.ts'

export const insertRefund = (db: Executor, row: Insertable<RefundsTable>) =>
  db.insertInto('refunds').values(row).returningAll().executeTakeFirstOrThrow()

export const updateRefund = (db: Executor, uuid: string, changes: Partial<Insertable<RefundsTable>>) =>
  db.updateTable('refunds').set(changes).where('uuid', '=', uuid).returningAll().executeTakeFirstOrThrow()

async function sumMinor(
  db: Executor,
  transactionUuid: string,
  statuses: RefundsTable['status'][],
): Promise<number> {
  const row = await db
    .selectFrom('refunds')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('amount_minor'), eb.lit(0)).as('total'))
    .where('transaction_uuid', '=', transactionUuid)
    .where('status', 'in', statuses)
    .executeTakeFirstOrThrow()
  return Number(row.total)
}

/** Pending and succeeded refunds of a transaction: what is already spoken for. */
export const committedMinor = (db: Executor, transactionUuid: string) =>
  sumMinor(db, transactionUuid, ['pending', 'succeeded'])

/** Succeeded refunds of a transaction: what went back to the customer. */
export const succeededMinor = (db: Executor, transactionUuid: string) =>
  sumMinor(db, transactionUuid, ['succeeded'])

export const findRefund = (db: Executor, scope: { merchantUuid: string; mode: Mode }, uuid: string) =>
  db
    .selectFrom('refunds')
    .selectAll()
    .where('uuid', '=', uuid)
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .executeTakeFirst()

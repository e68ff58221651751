import type { Db } from '../../src/db/index.ts'

/** Moves the transaction's expiry a second into the past: overdue, for the expiry job or its page. */
export const makeOverdue = (db: Db, uuid: string) =>
  db
    .updateTable('transactions')
    .set({ expires_at: new Date(Date.now() - 1000) })
    .where('uuid', '=', uuid)
    .execute()

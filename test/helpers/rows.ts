import type { Db } from '../../src/db/index.ts'

/** What the gateway recorded of each provider callback about a transaction, oldest first. */
export const providerCallbacks = (db: Db, transactionUuid: string) =>
  db
    .selectFrom('provider_callbacks')
    .selectAll()
    .where('transaction_uuid', '=', transactionUuid)
    .orderBy('received_at')
    .execute()

/** What the gateway recorded of each provider callback about a payout, oldest first. */
export const payoutCallbacks = (db: Db, payoutUuid: string) =>
  db
    .selectFrom('payout_callbacks')
    .selectAll()
    .where('payout_uuid', '=', payoutUuid)
    .orderBy('received_at')
    .orderBy('uuid')
    .execute()

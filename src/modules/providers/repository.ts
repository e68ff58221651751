import type { Insertable, Updateable, UpdateResult } from 'kysely'
import type { Executor } from '../../db/index.ts'
import type { ConnectorAccountsTable, PaymentAttemptsTable, PaymentHandoversTable } from '../../db/types.ts'

export const insertAccount = (db: Executor, row: Insertable<ConnectorAccountsTable>) =>
  db.insertInto('connector_accounts').values(row).returningAll().executeTakeFirstOrThrow()

export const findAccountByUuid = (db: Executor, uuid: string) =>
  db.selectFrom('connector_accounts').selectAll().where('uuid', '=', uuid).executeTakeFirst()

export const findAccountByName = (db: Executor, name: string) =>
  db.selectFrom('connector_accounts').selectAll().where('name', '=', name).executeTakeFirst()

/** The account, locked against a concurrent change of its settings, secrets or callback secrets. */
export const lockAccountByName = (db: Executor, name: string) =>
  db.selectFrom('connector_accounts').selectAll().where('name', '=', name).forUpdate().executeTakeFirst()

export const listAccounts = (db: Executor) =>
  db.selectFrom('connector_accounts').selectAll().orderBy('mode').orderBy('name').execute()

export const updateAccount = (db: Executor, uuid: string, change: Updateable<ConnectorAccountsTable>) =>
  db
    .updateTable('connector_accounts')
    .set(change)
    .where('uuid', '=', uuid)
    .returningAll()
    .executeTakeFirstOrThrow()

export const insertCallbackSecret = (
  db: Executor,
  row: { uuid: string; account_uuid: string; secret_sealed: string; created_at: Date },
) => db.insertInto('connector_callback_secrets').values(row).execute()

/** Sets when the account's current secret(s) stop being accepted. */
export const retireCurrentCallbackSecrets = (db: Executor, accountUuid: string, at: Date) =>
  db
    .updateTable('connector_callback_secrets')
    .set({ retires_at: at })
    .where('account_uuid', '=', accountUuid)
    .where((eb) => eb.or([eb('retires_at', 'is', null), eb('retires_at', '>', at)]))
    .execute()

/** The account's callback secrets still accepted at `at`, the newest first. */
export const acceptedCallbackSecrets = (db: Executor, accountUuid: string, at: Date) =>
  db
    .selectFrom('connector_callback_secrets')
    .select(['uuid', 'secret_sealed', 'created_at', 'retires_at'])
    .where('account_uuid', '=', accountUuid)
    .where((eb) => eb.or([eb('retires_at', 'is', null), eb('retires_at', '>', at)]))
    .orderBy('created_at', 'desc')
    .orderBy('uuid', 'desc')
    .execute()

export const insertAttempt = (db: Executor, row: Insertable<PaymentAttemptsTable>) =>
  db.insertInto('payment_attempts').values(row).execute()

export const updateAttempt = (db: Executor, uuid: string, change: Updateable<PaymentAttemptsTable>) =>
  db.updateTable('payment_attempts').set(change).where('uuid', '=', uuid).execute()

/** How many rows an UPDATE changed. */
const countUpdated = async (update: { executeTakeFirst(): Promise<UpdateResult> }) =>
  Number((await update.executeTakeFirst()).numUpdatedRows)

/** Ends a try that is still `started`: how many rows changed (0 or 1). */
export const endStartedAttempt = (db: Executor, uuid: string, change: Updateable<PaymentAttemptsTable>) =>
  countUpdated(
    db.updateTable('payment_attempts').set(change).where('uuid', '=', uuid).where('result', '=', 'started'),
  )

export const listAttempts = (db: Executor, transactionUuid: string) =>
  db
    .selectFrom('payment_attempts as t')
    .innerJoin('connector_accounts as a', 'a.uuid', 't.account_uuid')
    .select([
      't.position',
      'a.name as account',
      't.result',
      't.provider_reference',
      't.detail',
      't.created_at',
    ])
    .where('t.transaction_uuid', '=', transactionUuid)
    .orderBy('t.position')
    .execute()

export const insertHandover = (db: Executor, row: Insertable<PaymentHandoversTable>) =>
  db.insertInto('payment_handovers').values(row).execute()

export const updateHandover = (
  db: Executor,
  transactionUuid: string,
  change: Updateable<PaymentHandoversTable>,
) => db.updateTable('payment_handovers').set(change).where('transaction_uuid', '=', transactionUuid).execute()

/**
 * The try `attemptUuid` took the payment: its hand-over records it, if it still waits on that try's account. A
 * hand-over that moved on (status sync finished it, or the next account's try began) is left as it is: how many
 * rows changed (0 or 1).
 */
export const recordHandedOver = (
  db: Executor,
  transactionUuid: string,
  attemptUuid: string,
  change: Updateable<PaymentHandoversTable>,
) =>
  countUpdated(
    handingOver(db, transactionUuid, change).where('account_uuid', '=', (eb) =>
      eb.selectFrom('payment_attempts').select('account_uuid').where('uuid', '=', attemptUuid),
    ),
  )

/** The hand-over goes on to another account's try, if it still waits on one: how many rows changed (0 or 1). */
export const moveHandover = (
  db: Executor,
  transactionUuid: string,
  change: Updateable<PaymentHandoversTable>,
) => countUpdated(handingOver(db, transactionUuid, change))

/** The hand-over ends failed, if it still waits on a try (no account took the payment): rows changed (0 or 1). */
export const failHandingOver = (db: Executor, transactionUuid: string, at: Date) =>
  countUpdated(handingOver(db, transactionUuid, { state: 'failed', sync_due_at: null, updated_at: at }))

/** `change` to the payment's hand-over while it still waits on an account's try. */
const handingOver = (db: Executor, transactionUuid: string, change: Updateable<PaymentHandoversTable>) =>
  db
    .updateTable('payment_handovers')
    .set(change)
    .where('transaction_uuid', '=', transactionUuid)
    .where('state', '=', 'handing_over')

export const findHandover = (db: Executor, transactionUuid: string) =>
  db
    .selectFrom('payment_handovers')
    .selectAll()
    .where('transaction_uuid', '=', transactionUuid)
    .executeTakeFirst()

/** The hand-over a provider's reference names at an account. */
/** The payment handed to the account under `reference`, its row locked (FOR UPDATE) in one statement. */
export const lockPaymentByReference = (db: Executor, accountUuid: string, reference: string) =>
  db
    .selectFrom('transactions')
    .selectAll()
    .where(
      'uuid',
      '=',
      db
        .selectFrom('payment_handovers')
        .select('transaction_uuid')
        .where('account_uuid', '=', accountUuid)
        .where('provider_reference', '=', reference),
    )
    .forUpdate()
    .executeTakeFirst()

export const findHandoverByReference = (db: Executor, accountUuid: string, reference: string) =>
  db
    .selectFrom('payment_handovers')
    .selectAll()
    .where('account_uuid', '=', accountUuid)
    .where('provider_reference', '=', reference)
    .executeTakeFirst()

/**
 * Up to `limit` hand-overs whose status sync is due, claimed: each is pushed `leaseMs` on under the row lock, so
 * another worker skips it, and a worker killed mid-sync leaves it due again once the lease ends.
 */
export const claimDueHandovers = (db: Executor, now: Date, limit: number, leaseMs: number) =>
  db
    .updateTable('payment_handovers')
    .set({ sync_due_at: new Date(now.getTime() + leaseMs) })
    .where(
      'transaction_uuid',
      'in',
      db
        .selectFrom('payment_handovers')
        .select('transaction_uuid')
        .where('sync_due_at', '<=', now)
        .orderBy('sync_due_at')
        .limit(limit)
        .forUpdate()
        .skipLocked(),
    )
    .returningAll()
    .execute()

/** The payments handed over, or tried, under a provider's reference (whichever account): a search's uuids. */
export const paymentsWithReference = async (db: Executor, reference: string, limit: number) =>
  (
    await db
      .selectFrom('payment_handovers')
      .select('transaction_uuid')
      .where('provider_reference', '=', reference)
      .union(
        db
          .selectFrom('payment_attempts')
          .select('transaction_uuid')
          .where('provider_reference', '=', reference),
      )
      .limit(limit)
      .execute()
  ).map((row) => row.transaction_uuid)

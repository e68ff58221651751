import type { Insertable, Updateable } from 'kysely'
import type { Executor } from '../../db/index.ts'
import type { ConnectorAccountsTable } from '../../db/types.ts'

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

import type { Insertable } from 'kysely'
import type { Executor } from '../../db/index.ts'
import { revokeLive } from '../../db/queries.ts'
import type { ApiKeysTable, Merchant, MerchantFeesTable, MerchantsTable, Mode } from '../../db/types.ts'

export interface KeyWithMerchant {
  key_uuid: string
  key_id: string
  mode: Mode
  secret_sealed: string
  revoked_at: Date | null
  merchant: Merchant
}

const keyWithMerchant = (db: Executor) =>
  db
    .selectFrom('api_keys as k')
    .innerJoin('merchants as m', 'm.uuid', 'k.merchant_uuid')
    .select([
      'k.uuid as key_uuid',
      'k.key_id',
      'k.mode',
      'k.secret_sealed',
      'k.revoked_at',
      'm.uuid',
      'm.name',
      'm.settlement_currency',
      'm.settlement_hold_seconds',
      'm.transaction_ttl_seconds',
      'm.fx_markup_bps',
      'm.payout_fee_bps',
      'm.payout_fixed_fee_micro',
      'm.dashboard_require_totp',
      'm.created_at',
      'm.updated_at',
    ])

type Joined = Awaited<ReturnType<ReturnType<typeof keyWithMerchant>['executeTakeFirst']>>

function split(row: Joined): KeyWithMerchant | null {
  if (!row) return null
  const { key_uuid, key_id, mode, secret_sealed, revoked_at, ...merchant } = row
  return { key_uuid, key_id, mode, secret_sealed, revoked_at, merchant }
}

export const findKeyBySecretHash = async (db: Executor, hash: string) =>
  split(await keyWithMerchant(db).where('k.secret_hash', '=', hash).executeTakeFirst())

export const findKeyByKeyId = async (db: Executor, keyId: string) =>
  split(await keyWithMerchant(db).where('k.key_id', '=', keyId).executeTakeFirst())

export const insertMerchant = (db: Executor, row: Insertable<MerchantsTable>) =>
  db.insertInto('merchants').values(row).returningAll().executeTakeFirstOrThrow()

export const findMerchant = (db: Executor, uuid: string) =>
  db.selectFrom('merchants').selectAll().where('uuid', '=', uuid).executeTakeFirst()

export const listMerchants = (db: Executor) =>
  db.selectFrom('merchants').selectAll().orderBy('created_at').execute()

export const updateMerchant = (db: Executor, uuid: string, changes: Partial<Insertable<MerchantsTable>>) =>
  db.updateTable('merchants').set(changes).where('uuid', '=', uuid).returningAll().executeTakeFirst()

export const insertKey = (db: Executor, row: Insertable<ApiKeysTable>) =>
  db
    .insertInto('api_keys')
    .values(row)
    .returning(['uuid', 'key_id', 'mode', 'created_at'])
    .executeTakeFirstOrThrow()

export const revokeKey = (db: Executor, keyId: string, at: Date) =>
  revokeLive(db, 'api_keys', 'key_id', keyId, at)
    .returning(['key_id', 'merchant_uuid', 'revoked_at'])
    .executeTakeFirst()

/** What may be shown of a key: never the secret, its hash or seal. */
const SHOWN_KEY_COLUMNS = [
  'key_id',
  'name',
  'mode',
  'created_at',
  'revoked_at',
  'last_used_at',
  'secret_last4',
] as const

/** A merchant's keys, both modes, newest first: what may be shown. */
export const listKeys = (db: Executor, merchantUuid: string) =>
  db
    .selectFrom('api_keys')
    .select(SHOWN_KEY_COLUMNS)
    .where('merchant_uuid', '=', merchantUuid)
    .orderBy('created_at', 'desc')
    .orderBy('key_id', 'desc')
    .execute()

/** Revokes a key of the merchant's that is not revoked yet; undefined when there is none such. */
export const revokeMerchantKey = (db: Executor, merchantUuid: string, keyId: string, at: Date) =>
  db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('key_id', '=', keyId)
    .where('merchant_uuid', '=', merchantUuid)
    .where('revoked_at', 'is', null)
    .returning(['key_id', 'mode', 'revoked_at'])
    .executeTakeFirst()

/** Names one of the merchant's keys; what may be shown of it, or undefined when the merchant has none such. */
export const renameMerchantKey = (db: Executor, merchantUuid: string, keyId: string, name: string | null) =>
  db
    .updateTable('api_keys')
    .set({ name })
    .where('key_id', '=', keyId)
    .where('merchant_uuid', '=', merchantUuid)
    .returning(SHOWN_KEY_COLUMNS)
    .executeTakeFirst()

export const findMerchantKey = (db: Executor, merchantUuid: string, keyId: string) =>
  db
    .selectFrom('api_keys')
    .select(['key_id', 'mode', 'revoked_at'])
    .where('key_id', '=', keyId)
    .where('merchant_uuid', '=', merchantUuid)
    .executeTakeFirst()

export const touchKey = (db: Executor, keyId: string, at: Date) =>
  db.updateTable('api_keys').set({ last_used_at: at }).where('key_id', '=', keyId).execute()

/** A merchant's fee for one payment method: its rate, and the merchant's share of it (the customer pays the rest). */
export type FeeSetting = Pick<MerchantFeesTable, 'fee_bps' | 'merchant_fee_share_bps'>
const FEE_COLUMNS = ['fee_bps', 'merchant_fee_share_bps'] as const

/** The merchant's fee for a method; undefined when the merchant has none set. */
export const findFee = (db: Executor, merchantUuid: string, paymentMethod: string) =>
  db
    .selectFrom('merchant_fees')
    .select(FEE_COLUMNS)
    .where((eb) => eb.and({ merchant_uuid: merchantUuid, payment_method: paymentMethod }))
    .executeTakeFirst()

/** Sets the merchant's fee for a method, whether it had one or not. */
export const upsertFee = (db: Executor, merchantUuid: string, paymentMethod: string, fee: FeeSetting) => {
  const set = { ...fee, updated_at: new Date() }
  return db
    .insertInto('merchant_fees')
    .values({ merchant_uuid: merchantUuid, payment_method: paymentMethod, ...set })
    .onConflict((oc) => oc.columns(['merchant_uuid', 'payment_method']).doUpdateSet(set))
    .returningAll()
    .executeTakeFirstOrThrow()
}

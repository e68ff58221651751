import { LRUCache } from 'lru-cache'
import type { Config } from '../../config.ts'
import type { Db, Executor, Trx } from '../../db/index.ts'
import type { Mode } from '../../db/types.ts'
import type { KnownKey } from '../../http/auth.ts'
import { decryptSecret, encryptSecret, sha256Hex } from '../../lib/crypto.ts'
import { newId, randomBase62, SECRET_LENGTH } from '../../lib/ids.ts'
import { isKnownCurrency } from '../../lib/money.ts'
import * as repo from './repository.ts'

export interface ApiKeyCredentials {
  key_id: string
  secret: string
}

/** A key just made: its credentials (the secret, shown once), its mode and when. */
export interface NewApiKey extends ApiKeyCredentials {
  mode: Mode
  name: string | null
  created_at: Date
}

/** Work to do in the transaction that changes a key (the dashboard's audit row, say). */
export type AlsoInTransaction<T> = (trx: Trx, key: T) => Promise<unknown>

/** The longest name a key may have. */
export const API_KEY_NAME_MAX_LENGTH = 100

/** A key name as given: some text besides spaces, and no control character (a name is shown on a page). */
export const API_KEY_NAME_PATTERN =
  '^[^\\u0000-\\u001f\\u007f]*[^\\s\\u0000-\\u001f\\u007f][^\\u0000-\\u001f\\u007f]*$'

/** A key name as kept: without its surrounding spaces; undefined when `name` is not one (API_KEY_NAME_PATTERN). */
export function keyName(name: string): string | undefined {
  const trimmed = name.trim()
  return new RegExp(API_KEY_NAME_PATTERN).test(name) && trimmed.length <= API_KEY_NAME_MAX_LENGTH
    ? trimmed
    : undefined
}

/** How often at most a process writes a key's `last_used_at`. */
export const KEY_USE_WRITE_INTERVAL_MS = 60_000

export type MerchantService = ReturnType<typeof createMerchantService>

type Fee = repo.FeeSetting

/** What the merchant operations need, with this process's caches of keys and fees. */
export interface MerchantDeps {
  db: Db
  config: Config
  keys: LRUCache<string, KnownKey>
  fees: LRUCache<string, Fee>
  /** Each merchant's settlement hold in seconds, cached like its fees. */
  holds: LRUCache<string, number>
  /** Keys whose `last_used_at` this process wrote within the last KEY_USE_WRITE_INTERVAL_MS. */
  used: LRUCache<string, true>
}

export function createMerchantService(input: { db: Db; config: Config }) {
  const { db, config } = input
  const deps: MerchantDeps = {
    db,
    config,
    // A short-lived cache saves a database round trip per request; revocation is seen within its TTL.
    keys: new LRUCache<string, KnownKey>({ max: 10_000, ttl: config.keyCacheTtlMs }),
    fees: new LRUCache<string, Fee>({ max: 10_000, ttl: config.keyCacheTtlMs }),
    holds: new LRUCache<string, number>({ max: 10_000, ttl: config.keyCacheTtlMs }),
    used: new LRUCache<string, true>({ max: 10_000, ttl: KEY_USE_WRITE_INTERVAL_MS }),
  }
  return {
    byApiKey: (secret: string) => findKeyBySecret(deps, secret),
    byKeyId: (keyId: string) => findKeyById(deps, keyId),
    createMerchant: (merchant: { name: string; settlementCurrency?: string }) =>
      createMerchant(deps, merchant),
    updateMerchant: (uuid: string, changes: MerchantChanges) => updateMerchant(deps, uuid, changes),
    getMerchant: (uuid: string, executor: Executor = db) => repo.findMerchant(executor, uuid),
    listMerchants: () => repo.listMerchants(db),
    createKey: (
      merchantUuid: string,
      mode: Mode,
      options: { name?: string | null; also?: AlsoInTransaction<NewApiKey> } = {},
    ) => createKeyForMerchant(deps, merchantUuid, { mode, name: options.name }, options.also),
    renameMerchantKey: (
      merchantUuid: string,
      keyId: string,
      name: string | null,
      also?: AlsoInTransaction<ListedKey>,
    ) => renameMerchantKey(deps, merchantUuid, keyId, name, also),
    revokeKey: (keyId: string) => revokeKey(deps, keyId),
    listKeys: (merchantUuid: string) => repo.listKeys(db, merchantUuid),
    revokeMerchantKey: (merchantUuid: string, keyId: string, also?: AlsoInTransaction<RevokedKey>) =>
      revokeMerchantKey(deps, merchantUuid, keyId, also),
    keyUsed: (keyId: string) => keyUsed(deps, keyId),
    fee: (merchantUuid: string, paymentMethod: string) => merchantFee(deps, merchantUuid, paymentMethod),
    settlementHoldSeconds: (merchantUuid: string, executor: Executor = db) =>
      settlementHoldSeconds(deps, merchantUuid, executor),
    setFee: (merchantUuid: string, paymentMethod: string, feeBps: number, shareBps: number) =>
      setMerchantFee(deps, merchantUuid, paymentMethod, feeBps, shareBps),
  }
}

function toCached(deps: Pick<MerchantDeps, 'config'>, row: repo.KeyWithMerchant): KnownKey {
  return {
    auth: { keyId: row.key_id, mode: row.mode, merchant: row.merchant },
    revoked: row.revoked_at !== null,
    secret: decryptSecret(deps.config.masterKey, row.secret_sealed),
  }
}

async function lookup(
  deps: MerchantDeps,
  cacheKey: string,
  load: () => Promise<repo.KeyWithMerchant | null>,
): Promise<KnownKey | null> {
  const hit = deps.keys.get(cacheKey)
  if (hit) return hit
  const row = await load()
  if (!row) return null
  const entry = toCached(deps, row)
  deps.keys.set(cacheKey, entry)
  return entry
}

/** The key and its merchant for an `X-Api-Key` secret; null when unknown. */
export function findKeyBySecret(deps: MerchantDeps, secret: string) {
  const hash = sha256Hex(secret)
  return lookup(deps, `h:${hash}`, () => repo.findKeyBySecretHash(deps.db, hash))
}

/** The key, its merchant and its secret for an `X-Signature` key_id; null when unknown. */
export const findKeyById = (deps: MerchantDeps, keyId: string) =>
  lookup(deps, `i:${keyId}`, () => repo.findKeyByKeyId(deps.db, keyId))

async function createKey(
  deps: Pick<MerchantDeps, 'config'>,
  db: Executor,
  merchantUuid: string,
  mode: Mode,
  name: string | null = null,
): Promise<NewApiKey> {
  const secret = `sk_${mode}_${randomBase62(SECRET_LENGTH)}`
  const keyId = `mk_${mode}_${randomBase62(24)}`
  const row = await repo.insertKey(db, {
    uuid: newId(),
    merchant_uuid: merchantUuid,
    key_id: keyId,
    mode,
    secret_hash: sha256Hex(secret),
    secret_sealed: encryptSecret(deps.config.masterKey, secret),
    secret_last4: secret.slice(-4),
    name,
    created_at: new Date(),
  })
  return { key_id: keyId, secret, mode, name, created_at: row.created_at }
}

export async function createMerchant(
  deps: Pick<MerchantDeps, 'db' | 'config'>,
  input: { name: string; settlementCurrency?: string },
) {
  const settlementCurrency = input.settlementCurrency ?? 'USDT'
  if (!isKnownCurrency(settlementCurrency))
    throw new Error(`unknown settlement currency ${settlementCurrency}`)
  const now = new Date()
  const merchant = await repo.insertMerchant(deps.db, {
    uuid: newId(),
    name: input.name,
    settlement_currency: settlementCurrency,
    settlement_hold_seconds: 86400,
    transaction_ttl_seconds: 1800,
    fx_markup_bps: 0,
    created_at: now,
    updated_at: now,
  })
  const credentials = ({ key_id, secret }: NewApiKey): ApiKeyCredentials => ({ key_id, secret })
  const test = credentials(await createKey(deps, deps.db, merchant.uuid, 'test'))
  const live = credentials(await createKey(deps, deps.db, merchant.uuid, 'live'))
  return { merchant, keys: { test, live } }
}

export interface MerchantChanges {
  settlementHoldSeconds?: number
  transactionTtlSeconds?: number
  fxMarkupBps?: number
  payoutFeeBps?: number
  payoutFixedFeeMicro?: number
  name?: string
}

export async function updateMerchant(deps: MerchantDeps, uuid: string, changes: MerchantChanges) {
  const updated = await repo.updateMerchant(deps.db, uuid, {
    ...(changes.name !== undefined && { name: changes.name }),
    ...(changes.settlementHoldSeconds !== undefined && {
      settlement_hold_seconds: changes.settlementHoldSeconds,
    }),
    ...(changes.transactionTtlSeconds !== undefined && {
      transaction_ttl_seconds: changes.transactionTtlSeconds,
    }),
    ...(changes.fxMarkupBps !== undefined && { fx_markup_bps: changes.fxMarkupBps }),
    ...(changes.payoutFeeBps !== undefined && { payout_fee_bps: changes.payoutFeeBps }),
    ...(changes.payoutFixedFeeMicro !== undefined && {
      payout_fixed_fee_micro: changes.payoutFixedFeeMicro,
    }),
    updated_at: new Date(),
  })
  deps.keys.clear()
  deps.holds.delete(uuid)
  return updated ?? null
}

/**
 * A new key of `mode` for the merchant, named `name` (or not); null when there is no such merchant. `also` runs
 * in the transaction that makes it (the dashboard's audit row).
 */
export async function createKeyForMerchant(
  deps: Pick<MerchantDeps, 'db' | 'config'>,
  merchantUuid: string,
  key: { mode: Mode; name?: string | null },
  also?: AlsoInTransaction<NewApiKey>,
): Promise<NewApiKey | null> {
  if (!(await repo.findMerchant(deps.db, merchantUuid))) return null
  return deps.db.transaction().execute(async (trx) => {
    const made = await createKey(deps, trx, merchantUuid, key.mode, key.name ?? null)
    await also?.(trx, made)
    return made
  })
}

/** A key of the merchant's as the dashboard lists it: never its secret, its hash or its seal. */
export type ListedKey = Awaited<ReturnType<typeof repo.listKeys>>[number]

/**
 * Names one of the merchant's keys `name` (null: no name), revoked or not, `also` in the same transaction (the
 * audit row); `not_found` when the merchant has no such key.
 */
export async function renameMerchantKey(
  deps: Pick<MerchantDeps, 'db'>,
  merchantUuid: string,
  keyId: string,
  name: string | null,
  also?: AlsoInTransaction<ListedKey>,
): Promise<ListedKey | 'not_found'> {
  return deps.db.transaction().execute(async (trx) => {
    const renamed = await repo.renameMerchantKey(trx, merchantUuid, keyId, name)
    if (!renamed) return 'not_found'
    await also?.(trx, renamed)
    return renamed
  })
}

export interface RevokedKey {
  key_id: string
  mode: Mode
  revoked_at: Date
}

/**
 * Revokes one of the merchant's keys, `also` in the same transaction: `not_found` when the merchant has no such
 * key (another merchant's is not theirs to know of), `already_revoked` when it was revoked before. This
 * process stops trusting it at once; others within the key cache's TTL.
 */
export async function revokeMerchantKey(
  deps: MerchantDeps,
  merchantUuid: string,
  keyId: string,
  also?: AlsoInTransaction<RevokedKey>,
): Promise<RevokedKey | 'not_found' | 'already_revoked'> {
  const result = await deps.db.transaction().execute(async (trx) => {
    const revoked = await repo.revokeMerchantKey(trx, merchantUuid, keyId, new Date())
    if (!revoked)
      return (await repo.findMerchantKey(trx, merchantUuid, keyId)) ? 'already_revoked' : 'not_found'
    const key = { key_id: revoked.key_id, mode: revoked.mode, revoked_at: revoked.revoked_at as Date }
    await also?.(trx, key)
    return key
  })
  deps.keys.clear()
  return result
}

/**
 * Records that a key authenticated a request: its `last_used_at`, written at most once per
 * KEY_USE_WRITE_INTERVAL_MS per key in this process. The write's promise, for the caller to catch and not
 * await; null when it is not written this time.
 */
export function keyUsed(deps: MerchantDeps, keyId: string): Promise<unknown> | null {
  if (deps.used.has(keyId)) return null
  deps.used.set(keyId, true)
  return repo.touchKey(deps.db, keyId, new Date())
}

export async function revokeKey(deps: MerchantDeps, keyId: string) {
  const revoked = await repo.revokeKey(deps.db, keyId, new Date())
  // This process stops trusting the key at once; others within the cache TTL.
  deps.keys.clear()
  return revoked ?? null
}

/**
 * How long the merchant's paid money is held before it is available, cached like its fees (a change is seen by
 * other processes within the TTL); a merchant that does not exist has the default day.
 */
export async function settlementHoldSeconds(
  deps: MerchantDeps,
  merchantUuid: string,
  /** The caller's transaction, when it holds one: a miss is read there, never on a second connection. */
  executor: Executor = deps.db,
): Promise<number> {
  return readThrough(
    deps.holds,
    merchantUuid,
    async () => (await repo.findMerchant(executor, merchantUuid))?.settlement_hold_seconds ?? 86400,
  )
}

/** The merchant's fee for a method, cached like its keys (a change is seen by other processes within the TTL). */
export async function merchantFee(
  deps: MerchantDeps,
  merchantUuid: string,
  paymentMethod: string,
): Promise<Fee> {
  return readThrough(
    deps.fees,
    `${merchantUuid}:${paymentMethod}`,
    async () =>
      (await repo.findFee(deps.db, merchantUuid, paymentMethod)) ?? {
        fee_bps: 0,
        merchant_fee_share_bps: 10000,
      },
  )
}

/** The cached value of `key`, or what `load` reads, kept in the cache. */
async function readThrough<Value extends {}>(
  cache: LRUCache<string, Value>,
  key: string,
  load: () => Promise<Value>,
): Promise<Value> {
  const hit = cache.get(key)
  if (hit !== undefined) return hit
  const value = await load()
  cache.set(key, value)
  return value
}

export async function setMerchantFee(
  deps: MerchantDeps,
  merchantUuid: string,
  paymentMethod: string,
  feeBps: number,
  shareBps: number,
) {
  deps.fees.clear()
  return repo.upsertFee(deps.db, merchantUuid, paymentMethod, {
    fee_bps: feeBps,
    merchant_fee_share_bps: shareBps,
  })
}

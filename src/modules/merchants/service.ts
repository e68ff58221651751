import { LRUCache } from 'lru-cache'
import type { Config } from '../../config.ts'
import type { Db, Executor } from '../../db/index.ts'
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

export type MerchantService = ReturnType<typeof createMerchantService>

export function createMerchantService(deps: { db: Db; config: Config }) {
  const { db, config } = deps
  // A short-lived cache saves a database round trip per request; revocation is seen within its TTL.
  const cache = new LRUCache<string, KnownKey>({ max: 10_000, ttl: config.keyCacheTtlMs })
  const fees = new LRUCache<string, { fee_bps: number; merchant_fee_share_bps: number }>({
    max: 10_000,
    ttl: config.keyCacheTtlMs,
  })

  function toCached(row: repo.KeyWithMerchant): KnownKey {
    return {
      auth: { keyId: row.key_id, mode: row.mode, merchant: row.merchant },
      revoked: row.revoked_at !== null,
      secret: decryptSecret(config.masterKey, row.secret_sealed),
    }
  }

  async function lookup(
    cacheKey: string,
    load: () => Promise<repo.KeyWithMerchant | null>,
  ): Promise<KnownKey | null> {
    const hit = cache.get(cacheKey)
    if (hit) return hit
    const row = await load()
    if (!row) return null
    const entry = toCached(row)
    cache.set(cacheKey, entry)
    return entry
  }

  async function createKey(merchantUuid: string, mode: Mode): Promise<ApiKeyCredentials> {
    const secret = `sk_${mode}_${randomBase62(SECRET_LENGTH)}`
    const keyId = `mk_${mode}_${randomBase62(24)}`
    await repo.insertKey(db, {
      uuid: newId(),
      merchant_uuid: merchantUuid,
      key_id: keyId,
      mode,
      secret_hash: sha256Hex(secret),
      secret_sealed: encryptSecret(config.masterKey, secret),
      secret_last4: secret.slice(-4),
      created_at: new Date(),
    })
    return { key_id: keyId, secret }
  }

  return {
    /** The key and its merchant for an `X-Api-Key` secret; null when unknown. */
    byApiKey: (secret: string) => {
      const hash = sha256Hex(secret)
      return lookup(`h:${hash}`, () => repo.findKeyBySecretHash(db, hash))
    },

    /** The key, its merchant and its secret for an `X-Signature` key_id; null when unknown. */
    byKeyId: (keyId: string) => lookup(`i:${keyId}`, () => repo.findKeyByKeyId(db, keyId)),

    async createMerchant(input: { name: string; settlementCurrency?: string }) {
      const settlementCurrency = input.settlementCurrency ?? 'USDT'
      if (!isKnownCurrency(settlementCurrency))
        throw new Error(`unknown settlement currency ${settlementCurrency}`)
      const now = new Date()
      const merchant = await repo.insertMerchant(db, {
        uuid: newId(),
        name: input.name,
        settlement_currency: settlementCurrency,
        settlement_hold_seconds: 86400,
        transaction_ttl_seconds: 1800,
        fx_markup_bps: 0,
        created_at: now,
        updated_at: now,
      })
      const test = await createKey(merchant.uuid, 'test')
      const live = await createKey(merchant.uuid, 'live')
      return { merchant, keys: { test, live } }
    },

    async updateMerchant(
      uuid: string,
      changes: {
        settlementHoldSeconds?: number
        transactionTtlSeconds?: number
        fxMarkupBps?: number
        payoutFeeBps?: number
        payoutFixedFeeMicro?: number
        name?: string
      },
    ) {
      const updated = await repo.updateMerchant(db, uuid, {
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
      cache.clear()
      return updated ?? null
    },

    getMerchant: (uuid: string, executor: Executor = db) => repo.findMerchant(executor, uuid),
    listMerchants: () => repo.listMerchants(db),

    async createKey(merchantUuid: string, mode: Mode): Promise<ApiKeyCredentials | null> {
      if (!(await repo.findMerchant(db, merchantUuid))) return null
      return createKey(merchantUuid, mode)
    },

    async revokeKey(keyId: string) {
      const revoked = await repo.revokeKey(db, keyId, new Date())
      // This process stops trusting the key at once; others within the cache TTL.
      cache.clear()
      return revoked ?? null
    },

    /** The merchant's fee for a method, cached like its keys (a change is seen by other processes within the TTL). */
    async fee(merchantUuid: string, paymentMethod: string) {
      const cacheKey = `${merchantUuid}:${paymentMethod}`
      const hit = fees.get(cacheKey)
      if (hit) return hit
      const fee = (await repo.findFee(db, merchantUuid, paymentMethod)) ?? {
        fee_bps: 0,
        merchant_fee_share_bps: 10000,
      }
      fees.set(cacheKey, fee)
      return fee
    },

    async setFee(merchantUuid: string, paymentMethod: string, feeBps: number, shareBps: number) {
      fees.clear()
      return repo.upsertFee(db, merchantUuid, paymentMethod, feeBps, shareBps)
    },

    listFees: (merchantUuid: string) => repo.listFees(db, merchantUuid),
  }
}

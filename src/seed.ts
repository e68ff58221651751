import type { Services } from './app.ts'
import type { Db } from './db/index.ts'

/** Demo market rates: units of each currency per 1 USDT. */
export const DEMO_RATES: Record<string, string> = {
  USD: '1',
  EUR: '0.92',
  GBP: '0.79',
  RUB: '92.15',
  JPY: '151.2',
  KWD: '0.307',
}

const DEMO_REQUISITES = [
  {
    method: 'p2p_card',
    fields: { card_number: '2200700112345678', bank_name: 'Demo Bank', holder_name: 'A. Smith' },
  },
  {
    method: 'p2p_card',
    fields: { card_number: '2200700187654321', bank_name: 'Demo Bank', holder_name: 'B. Jones' },
  },
  {
    method: 'bank_transfer',
    fields: {
      account_number: '40817810099910004312',
      bank_name: 'Demo Bank',
      bik: '044525225',
      holder_name: 'Demo Merchant LLC',
    },
  },
] as const

export const DEMO_MERCHANT_NAME = 'Demo Merchant'

/**
 * First start of the embedded default: demo rates, a pool of demo requisites and a demo merchant.
 * Returns the demo merchant's test key; later starts find the merchant and return its key again.
 */
export async function seedDemo(
  db: Db,
  services: Services,
): Promise<{ merchantUuid: string; keyId: string; secret: string; created: boolean }> {
  const existing = await db
    .selectFrom('merchants')
    .innerJoin('api_keys', 'api_keys.merchant_uuid', 'merchants.uuid')
    .select(['merchants.uuid', 'api_keys.key_id'])
    .where('merchants.name', '=', DEMO_MERCHANT_NAME)
    .where('api_keys.mode', '=', 'test')
    .where('api_keys.revoked_at', 'is', null)
    .orderBy('api_keys.created_at')
    .executeTakeFirst()
  if (existing) {
    const key = await services.merchants.byKeyId(existing.key_id)
    if (key)
      return { merchantUuid: existing.uuid, keyId: existing.key_id, secret: key.secret, created: false }
  }
  for (const [currency, rate] of Object.entries(DEMO_RATES))
    await services.rates.setMarketRate(currency, rate)
  const pool = await services.requisites.list()
  if (pool.length === 0)
    for (const r of DEMO_REQUISITES) await services.requisites.add(r.method, { ...r.fields })
  const { merchant, keys } = await services.merchants.createMerchant({ name: DEMO_MERCHANT_NAME })
  await services.merchants.setFee(merchant.uuid, 'card', 250, 10000)
  await services.merchants.setFee(merchant.uuid, 'p2p_card', 150, 5000)
  await services.merchants.setFee(merchant.uuid, 'bank_transfer', 100, 0)
  // Payouts: 1 % of the USDT amount plus 1 USDT.
  await services.merchants.updateMerchant(merchant.uuid, {
    payoutFeeBps: 100,
    payoutFixedFeeMicro: 1_000_000,
  })
  return { merchantUuid: merchant.uuid, keyId: keys.test.key_id, secret: keys.test.secret, created: true }
}

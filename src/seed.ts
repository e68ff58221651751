import type { Services } from './app.ts'
import type { Db } from './db/index.ts'
import { randomBase62 } from './lib/ids.ts'
import { CLI } from './modules/users/deps.ts'

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
/** The demo merchant's owner, who signs in to the dashboard. */
export const DEMO_OWNER_EMAIL = 'owner@demo-merchant.example'

/**
 * The demo owner, made once with a generated password that is returned to be printed once (only its hash is
 * kept); null when the owner exists already.
 */
async function demoOwner(services: Services, merchantUuid: string) {
  const users = await services.users.list(merchantUuid)
  if (users.some((user) => user.email === DEMO_OWNER_EMAIL)) return null
  const password = randomBase62(20)
  const invitation = await services.users.invite(
    { merchantUuid, email: DEMO_OWNER_EMAIL, role: 'owner' },
    CLI,
  )
  const token = new URL(invitation.link).searchParams.get('token') as string
  await services.users.acceptInvitation({ token, password }, { ip: null, userAgent: 'npm start' })
  return { email: DEMO_OWNER_EMAIL, password }
}

/**
 * First start of the embedded default: demo rates, a pool of demo requisites and a demo merchant.
 * Returns the demo merchant's test key; later starts find the merchant and return its key again.
 */
export async function seedDemo(
  db: Db,
  services: Services,
): Promise<{
  merchantUuid: string
  keyId: string
  secret: string
  created: boolean
  owner: { email: string; password: string } | null
}> {
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
      return {
        merchantUuid: existing.uuid,
        keyId: existing.key_id,
        secret: key.secret,
        created: false,
        owner: await demoOwner(services, existing.uuid),
      }
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
  return {
    merchantUuid: merchant.uuid,
    keyId: keys.test.key_id,
    secret: keys.test.secret,
    created: true,
    owner: await demoOwner(services, merchant.uuid),
  }
}

import { extId } from './factories.ts'

/** A TRC20 USDT wallet the payout validation accepts. */
export const TRC20 = { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' }

/** A POST /integration/payouts body: 100.00 USD to a TRC20 wallet, with a fresh external_id. */
export const newPayout = (overrides: Record<string, unknown> = {}) => ({
  external_id: extId('po'),
  amount: 10000,
  currency: 'USD',
  method: 'usdt_wallet',
  destination: TRC20,
  ...overrides,
})

import type { PayoutRow } from '../../db/types.ts'
import type { Posting } from '../ledger/service.ts'
import { PAYOUT_CURRENCY } from './deps.ts'

/** The payout's movements of the merchant's USDT, one journal entry per kind and payout. */
export function payoutPosting(
  row: PayoutRow,
  kind: 'reserved' | 'completed' | 'released',
  at: Date,
): Posting {
  const total = row.payout_usdt_amount_micro
  const lines: Posting['lines'] = {
    // Creation: the total leaves what the merchant can spend and is held for the payout.
    reserved: [
      { account: 'available' as const, amount: -total },
      { account: 'reserved' as const, amount: total },
    ],
    // Paid out: the amount went to the beneficiary and the fee to the gateway.
    completed: [
      { account: 'reserved' as const, amount: -total },
      { account: 'payouts_out' as const, amount: row.amount_usdt_micro },
      { account: 'payout_fees' as const, amount: row.fee_usdt_micro },
    ],
    // Failed: the reservation returns to the available balance, fee included.
    released: [
      { account: 'reserved' as const, amount: -total },
      { account: 'available' as const, amount: total },
    ],
  }[kind]
  return {
    merchantUuid: row.merchant_uuid,
    mode: row.mode,
    kind: `payout_${kind}`,
    reference: { type: 'payout', uuid: row.uuid },
    currency: PAYOUT_CURRENCY,
    lines,
    at,
    mustStayNonNegative: kind === 'reserved' ? ['available'] : [],
  }
}

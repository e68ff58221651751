import type { PayoutRow } from '../../db/types.ts'
import { iso } from '../../lib/time.ts'
import type { PayoutView } from './schemas.ts'

/** The payout as the API and its events show it. */
export function payoutView(row: PayoutRow): PayoutView {
  const destination = row.destination as Record<string, string>
  return {
    uuid: row.uuid,
    merchant_uuid: row.merchant_uuid,
    mode: row.mode,
    external_id: row.external_id,
    amount: row.amount,
    currency: row.currency,
    method: row.method,
    status: row.status,
    destination,
    metadata: row.metadata as Record<string, string> | null,
    callback_url: row.callback_url,
    failure_reason: row.failure_reason,
    payout_usdt_amount_micro: row.payout_usdt_amount_micro,
    quote_id: row.quote_uuid,
    fx: {
      fx_rate: row.fx_rate,
      fx_rate_updated_at: row.fx_rate_updated_at.toISOString(),
      amount_usdt_micro: String(row.amount_usdt_micro),
      fee_usdt_micro: String(row.fee_usdt_micro),
      payout_usdt_amount_micro: String(row.payout_usdt_amount_micro),
      ...(row.quote_uuid && { quote_id: row.quote_uuid }),
    },
    wallet:
      row.method === 'usdt_wallet'
        ? {
            uuid: row.wallet_uuid as string,
            type: destination.network as 'TRC20' | 'ERC20',
            address: destination.address as string,
            label: `USDT ${destination.network}`,
          }
        : null,
    card_payout:
      row.method === 'card'
        ? {
            card_number: destination.card_number as string,
            holder_name: destination.holder_name as string,
            brand: row.card_brand ?? 'unknown',
            last4: (destination.card_number as string).slice(-4),
          }
        : null,
    aggregate_version: row.aggregate_version,
    completed_at: iso(row.completed_at),
    failed_at: iso(row.failed_at),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  }
}

import type { PayoutRow } from '../../db/types.ts'
import { type CsvColumn, fieldColumns } from '../../http/csv.ts'
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
            ...(row.transaction_hash && { transaction_hash: row.transaction_hash }),
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

/**
 * The columns of a payouts CSV export, in their documented order: the view's fields under their names, with
 * the `fx` object's amounts as columns of their own and the destination (masked as in the API) as JSON text.
 */
export const PAYOUT_CSV_COLUMNS: CsvColumn<PayoutView>[] = [
  ...fieldColumns<PayoutView>(['uuid', 'external_id', 'mode', 'status', 'method', 'amount', 'currency']),
  { header: 'fx_rate', value: (view) => view.fx.fx_rate },
  { header: 'amount_usdt_micro', value: (view) => Number(view.fx.amount_usdt_micro) },
  { header: 'fee_usdt_micro', value: (view) => Number(view.fx.fee_usdt_micro) },
  ...fieldColumns<PayoutView>([
    'payout_usdt_amount_micro',
    'quote_id',
    'destination',
    'metadata',
    'failure_reason',
    'created_at',
    'updated_at',
    'completed_at',
    'failed_at',
    'aggregate_version',
  ]),
]

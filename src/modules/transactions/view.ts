import type { TransactionRow } from '../../db/types.ts'
import { fieldColumns } from '../../http/csv.ts'
import { formatMinor } from '../../lib/money.ts'
import { iso } from '../../lib/time.ts'
import type { TransactionDeps } from './deps.ts'
import type { TransactionView } from './schemas.ts'

/** The transaction as the API and its events show it. */
export function transactionView(deps: Pick<TransactionDeps, 'config'>, row: TransactionRow): TransactionView {
  const { publicBaseUrl } = deps.config
  return {
    uuid: row.uuid,
    type: row.type,
    mode: row.mode,
    amount: row.amount,
    gross_amount: row.gross_amount,
    net_amount: row.net_amount,
    fee_amount: row.fee_amount,
    fee_payer: row.fee_payer,
    merchant_fee_share_bps: row.merchant_fee_share_bps,
    merchant_fee_merchant_amount: row.merchant_fee_merchant_amount,
    merchant_fee_customer_amount: row.merchant_fee_customer_amount,
    currency: row.currency,
    settlement_currency: row.settlement_currency,
    settlement_amount: row.settlement_amount,
    settlement_amount_formatted: formatMinor(row.settlement_amount, row.settlement_currency),
    fx_rate: row.fx_rate,
    fx_rate_updated_at: iso(row.fx_rate_updated_at),
    payment_method: row.payment_method,
    status: row.status,
    external_id: row.external_id,
    description: row.description,
    metadata: row.metadata,
    callback_url: row.callback_url,
    success_url: row.success_url,
    fail_url: row.fail_url,
    payment_url: `${publicBaseUrl}/pay/${row.payment_token}`,
    h2h_url: row.requisites ? `${publicBaseUrl}/integration/transactions/${row.uuid}/h2h` : null,
    requisites: row.requisites,
    expires_at: iso(row.expires_at),
    paid_at: iso(row.paid_at),
    settle_available_at: iso(row.settle_available_at),
    ...(row.amount_received != null && { amount_received: row.amount_received }),
    aggregate_version: row.aggregate_version,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  }
}

/** The columns of a transactions CSV export, in their documented order: the view's fields under their names. */
export const TRANSACTION_CSV_FIELDS = [
  'uuid',
  'external_id',
  'type',
  'mode',
  'status',
  'payment_method',
  'amount',
  'gross_amount',
  'net_amount',
  'fee_amount',
  'fee_payer',
  'currency',
  'settlement_amount',
  'settlement_currency',
  'fx_rate',
  'description',
  'metadata',
  'created_at',
  'updated_at',
  'paid_at',
  'expires_at',
  'settle_available_at',
  'aggregate_version',
] as const satisfies readonly (keyof TransactionView & keyof TransactionRow)[]

/**
 * The CSV's cells are read straight from the row, not from its view: each is the same value the view shows
 * (timestamps ISO, metadata as JSON), and an export of millions of rows makes half the garbage without a view
 * object per row.
 */
export type TransactionCsvRow = Pick<TransactionRow, (typeof TRANSACTION_CSV_FIELDS)[number]>

export const TRANSACTION_CSV_COLUMNS = fieldColumns<TransactionCsvRow>(TRANSACTION_CSV_FIELDS)

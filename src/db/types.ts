import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely'

export type Mode = 'test' | 'live'
type Timestamp = ColumnType<Date, Date | string, Date | string>
type Json<T> = ColumnType<T, string, string>

export interface MerchantsTable {
  uuid: string
  name: string
  settlement_currency: string
  /** Hold before paid money becomes available, live mode; test mode has none. */
  settlement_hold_seconds: number
  transaction_ttl_seconds: number
  fx_markup_bps: number
  created_at: Timestamp
  updated_at: Timestamp
}

export interface ApiKeysTable {
  uuid: string
  merchant_uuid: string
  key_id: string
  mode: Mode
  /** sha256 of the secret, for X-Api-Key lookups. */
  secret_hash: string
  /** The secret sealed with AES-256-GCM under MASTER_KEY, to verify X-Signature. */
  secret_sealed: string
  secret_last4: string
  created_at: Timestamp
  revoked_at: Timestamp | null
}

export interface MerchantFeesTable {
  merchant_uuid: string
  payment_method: string
  fee_bps: number
  merchant_fee_share_bps: number
  updated_at: Timestamp
}

export interface FxRatesTable {
  currency: string
  /** Units of `currency` per 1 USDT, a decimal string. */
  market_rate: string
  updated_at: Timestamp
}

export interface RequisitesTable {
  uuid: string
  payment_method: string
  fields: Json<Record<string, string>>
  active: Generated<boolean>
  assigned_count: Generated<number>
  last_assigned_at: Timestamp | null
  created_at: Timestamp
}

export interface TransactionsTable {
  uuid: string
  merchant_uuid: string
  mode: Mode
  type: string
  external_id: string
  amount: number
  gross_amount: number
  net_amount: number
  fee_amount: number
  fee_bps: number
  fee_payer: string
  merchant_fee_share_bps: number
  merchant_fee_merchant_amount: number
  merchant_fee_customer_amount: number
  currency: string
  settlement_currency: string
  settlement_amount: number
  fx_rate: string
  fx_rate_updated_at: Timestamp
  payment_method: string
  status: string
  description: string | null
  metadata: Json<Record<string, string>> | null
  callback_url: string | null
  success_url: string | null
  fail_url: string | null
  payment_token: string
  requisites: Json<Record<string, string>> | null
  requisite_uuid: string | null
  expires_at: Timestamp
  paid_at: Timestamp | null
  settle_available_at: Timestamp | null
  aggregate_version: number
  created_at: Timestamp
  updated_at: Timestamp
}

export interface IdempotencyKeysTable {
  merchant_uuid: string
  mode: Mode
  key: string
  fingerprint: string
  state: 'running' | 'done'
  locked_until: Timestamp
  response_status: number | null
  response_headers: Json<Record<string, string>> | null
  response_body: string | null
  created_at: Timestamp
  expires_at: Timestamp
}

export interface Database {
  merchants: MerchantsTable
  api_keys: ApiKeysTable
  merchant_fees: MerchantFeesTable
  fx_rates: FxRatesTable
  requisites: RequisitesTable
  transactions: TransactionsTable
  idempotency_keys: IdempotencyKeysTable
}

export type Merchant = Selectable<MerchantsTable>
export type ApiKey = Selectable<ApiKeysTable>
export type TransactionRow = Selectable<TransactionsTable>
export type NewTransaction = Insertable<TransactionsTable>
export type TransactionUpdate = Updateable<TransactionsTable>

import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely'
import type {
  AuditVia,
  Balance,
  DeliveryStatus,
  FeePayer,
  JournalReferenceType,
  Mode,
  PaymentMethod,
  PayoutMethod,
  PayoutStatus,
  RefundStatus,
  TransactionStatus,
  UserRole,
  UserStatus,
} from './enums.ts'

export type { Mode, PayoutMethod, PayoutStatus }

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
  /** Payout fee: round_half_up(amount_usdt_micro × bps / 10000) plus the fixed part, in USDT micro. */
  payout_fee_bps: Generated<number>
  payout_fixed_fee_micro: Generated<number>
  /** Every dashboard user of the merchant must sign in with a TOTP code (docs/DASHBOARD.md). */
  dashboard_require_totp: Generated<boolean>
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
  /** When the key last authenticated a request (written at most once a minute per key and process). */
  last_used_at: Timestamp | null
  /** What the merchant calls the key (optional; never its secret). */
  name?: string | null
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

export interface ConnectorAccountsTable {
  uuid: string
  /** The operator's name for it: lower-case letters, digits and hyphens, unique. */
  name: string
  kind: string
  mode: Mode
  /** What may be shown: the kind's settings, checked against its schema. */
  settings: Json<Record<string, unknown>>
  /** The kind's secrets (API keys) as one JSON object, sealed with the master key; null when it has none. */
  secrets_sealed: string | null
  status: 'enabled' | 'disabled'
  created_at: Timestamp
  updated_at: Timestamp
}

export interface ConnectorCallbackSecretsTable {
  uuid: string
  account_uuid: string
  secret_sealed: string
  created_at: Timestamp
  /** Accepted until then; null while it is the account's current secret. */
  retires_at: Timestamp | null
}

export interface ConnectorRoutesTable {
  uuid: string
  /** Null: the operator's default for every merchant without a route of its own. */
  merchant_uuid: string | null
  mode: Mode
  subject: 'payment' | 'payout'
  /** A payment method, or a payout method. */
  method: string
  /** Payments of this currency only; null: any. */
  currency: string | null
  /** Payouts to this network only (USDT wallets); null: any. */
  network: string | null
  /** Tried in this order, from 0. */
  position: number
  account_uuid: string
  created_at: Timestamp
}

export type CallbackVerificationResult = 'verified' | 'unsigned' | 'stale' | 'mismatch'
export type ConnectorCallbackResult =
  | 'applied'
  | 'duplicate'
  | 'stale'
  | 'review'
  | 'unmatched'
  | 'refused'
  | 'malformed'

export interface ConnectorCallbacksTable {
  uuid: string
  account_uuid: string
  received_at: Timestamp
  /** As received, but for the headers that carry credentials. */
  headers: Json<Record<string, string>>
  body: string
  verification: CallbackVerificationResult
  event_type: string | null
  provider_reference: string | null
  result: ConnectorCallbackResult
  /** What it changed, or why it changed nothing. */
  detail: string
}

export type PaymentAttemptResult = 'started' | 'accepted' | 'refused' | 'no_answer'

export interface PaymentAttemptsTable {
  uuid: string
  transaction_uuid: string
  /** The place in the route, from 0. */
  position: number
  account_uuid: string
  result: PaymentAttemptResult
  provider_reference: string | null
  /** The provider's refusal, or why it gave no answer. */
  detail: string
  created_at: Timestamp
  updated_at: Timestamp
}

/** handing_over: the provider is being (or was, before a crash) asked; handed_over: it has the payment. */
export type HandoverState = 'handing_over' | 'handed_over' | 'failed' | 'final'

export interface PaymentHandoversTable {
  transaction_uuid: string
  account_uuid: string
  state: HandoverState
  provider_reference: string | null
  /** The provider's payment page, where the hosted page sends the customer. */
  redirect_url: string | null
  /** When status sync next asks the provider; null: it never will. */
  sync_due_at: Timestamp | null
  sync_count: Generated<number>
  created_at: Timestamp
  updated_at: Timestamp
}

export interface PaymentReviewsTable {
  uuid: string
  transaction_uuid: string
  account_uuid: string
  /** What the provider said happened (paid). */
  outcome: string
  reported_amount: number
  reported_currency: string
  status: 'open' | 'accepted' | 'refunded'
  /** How the operator resolved it. */
  resolution: string | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface TransactionsTable {
  uuid: string
  merchant_uuid: string
  mode: Mode
  type: 'payment'
  external_id: string
  amount: number
  gross_amount: number
  net_amount: number
  fee_amount: number
  fee_bps: number
  fee_payer: FeePayer
  merchant_fee_share_bps: number
  merchant_fee_merchant_amount: number
  merchant_fee_customer_amount: number
  currency: string
  settlement_currency: string
  settlement_amount: number
  fx_rate: string
  fx_rate_updated_at: Timestamp
  payment_method: PaymentMethod
  status: TransactionStatus
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
  /** When the settlement moved from pending to available (null until then). */
  settled_at?: Timestamp | null
  /** What a payment to a deposit address received in all, counted (null for other methods). */
  amount_received?: number | null
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
  /** A token of the request that holds the key: only it may store or release the outcome. */
  owner: string
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
  connector_accounts: ConnectorAccountsTable
  connector_callback_secrets: ConnectorCallbackSecretsTable
  connector_callbacks: ConnectorCallbacksTable
  connector_routes: ConnectorRoutesTable
  payment_attempts: PaymentAttemptsTable
  payment_handovers: PaymentHandoversTable
  payment_reviews: PaymentReviewsTable
  transactions: TransactionsTable
  idempotency_keys: IdempotencyKeysTable
  provider_callbacks: ProviderCallbacksTable
  events: EventsTable
  webhook_configs: WebhookConfigsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
  ledger_accounts: LedgerAccountsTable
  journal_entries: JournalEntriesTable
  journal_lines: JournalLinesTable
  refunds: RefundsTable
  payout_quotes: PayoutQuotesTable
  payouts: PayoutsTable
  chain_wallets: ChainWalletsTable
  chain_transactions: ChainTransactionsTable
  chain_deposit_keys: ChainDepositKeysTable
  chain_deposits: ChainDepositsTable
  chain_cursors: ChainCursorsTable
  chain_blocks: ChainBlocksTable
  chain_transfers: ChainTransfersTable
  payout_callbacks: PayoutCallbacksTable
  merchant_users: MerchantUsersTable
  merchant_user_invitations: MerchantUserInvitationsTable
  dashboard_sessions: DashboardSessionsTable
  dashboard_audit_log: DashboardAuditLogTable
}

export type Merchant = Selectable<MerchantsTable>
export type ApiKey = Selectable<ApiKeysTable>
export type TransactionRow = Selectable<TransactionsTable>
export type NewTransaction = Insertable<TransactionsTable>
export type TransactionUpdate = Updateable<TransactionsTable>

/** What a provider callback log keeps of each callback, whichever object (payment, payout) it was about. */
export interface CallbackLogColumns {
  uuid: string
  connector: string
  outcome: string
  provider_reference: string | null
  result: 'applied' | 'duplicate' | 'stale'
  from_status: string
  to_status: string
  received_at: Timestamp
}

export interface ProviderCallbacksTable extends CallbackLogColumns {
  transaction_uuid: string
}

export interface EventsTable {
  uuid: string
  merchant_uuid: string
  mode: Mode
  event: string
  aggregate_type: 'transaction' | 'payout'
  aggregate_uuid: string
  aggregate_version: number
  /** The callback body exactly as delivered, every attempt. */
  body: string
  occurred_at: Timestamp
  /** The refund whose success this transaction event announces; null for every other event. */
  refund_uuid: string | null
}

export interface WebhookConfigsTable {
  merchant_uuid: string
  mode: Mode
  url: string | null
  /** The URL's host (`new URL(url).host`): its deliveries' target. */
  target: Generated<string | null>
  enabled: boolean
  events: Json<string[]>
  secret_sealed: string
  previous_secret_sealed: string | null
  previous_secret_expires_at: Timestamp | null
  disabled_reason: string | null
  updated_at: Timestamp
}

export interface WebhookDeliveriesTable {
  uuid: string
  event_id: string
  merchant_uuid: string
  mode: Mode
  event: string
  url: string
  target: string
  /** The request body; NULL for an event's delivery, whose body is its event's (migration 0015). */
  body: string | null
  status: DeliveryStatus
  attempts: number
  next_attempt_at: Timestamp | null
  locked_until: Timestamp | null
  locked_by: string | null
  last_attempt_at: Timestamp | null
  response_status: number | null
  response_body: string | null
  duration_ms: number | null
  error: string | null
  is_test: boolean
  created_at: Timestamp
  updated_at: Timestamp
}

export interface WebhookAttemptsTable {
  uuid: string
  delivery_uuid: string
  attempt: number
  worker: string
  started_at: Timestamp
  duration_ms: number
  response_status: number | null
  response_body: string | null
  error: string | null
}

export type WebhookDelivery = Selectable<WebhookDeliveriesTable>
export type WebhookConfig = Selectable<WebhookConfigsTable>

/** pending, available, reserved: the merchant's money; clearing and payouts_out: where it comes from and goes. */
export type AccountKind = Balance | 'provider_clearing' | 'payouts_out' | 'payout_fees' | 'refunds_out'

export interface LedgerAccountsTable {
  uuid: string
  merchant_uuid: string
  mode: Mode
  currency: string
  kind: AccountKind
  balance: number
  updated_at: Timestamp
}

export interface JournalEntriesTable {
  uuid: string
  merchant_uuid: string
  mode: Mode
  /** One of JOURNAL_ENTRY_KINDS for every entry posted so far; read as text, so another shows as `adjustment`. */
  kind: string
  reference_type: JournalReferenceType
  reference_uuid: string
  created_at: Timestamp
}

/**
 * One line of an entry. The account's key (merchant, mode, currency, kind) and the entry's time are copied onto
 * the line (migration 0008, kept equal to the account's by a foreign key), so that a merchant's balance
 * transactions are one index range scan.
 */
export interface JournalLinesTable {
  uuid: string
  entry_uuid: string
  account_uuid: string
  amount: number
  merchant_uuid: string
  mode: Mode
  currency: string
  account_kind: AccountKind
  created_at: Timestamp
}

export interface RefundsTable {
  uuid: string
  merchant_uuid: string
  mode: Mode
  transaction_uuid: string
  amount_minor: number
  currency: string
  settlement_debit: number
  status: RefundStatus
  reason: string | null
  message: string
  action_request_id: string
  /** The Idempotency-Key the refund was made with: unique per merchant and mode. */
  idempotency_key: string | null
  /** The connector account that has the refund (the one that has its payment); null: the simulator. */
  account_uuid: string | null
  provider_reference: string | null
  /** When the recovery job next asks the provider about the refund, while it is pending. */
  next_check_at: Timestamp | null
  succeeded_at: Timestamp | null
  failed_at: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
}

export type RefundRow = Selectable<RefundsTable>

export interface PayoutQuotesTable {
  uuid: string
  merchant_uuid: string
  mode: Mode
  amount: number
  currency: string
  method: PayoutMethod
  fx_rate: string
  fx_rate_updated_at: Timestamp
  amount_usdt_micro: number
  fee_usdt_micro: number
  payout_usdt_amount_micro: number
  expires_at: Timestamp
  created_at: Timestamp
}

export interface PayoutsTable {
  uuid: string
  merchant_uuid: string
  mode: Mode
  external_id: string
  amount: number
  currency: string
  method: PayoutMethod
  destination: Json<Record<string, string>>
  card_brand: string | null
  wallet_uuid: string | null
  quote_uuid: string | null
  fx_rate: string
  fx_rate_updated_at: Timestamp
  amount_usdt_micro: number
  fee_usdt_micro: number
  payout_usdt_amount_micro: number
  status: PayoutStatus
  failure_reason: string | null
  /** The connector account the payout was handed to (its payout route's); null: the simulator. */
  account_uuid: string | null
  provider_reference: string | null
  /** The hash of the chain transaction that pays it (an evm-erc20 account's payout). */
  transaction_hash: string | null
  metadata: Json<Record<string, string>> | null
  callback_url: string | null
  action_request_id: string
  /** The Idempotency-Key the payout was made with: unique per merchant and mode. */
  idempotency_key: string | null
  /** The destination as the provider needs it, encrypted; kept only until the provider has taken the payout. */
  destination_sealed: string | null
  aggregate_version: number
  next_check_at: Timestamp | null
  submitted_at: Timestamp | null
  completed_at: Timestamp | null
  failed_at: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface PayoutCallbacksTable extends CallbackLogColumns {
  payout_uuid: string
}

export type PayoutRow = Selectable<PayoutsTable>
export type PayoutQuoteRow = Selectable<PayoutQuotesTable>

/** A person who signs in to the dashboard for one merchant (modules/users). */
export interface MerchantUsersTable {
  uuid: string
  merchant_uuid: string
  /** Unique across merchants without regard to case; stored as given. */
  email: string
  role: UserRole
  /** `scrypt$…` (lib/passwords.ts); null until the invitation is accepted. */
  password_hash: string | null
  status: UserStatus
  /** The TOTP secret (base32), sealed with a key derived from MASTER_KEY; set from the start of enrolment. */
  totp_secret_sealed: string | null
  /** True once a code from the secret was confirmed: sign-in then needs a code. */
  totp_enabled: Generated<boolean>
  /** The 30-second step of the last code accepted: a code is good once. */
  totp_last_step: number | null
  created_at: Timestamp
  updated_at: Timestamp
}

export interface MerchantUserInvitationsTable {
  uuid: string
  user_uuid: string
  /** sha256 of the one-time token in the set-password link. */
  token_hash: string
  expires_at: Timestamp
  used_at: Timestamp | null
  created_at: Timestamp
}

export interface DashboardSessionsTable {
  uuid: string
  /** sha256 of the session cookie's value. */
  token_hash: string
  user_uuid: string
  created_at: Timestamp
  last_seen_at: Timestamp
  /** last_seen_at plus the idle limit, moved on with every use. */
  idle_expires_at: Timestamp
  /** created_at plus the absolute limit: never moved. */
  expires_at: Timestamp
  revoked_at: Timestamp | null
  ip: string | null
  user_agent: string | null
}

export interface DashboardAuditLogTable {
  uuid: string
  merchant_uuid: string | null
  actor_user_uuid: string | null
  via: AuditVia
  action: string
  target_type: string | null
  target_id: string | null
  mode: Mode | null
  ip: string | null
  user_agent: string | null
  details: Json<Record<string, unknown>> | null
  created_at: Timestamp
}

export type MerchantUserRow = Selectable<MerchantUsersTable>
export type DashboardSessionRow = Selectable<DashboardSessionsTable>
export type AuditRow = Selectable<DashboardAuditLogTable>

/** A hot wallet's next nonce on its chain (taken under the row's lock). */
export interface ChainWalletsTable {
  chain_id: number
  address: string
  next_nonce: number
  created_at: Timestamp
  updated_at: Timestamp
}

/** A signed payout transaction, kept before it is broadcast; a replacement names the one it replaces. */
export interface ChainTransactionsTable {
  uuid: string
  payout_uuid: string
  chain_id: number
  wallet: string
  nonce: number
  hash: string
  raw: string
  max_fee_per_gas: ColumnType<string, string | bigint, string | bigint>
  max_priority_fee_per_gas: ColumnType<string, string | bigint, string | bigint>
  replaces_uuid: string | null
  signed_at_block: number
  created_at: Timestamp
}

/** An account's next deposit derivation index. */
export interface ChainDepositKeysTable {
  account_uuid: string
  next_index: number
  created_at: Timestamp
  updated_at: Timestamp
}

/** A payment's deposit address, derived at `derivation_index`, and the amount asked in token units. */
export interface ChainDepositsTable {
  transaction_uuid: string
  account_uuid: string
  derivation_index: number
  address: string
  amount: ColumnType<string, string | bigint, string | bigint>
  created_at: Timestamp
}

/** Where an account's chain watcher stands, and which worker leads it until when. */
export interface ChainCursorsTable {
  account_uuid: string
  block_number: number
  block_hash: string
  leader: string | null
  lease_until: Timestamp | null
  created_at: Timestamp
  updated_at: Timestamp
}

/** A block the watcher's cursor stood on: how a reorganisation is traced back. */
export interface ChainBlocksTable {
  account_uuid: string
  block_number: number
  block_hash: string
}

/** A Transfer of the token to a deposit address, recorded once; counted once it has its confirmations. */
export interface ChainTransfersTable {
  account_uuid: string
  transaction_hash: string
  log_index: number
  block_number: number
  block_hash: string
  payment_uuid: string
  sender: string
  amount: ColumnType<string, string | bigint, string | bigint>
  counted_at: Timestamp | null
  created_at: Timestamp
}

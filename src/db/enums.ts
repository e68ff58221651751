import type { Static } from 'typebox'
import { LiteralUnion } from '../lib/schema.ts'

/**
 * The closed lists of values the tables hold, one list each: the table types, the modules' schemas (and so the
 * OpenAPI document) and the state machines all take their literal unions from here.
 */

/** The type guard of one closed list: whether a string read from outside is one of its values. */
const memberOf =
  <const T extends readonly string[]>(values: T) =>
  (value: string): value is T[number] =>
    (values as readonly string[]).includes(value)

export const MODES = ['test', 'live'] as const
export const ModeSchema = LiteralUnion(MODES)
export const isMode = memberOf(MODES)
export type Mode = Static<typeof ModeSchema>

export const TRANSACTION_STATUSES = [
  'pending',
  'paid',
  'failed',
  'expired',
  'partially_refunded',
  'refunded',
] as const
export const TransactionStatusSchema = LiteralUnion(TRANSACTION_STATUSES)
export type TransactionStatus = Static<typeof TransactionStatusSchema>
export const isTransactionStatus = memberOf(TRANSACTION_STATUSES)

export const PAYMENT_METHODS = ['card', 'p2p_card', 'bank_transfer', 'usdt_erc20'] as const
export type PaymentMethod = (typeof PAYMENT_METHODS)[number]
export const isPaymentMethod = memberOf(PAYMENT_METHODS)
export const FEE_PAYERS = ['merchant', 'customer', 'split'] as const
export type FeePayer = (typeof FEE_PAYERS)[number]

export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const
export const RefundStatusSchema = LiteralUnion(REFUND_STATUSES)
export type RefundStatus = Static<typeof RefundStatusSchema>
export const isRefundStatus = memberOf(REFUND_STATUSES)

export const PAYOUT_METHODS = ['usdt_wallet', 'card'] as const
export type PayoutMethod = (typeof PAYOUT_METHODS)[number]

export const PAYOUT_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const
export const PayoutStatusSchema = LiteralUnion(PAYOUT_STATUSES)
export type PayoutStatus = Static<typeof PayoutStatusSchema>

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const
export const DeliveryStatusSchema = LiteralUnion(DELIVERY_STATUSES)
export type DeliveryStatus = Static<typeof DeliveryStatusSchema>

/** The merchant's own balances: what GET /integration/balances shows and balance transactions move. */
export const BALANCES = ['available', 'pending', 'reserved'] as const
export const BalanceSchema = LiteralUnion(BALANCES)
export type Balance = Static<typeof BalanceSchema>

/** What caused a journal entry (its reference): a balance transaction's `source.type`. */
export const JOURNAL_REFERENCE_TYPES = ['transaction', 'refund', 'payout'] as const
export const JournalReferenceTypeSchema = LiteralUnion(JOURNAL_REFERENCE_TYPES)
export type JournalReferenceType = Static<typeof JournalReferenceTypeSchema>

/**
 * Every kind of journal entry the ledger posts (src/modules/ledger/service.ts, Posting.kind), with the type it
 * shows as in the API (GET /integration/balance-transactions): a kind is named here once, with its type. A kind
 * the database holds that is not in the list (none today) shows as `adjustment`.
 */
export const BALANCE_TRANSACTION_TYPE_OF_KIND = {
  payment_received: 'payment',
  payment_settled: 'settlement',
  refund_debited: 'refund',
  refund_reversed: 'refund_reversal',
  payout_reserved: 'payout_reserve',
  payout_completed: 'payout',
  payout_released: 'payout_release',
} as const
export type JournalEntryKind = keyof typeof BALANCE_TRANSACTION_TYPE_OF_KIND
export const JOURNAL_ENTRY_KINDS = Object.keys(
  BALANCE_TRANSACTION_TYPE_OF_KIND,
) as readonly JournalEntryKind[]

/** What a movement of a merchant's balance is called in the API: the type of each kind, then `adjustment`. */
export const BALANCE_TRANSACTION_TYPES = [
  ...Object.values(BALANCE_TRANSACTION_TYPE_OF_KIND),
  'adjustment',
] as const
export const BalanceTransactionTypeSchema = LiteralUnion(BALANCE_TRANSACTION_TYPES)
export type BalanceTransactionType = Static<typeof BalanceTransactionTypeSchema>

/** A dashboard user's role (docs/DASHBOARD.md: what each may do, modules/users/roles.ts). */
export const USER_ROLES = ['owner', 'admin', 'developer', 'support', 'viewer'] as const
export const UserRoleSchema = LiteralUnion(USER_ROLES)
export type UserRole = Static<typeof UserRoleSchema>
export const isUserRole = memberOf(USER_ROLES)

export const USER_STATUSES = ['active', 'disabled'] as const
export const UserStatusSchema = LiteralUnion(USER_STATUSES)
export type UserStatus = Static<typeof UserStatusSchema>

/** Where an audited action came from: a dashboard session or the operator's command line. */
export const AUDIT_VIAS = ['dashboard', 'cli'] as const
export type AuditVia = (typeof AUDIT_VIAS)[number]

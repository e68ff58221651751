import type { Static } from 'typebox'
import { LiteralUnion } from '../lib/schema.ts'

/**
 * The closed lists of values the tables hold, one list each: the table types, the modules' schemas (and so the
 * OpenAPI document) and the state machines all take their literal unions from here.
 */

export const MODES = ['test', 'live'] as const
export const ModeSchema = LiteralUnion(MODES)
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
export const isTransactionStatus = (value: string): value is TransactionStatus =>
  (TRANSACTION_STATUSES as readonly string[]).includes(value)

export const PAYMENT_METHODS = ['card', 'p2p_card', 'bank_transfer'] as const
export type PaymentMethod = (typeof PAYMENT_METHODS)[number]
export const isPaymentMethod = (value: string): value is PaymentMethod =>
  (PAYMENT_METHODS as readonly string[]).includes(value)
export const FEE_PAYERS = ['merchant', 'customer', 'split'] as const
export type FeePayer = (typeof FEE_PAYERS)[number]

export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const
export const RefundStatusSchema = LiteralUnion(REFUND_STATUSES)
export type RefundStatus = Static<typeof RefundStatusSchema>
export const isRefundStatus = (value: string): value is RefundStatus =>
  (REFUND_STATUSES as readonly string[]).includes(value)

export const PAYOUT_METHODS = ['usdt_wallet', 'card'] as const
export type PayoutMethod = (typeof PAYOUT_METHODS)[number]

export const PAYOUT_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const
export const PayoutStatusSchema = LiteralUnion(PAYOUT_STATUSES)
export type PayoutStatus = Static<typeof PayoutStatusSchema>

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const
export const DeliveryStatusSchema = LiteralUnion(DELIVERY_STATUSES)
export type DeliveryStatus = Static<typeof DeliveryStatusSchema>

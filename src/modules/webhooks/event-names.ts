/**
 * The events the webhooks carry: plain lists with no import, so that the dashboard's pages take them from here
 * too (its webhooks page offers them) rather than keep a copy.
 */
export const TRANSACTION_EVENTS = [
  'transaction.paid',
  'transaction.failed',
  'transaction.expired',
  'transaction.partially_refunded',
  'transaction.refunded',
] as const
export const PAYOUT_EVENTS = ['payout.processing', 'payout.completed', 'payout.failed'] as const
/** The events a configuration can subscribe to; `webhook.test` is sent on request only. */
export const EVENT_NAMES = [...TRANSACTION_EVENTS, ...PAYOUT_EVENTS] as const
export type EventName = (typeof EVENT_NAMES)[number] | 'webhook.test'

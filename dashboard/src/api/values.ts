import {
  BALANCE_TRANSACTION_TYPES,
  DELIVERY_STATUSES,
  PAYMENT_METHODS,
  PAYOUT_METHODS,
  TRANSACTION_STATUSES,
  USER_ROLES,
} from '../../../src/db/enums'
import { EVENT_NAMES } from '../../../src/modules/webhooks/event-names'
import type { Schemas } from './client'
import type { DashboardSchemas, Role } from './dashboard'

/*
 * The closed lists of values the pages offer (filters, pickers), taken from the service's own lists rather
 * than copied, each typed as the generated type of the field it fills: a value the API does not take fails
 * `npm run check`.
 */

export const BALANCE_TRANSACTION_TYPE_VALUES: readonly Schemas['BalanceTransactionResponse']['type'][] =
  BALANCE_TRANSACTION_TYPES
export const TRANSACTION_STATUS_VALUES: readonly Schemas['TransactionResponse']['status'][] =
  TRANSACTION_STATUSES
export const PAYMENT_METHOD_VALUES: readonly Schemas['TransactionResponse']['payment_method'][] =
  PAYMENT_METHODS
export const PAYOUT_METHOD_VALUES: readonly Schemas['CreatePayoutRequest']['method'][] = PAYOUT_METHODS
export const DELIVERY_STATUS_VALUES: readonly Schemas['WebhookDelivery']['status'][] = DELIVERY_STATUSES
export const WEBHOOK_EVENT_VALUES: readonly Schemas['WebhookConfig']['events'][number][] = EVENT_NAMES
export const ROLE_VALUES: readonly Role[] = USER_ROLES

/*
 * The audit log's actions. The service's list (AUDIT_ACTIONS) lives beside the code that writes the log, which
 * a browser cannot load; this record names each action of the generated type once, so an action added to or
 * removed from the API fails `npm run check` until it is here too.
 */
const AUDIT_ACTIONS: Record<DashboardSchemas['AuditEntry']['action'], true> = {
  user_invited: true,
  invitation_accepted: true,
  password_reset: true,
  user_disabled: true,
  user_role_changed: true,
  login_succeeded: true,
  login_failed: true,
  login_throttled: true,
  logout: true,
  logout_everywhere: true,
  api_operation: true,
  totp_enrolment_started: true,
  totp_enabled: true,
  totp_disabled: true,
  totp_code_rejected: true,
  merchant_security_changed: true,
  api_key_created: true,
  api_key_revoked: true,
  api_key_renamed: true,
  webhook_secret_revealed: true,
}
export const AUDIT_ACTION_VALUES = Object.keys(AUDIT_ACTIONS) as DashboardSchemas['AuditEntry']['action'][]

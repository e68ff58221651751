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
import type { Role } from './dashboard'

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

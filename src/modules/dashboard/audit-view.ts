import { fieldColumns } from '../../http/csv.ts'
import { parseDateRange } from '../../http/date-filter.ts'
import { distinctSorted } from '../../lib/lists.ts'
import { iso } from '../../lib/time.ts'
import type { AuditFilters, AuditLogRow } from '../users/service.ts'
import type { AuditEntryView, AuditQuery } from './schemas.ts'

/** What an audit row's target is, for the page to name and link it. */
export type TargetKind = NonNullable<AuditEntryView['target_kind']>

/** The merchant API's operations a page calls, by the kind of object their answer (the row's target) is. */
const OPERATION_TARGETS: Readonly<Record<string, TargetKind>> = {
  createRefund: 'refund',
  createPayout: 'payout',
  simulatePayoutCompleted: 'payout',
  simulatePayoutFailed: 'payout',
  simulateTransactionPaid: 'payment',
  simulateTransactionFailed: 'payment',
  simulateTransactionExpired: 'payment',
  simulateTransactionFailedThenPaid: 'payment',
  redeliverWebhook: 'webhook',
  sendTestWebhook: 'webhook',
  updateWebhookConfig: 'webhook',
  rotateWebhookSecret: 'webhook',
}

/** The kinds whose target is always the same kind. */
const TARGET_TYPE_KINDS: Readonly<Record<string, TargetKind>> = {
  user: 'user',
  api_key: 'api_key',
  webhook: 'webhook',
  session: 'session',
  email: 'email',
  merchant: 'merchant',
}

const detail = (details: Record<string, unknown> | null, name: string): string | undefined => {
  const value = details?.[name]
  return typeof value === 'string' ? value : undefined
}

/**
 * Which kind of thing a row's target is, and the dashboard page that shows it (relative to the mode's root,
 * `/payments/…`; the row's `mode`, or any when it has none): a refund links to its payment, whose page lists
 * its refunds. Null where no page shows it (a session, an e-mail that named nobody).
 */
export function auditTarget(row: Pick<AuditLogRow, 'target_type' | 'target_id' | 'details'>): {
  target_kind: TargetKind | null
  target_path: string | null
} {
  const details = row.details as Record<string, unknown> | null
  const operation = detail(details, 'operation')
  const kind =
    row.target_type === 'object'
      ? operation !== undefined
        ? (OPERATION_TARGETS[operation] ?? null)
        : null
      : row.target_type
        ? (TARGET_TYPE_KINDS[row.target_type] ?? null)
        : operation !== undefined
          ? (OPERATION_TARGETS[operation] ?? null)
          : null
  const id = row.target_id
  const transaction = detail(details, 'transaction_uuid')
  const path = ((): string | null => {
    switch (kind) {
      case 'payment':
        return id ? `/payments/${id}` : null
      case 'refund':
        return transaction ? `/payments/${transaction}` : null
      case 'payout':
        return id ? `/payouts/${id}` : null
      case 'user':
        return '/settings/people'
      case 'api_key':
        return '/developers/api-keys'
      case 'webhook':
        return '/developers/webhooks'
      case 'merchant':
        return '/settings/security'
      default:
        return null
    }
  })()
  return { target_kind: kind, target_path: path }
}

/** One row of the audit log as the dashboard shows it. */
export const auditEntryView = ({ created_at, ...row }: AuditLogRow): AuditEntryView => ({
  ...row,
  at: iso(created_at),
  ...auditTarget(row),
})

/** The audit log's query parameters as the repository's filters (422 on a date that does not parse). */
export function auditFilters(query: Omit<AuditQuery, 'cursor' | 'per_page'>): AuditFilters {
  const { from, to } = parseDateRange('from', query.from, 'to', query.to)
  return {
    actorUserUuid: query.actor_user_uuid?.toLowerCase(),
    actions: query.action ? distinctSorted(query.action) : undefined,
    from,
    to,
  }
}

/** The columns of the audit log's CSV export, in their documented order. */
export const AUDIT_CSV_COLUMNS = fieldColumns<AuditEntryView>([
  'uuid',
  'at',
  'action',
  'via',
  'actor_user_uuid',
  'actor_email',
  'target_type',
  'target_id',
  'target_kind',
  'target_path',
  'mode',
  'ip',
  'user_agent',
  'details',
])

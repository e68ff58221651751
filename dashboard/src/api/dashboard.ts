import { apiErrorOf, type Mode, sessionHeaders } from './client'

/*
 * The dashboard's own endpoints (/dashboard/api/…): sessions, people, the audit log and the home page's figures.
 * They are not part of the merchant API, so its document does not describe them; their answers are typed here
 * after src/modules/users/schemas.ts and src/modules/dashboard/routes.ts, and the browser tests exercise each.
 */

export type Role = 'owner' | 'admin' | 'developer' | 'support' | 'viewer'
export type Permission =
  | 'read'
  | 'refund'
  | 'manage_users'
  | 'manage_security'
  | 'payout'
  | 'read_audit_log'
  | 'developer_tools'

export interface Me {
  user: { uuid: string; merchant_uuid: string; email: string; role: Role; permissions: Permission[] }
  csrf_token: string
  idle_expires_at: string
  expires_at: string
  /** The merchant requires a second factor this user has not set up: only the security page works. */
  totp_enrolment_required: boolean
}

export interface DailyPayments {
  day: string
  currency: string
  created: number
  succeeded: number
  failed: number
  volume: number
}

export interface User {
  uuid: string
  email: string
  role: Role
  status: 'active' | 'disabled'
  /** False while the invitation is open. */
  password_set: boolean
  totp_enabled: boolean
  created_at: string
}

export interface AuditRow {
  uuid: string
  at: string
  action: string
  actor_user_uuid: string | null
  actor_email: string | null
  via: string
  target_type: string | null
  target_id: string | null
  mode: string | null
  ip: string | null
  user_agent: string | null
  details: Record<string, unknown> | null
}

export interface AuditPage {
  data: AuditRow[]
  next_cursor: string | null
}

/** One call of the dashboard's own API: JSON in and out, the CSRF token on changes, errors as ApiError. */
export async function dashboardApi<T>(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  mode?: Mode,
): Promise<T> {
  const headers = sessionHeaders(method, mode)
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`/dashboard/api${path}`, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (response.status === 204) return undefined as T
  if (!response.ok) throw await apiErrorOf(response)
  return (await response.json().catch(() => null)) as T
}

export interface ApiKey {
  key_id: string
  mode: Mode
  created_at: string
  revoked_at: string | null
  last_used_at: string | null
  secret_last4: string
}

export interface MerchantProfile {
  uuid: string
  name: string
  settlement_currency: string
  settlement_hold_seconds: number
  transaction_ttl_seconds: number
  fx_markup_bps: number
  payout_fee_bps: number
  payout_fixed_fee_micro: number
  fees: { payment_method: string; fee_bps: number; merchant_fee_share_bps: number }[]
}

export interface DeliveryAttempts {
  request: { method: string; url: string; headers: Record<string, string>; body: string }
  attempts: {
    attempt: number
    started_at: string
    webhook_timestamp: string
    duration_ms: number
    response_status: number | null
    response_body: string | null
    error: string | null
  }[]
}

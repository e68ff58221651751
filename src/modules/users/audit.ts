import type { Executor } from '../../db/index.ts'
import type { Mode } from '../../db/types.ts'
import { newId } from '../../lib/ids.ts'
import { type Actor, dashboardActor, type From } from './deps.ts'
import * as repo from './repository.ts'

/** The actions the audit log records: one list, for the writers' type and the log's `action` filter. */
export const AUDIT_ACTIONS = [
  'user_invited',
  'invitation_accepted',
  // The operator gave a user a new generated password (and ended their sessions).
  'password_reset',
  'user_disabled',
  'user_role_changed',
  'login_succeeded',
  'login_failed',
  'login_throttled',
  'logout',
  'logout_everywhere',
  // An operation of the merchant API done in the dashboard (a refund, say): `details.operation` names it.
  'api_operation',
  'totp_enrolment_started',
  'totp_enabled',
  'totp_disabled',
  'totp_code_rejected',
  'merchant_security_changed',
  // An API key made or revoked from the dashboard (its key_id is the target; never its secret).
  'api_key_created',
  'api_key_revoked',
  // An API key's name given, changed or taken away (`details.name`: the new name, or null).
  'api_key_renamed',
  // The webhook signing secret of a mode shown in the dashboard (the mode is the target; never the secret).
  'webhook_secret_revealed',
] as const
export type AuditAction = (typeof AUDIT_ACTIONS)[number]

export interface AuditEntry {
  action: AuditAction
  merchantUuid: string | null
  /** Who acted; for a sign-in, the user signing in (null when the email names nobody). */
  actor: Actor | ({ via: 'dashboard'; userUuid: string | null } & From)
  target?: { type: 'user' | 'email' | 'session' | 'object' | 'merchant' | 'api_key' | 'webhook'; id: string }
  mode?: Mode | null
  details?: Record<string, unknown>
  at: Date
}

/** One row of the audit log, written in the caller's transaction with the change it records; its uuid. */
export async function recordAudit(db: Executor, entry: AuditEntry): Promise<string> {
  const { actor } = entry
  const uuid = newId()
  await repo.insertAudit(db, {
    uuid,
    merchant_uuid: entry.merchantUuid,
    actor_user_uuid: actor.userUuid ?? null,
    via: actor.via,
    action: entry.action,
    target_type: entry.target?.type ?? null,
    target_id: entry.target?.id ?? null,
    mode: entry.mode ?? null,
    ip: actor.ip ?? null,
    user_agent: actor.userAgent ?? null,
    details: entry.details ? JSON.stringify(entry.details) : null,
    created_at: entry.at,
  })
  return uuid
}

/** What a signed-in dashboard user did, for the audit log: the actor and the merchant are the user's. */
export type DashboardAction = Omit<AuditEntry, 'merchantUuid' | 'actor'>

/** A dashboard user (who, of which merchant, from where) as the actor of an audit row. */
export interface DashboardActor {
  userUuid: string
  merchantUuid: string
  from: From
}

/** One row of the audit log for what a dashboard user did, in the caller's transaction; its uuid. */
export const recordDashboardAction = (db: Executor, by: DashboardActor, action: DashboardAction) =>
  recordAudit(db, { ...action, merchantUuid: by.merchantUuid, actor: dashboardActor(by.userUuid, by.from) })

import type { Insertable, Updateable } from 'kysely'
import { sql } from 'kysely'
import type { UserRole } from '../../db/enums.ts'
import type { Executor, Trx } from '../../db/index.ts'
import { type Cursor, keysetBatches, keysetPage } from '../../db/keyset.ts'
import { revokeLive } from '../../db/queries.ts'
import type { DashboardAuditLogTable, DashboardSessionsTable, MerchantUsersTable } from '../../db/types.ts'

const USER_COLUMNS = [
  'uuid',
  'merchant_uuid',
  'email',
  'role',
  'status',
  'totp_enabled',
  'created_at',
  'updated_at',
] as const

export const insertUser = (db: Executor, row: Insertable<MerchantUsersTable>) =>
  db.insertInto('merchant_users').values(row).returning(USER_COLUMNS).executeTakeFirstOrThrow()

/** The user with this email, whatever its case (the unique index is on lower(email)). */
export const findUserByEmail = (db: Executor, email: string, options: { lock?: boolean } = {}) =>
  db
    .selectFrom('merchant_users')
    .selectAll()
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .$if(options.lock === true, (q) => q.forUpdate())
    .executeTakeFirst()

export const findUserByUuid = (db: Executor, uuid: string, options: { lock?: boolean } = {}) =>
  db
    .selectFrom('merchant_users')
    .selectAll()
    .where('uuid', '=', uuid)
    .$if(options.lock === true, (q) => q.forUpdate())
    .executeTakeFirst()

export const findUser = (db: Executor, uuid: string) =>
  db.selectFrom('merchant_users').select(USER_COLUMNS).where('uuid', '=', uuid).executeTakeFirst()

/** The user and whether their merchant requires a second factor: what a session needs on every request. */
export const findSessionUser = (db: Executor, uuid: string) =>
  db
    .selectFrom('merchant_users as u')
    .innerJoin('merchants as m', 'm.uuid', 'u.merchant_uuid')
    .select(['u.uuid', 'u.merchant_uuid', 'u.email', 'u.role', 'u.status', 'u.totp_enabled'])
    .select('m.dashboard_require_totp')
    .where('u.uuid', '=', uuid)
    .executeTakeFirst()

/** A user of this merchant (undefined for another merchant's), locked when asked. */
export const findMerchantUser = (
  db: Executor,
  merchantUuid: string,
  uuid: string,
  options: { lock?: boolean } = {},
) =>
  db
    .selectFrom('merchant_users')
    .select([...USER_COLUMNS, sql<boolean>`password_hash IS NOT NULL`.as('password_set')])
    .where('uuid', '=', uuid)
    .where('merchant_uuid', '=', merchantUuid)
    .$if(options.lock === true, (q) => q.forUpdate())
    .executeTakeFirst()

/**
 * The merchant's owners who can sign in (active, password set), locked in uuid order: every change that could
 * leave a merchant without one takes these locks first, in one order, so two such changes run one after the
 * other and neither deadlocks.
 */
export const lockSignInOwners = (db: Executor, merchantUuid: string) =>
  db
    .selectFrom('merchant_users')
    .select('uuid')
    .where('merchant_uuid', '=', merchantUuid)
    .where('role', '=', 'owner')
    .where('status', '=', 'active')
    .where('password_hash', 'is not', null)
    .orderBy('uuid')
    .forUpdate()
    .execute()

export const listUsers = (db: Executor, merchantUuid: string) =>
  db
    .selectFrom('merchant_users')
    .select([...USER_COLUMNS, sql<boolean>`password_hash IS NOT NULL`.as('password_set')])
    .where('merchant_uuid', '=', merchantUuid)
    .orderBy('created_at')
    .orderBy('uuid')
    .execute()

export const setPassword = (db: Executor, uuid: string, passwordHash: string, at: Date) =>
  db
    .updateTable('merchant_users')
    .set({ password_hash: passwordHash, updated_at: at })
    .where('uuid', '=', uuid)
    .execute()

export const disableUser = (db: Executor, uuid: string, at: Date) =>
  db
    .updateTable('merchant_users')
    .set({ status: 'disabled', updated_at: at })
    .where('uuid', '=', uuid)
    .returning(USER_COLUMNS)
    .executeTakeFirst()

export const setRole = (db: Executor, uuid: string, role: UserRole, at: Date) =>
  db
    .updateTable('merchant_users')
    .set({ role, updated_at: at })
    .where('uuid', '=', uuid)
    .returning(USER_COLUMNS)
    .executeTakeFirstOrThrow()

/** The user's second factor: the sealed secret, whether it is on, and the step of the last code accepted. */
export const findTotp = (db: Executor, uuid: string, options: { lock?: boolean } = {}) =>
  db
    .selectFrom('merchant_users')
    .select(['uuid', 'merchant_uuid', 'totp_secret_sealed', 'totp_enabled', 'totp_last_step'])
    .where('uuid', '=', uuid)
    .$if(options.lock === true, (q) => q.forUpdate())
    .executeTakeFirstOrThrow()

/** Starts (or restarts) enrolment: a new secret, not yet in force. Never over a second factor already on. */
export const setPendingTotp = (db: Executor, uuid: string, sealed: string, at: Date) =>
  db
    .updateTable('merchant_users')
    .set({ totp_secret_sealed: sealed, totp_enabled: false, totp_last_step: null, updated_at: at })
    .where('uuid', '=', uuid)
    .where('totp_enabled', '=', false)
    .returning('uuid')
    .executeTakeFirst()

/**
 * Takes a code's step as the last one used, if it is later than the last one: one statement, so two requests
 * with the same code at once cannot both succeed. Undefined when the step was used already.
 */
export const claimTotpStep = (db: Executor, uuid: string, step: number) =>
  db
    .updateTable('merchant_users')
    .set({ totp_last_step: step })
    .where('uuid', '=', uuid)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .returning('uuid')
    .executeTakeFirst()

export const setTotpEnabled = (db: Executor, uuid: string, enabled: boolean, at: Date) =>
  db
    .updateTable('merchant_users')
    .set(
      enabled
        ? { totp_enabled: true, updated_at: at }
        : { totp_enabled: false, totp_secret_sealed: null, totp_last_step: null, updated_at: at },
    )
    .where('uuid', '=', uuid)
    .execute()

/**
 * Whether the merchant requires a second factor of its dashboard users. The column is on `merchants` but only
 * this module reads or writes it: it is the dashboard's setting, not the payment API's.
 */
export async function merchantRequiresTotp(db: Executor, merchantUuid: string): Promise<boolean> {
  const row = await db
    .selectFrom('merchants')
    .select('dashboard_require_totp')
    .where('uuid', '=', merchantUuid)
    .executeTakeFirst()
  return row?.dashboard_require_totp === true
}

export const setMerchantRequiresTotp = (db: Executor, merchantUuid: string, required: boolean) =>
  db
    .updateTable('merchants')
    .set({ dashboard_require_totp: required })
    .where('uuid', '=', merchantUuid)
    .execute()

/** Drops the user's invitations not yet used: a new invitation replaces them. */
export const deleteOpenInvitations = (db: Executor, userUuid: string) =>
  db
    .deleteFrom('merchant_user_invitations')
    .where('user_uuid', '=', userUuid)
    .where('used_at', 'is', null)
    .execute()

export const insertInvitation = (
  db: Executor,
  row: { uuid: string; user_uuid: string; token_hash: string; expires_at: Date; created_at: Date },
) => db.insertInto('merchant_user_invitations').values(row).execute()

/** The invitation and its user, locked: two acceptances of one link cannot both pass the single-use check. */
export const lockInvitation = (db: Executor, tokenHash: string) =>
  db
    .selectFrom('merchant_user_invitations as i')
    .innerJoin('merchant_users as u', 'u.uuid', 'i.user_uuid')
    .select(['i.uuid', 'i.expires_at', 'i.used_at'])
    .select(['u.uuid as user_uuid', 'u.merchant_uuid', 'u.email', 'u.status'])
    .where('i.token_hash', '=', tokenHash)
    .forUpdate()
    .executeTakeFirst()

export const markInvitationUsed = (db: Executor, uuid: string, at: Date) =>
  db.updateTable('merchant_user_invitations').set({ used_at: at }).where('uuid', '=', uuid).execute()

export const insertSession = (db: Executor, row: Insertable<DashboardSessionsTable>) =>
  db.insertInto('dashboard_sessions').values(row).execute()

/**
 * Uses the session of this token if it is live (not revoked, neither limit passed): moves its idle limit on
 * (never past the absolute one) and returns it; undefined otherwise. One statement, so it cannot revive a
 * session revoked a moment before.
 */
export const touchSession = (db: Executor, tokenHash: string, now: Date, idleSeconds: number) =>
  db
    .updateTable('dashboard_sessions')
    .set({
      last_seen_at: now,
      idle_expires_at: sql<Date>`least(${now}::timestamptz + make_interval(secs => ${idleSeconds}), expires_at)`,
    })
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .where('idle_expires_at', '>', now)
    .returning(['uuid', 'user_uuid', 'created_at', 'idle_expires_at', 'expires_at'])
    .executeTakeFirst()

export const revokeSessionByToken = (db: Executor, tokenHash: string, at: Date) =>
  revokeLive(db, 'dashboard_sessions', 'token_hash', tokenHash, at)
    .returning(['uuid', 'user_uuid'])
    .executeTakeFirst()

export const revokeSession = (db: Executor, uuid: string, at: Date) =>
  revokeLive(db, 'dashboard_sessions', 'uuid', uuid, at).execute()

/** Ends every live session of the user; the number ended. */
export async function revokeUserSessions(db: Executor, userUuid: string, at: Date): Promise<number> {
  const rows = await revokeLive(db, 'dashboard_sessions', 'user_uuid', userUuid, at)
    .returning('uuid')
    .execute()
  return rows.length
}

export const insertAudit = (db: Executor, row: Insertable<DashboardAuditLogTable>) =>
  db.insertInto('dashboard_audit_log').values(row).execute()

/**
 * Waits for, then holds to the end of the transaction, the lock on the attempts against one key (an email, a
 * client address, by name): a transaction-level advisory lock, so it serialises every process on the
 * database, and ends with the transaction even if its process dies. Keys are hashed to 64 bits; two that
 * collide only wait on each other.
 */
export async function lockAttempts(trx: Trx, key: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx)
}

/** Turns an audit row written ahead of its outcome (a reserved sign-in attempt) into what happened. */
export const settleAudit = (
  db: Executor,
  uuid: string,
  outcome: Pick<
    Updateable<DashboardAuditLogTable>,
    'action' | 'merchant_uuid' | 'actor_user_uuid' | 'target_type' | 'target_id' | 'details'
  >,
) => db.updateTable('dashboard_audit_log').set(outcome).where('uuid', '=', uuid).execute()

/** Drops an audit row written ahead of an outcome that turned out to be nothing worth a row. */
export const deleteAudit = (db: Executor, uuid: string) =>
  db.deleteFrom('dashboard_audit_log').where('uuid', '=', uuid).execute()

/** How many times `action` was recorded since `since`, for this target (an email) or from this address. */
export async function countRecent(
  db: Executor,
  action: string,
  by: { targetId: string } | { ip: string },
  since: Date,
): Promise<number> {
  const row = await db
    .selectFrom('dashboard_audit_log')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('action', '=', action)
    .where('created_at', '>', since)
    .$call((q) => ('targetId' in by ? q.where('target_id', '=', by.targetId) : q.where('ip', '=', by.ip)))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** What the audit log may be narrowed to: who acted, which actions, when (both ends inclusive). */
export interface AuditFilters {
  actorUserUuid?: string
  actions?: string[]
  from?: Date
  to?: Date
}

/**
 * The merchant's audit rows the filters match, with the acting user's email, unordered: a page is `keysetPage`
 * of it, an export walks it with `keysetBatches`.
 */
function filteredAudit(db: Executor, merchantUuid: string, filters: AuditFilters) {
  let query = db
    .selectFrom('dashboard_audit_log as a')
    .leftJoin('merchant_users as u', 'u.uuid', 'a.actor_user_uuid')
    .select([
      'a.uuid',
      'a.created_at',
      'a.action',
      'a.via',
      'a.actor_user_uuid',
      'u.email as actor_email',
      'a.target_type',
      'a.target_id',
      'a.mode',
      'a.ip',
      'a.user_agent',
      'a.details',
    ])
    .where('a.merchant_uuid', '=', merchantUuid)
  if (filters.actorUserUuid) query = query.where('a.actor_user_uuid', '=', filters.actorUserUuid)
  if (filters.actions?.length) query = query.where('a.action', 'in', filters.actions)
  if (filters.from) query = query.where('a.created_at', '>=', filters.from)
  if (filters.to) query = query.where('a.created_at', '<=', filters.to)
  return db.selectFrom(query.as('audit')).selectAll()
}

/** One page of the merchant's audit log that the filters match, newest first. */
export const auditPage = (
  db: Executor,
  merchantUuid: string,
  filters: AuditFilters,
  cursor: Cursor | null,
  limit: number,
) => keysetPage(filteredAudit(db, merchantUuid, filters), cursor, limit)

export type AuditLogRow = Awaited<ReturnType<typeof auditPage>>[number]

/** Every row of the merchant's audit log that the filters match, newest first, in batches: an export. */
export const auditBatches = (db: Executor, merchantUuid: string, filters: AuditFilters) =>
  keysetBatches(filteredAudit(db, merchantUuid, filters))

/**
 * Deletes sessions that ended before `before`: a session ends at the first of its revocation and its idle
 * limit (which never passes its absolute one). The number deleted.
 */
export async function deleteEndedSessions(db: Executor, before: Date): Promise<number> {
  const result = await db
    .deleteFrom('dashboard_sessions')
    .where(sql<Date>`least(revoked_at, idle_expires_at)`, '<', before)
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}

import type { Insertable } from 'kysely'
import { sql } from 'kysely'
import type { UserRole } from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import type { DashboardAuditLogTable, DashboardSessionsTable, MerchantUsersTable } from '../../db/types.ts'

const USER_COLUMNS = ['uuid', 'merchant_uuid', 'email', 'role', 'status', 'created_at', 'updated_at'] as const

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

export const findUser = (db: Executor, uuid: string) =>
  db.selectFrom('merchant_users').select(USER_COLUMNS).where('uuid', '=', uuid).executeTakeFirst()

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
    .select([
      'i.uuid',
      'i.expires_at',
      'i.used_at',
      'u.uuid as user_uuid',
      'u.merchant_uuid',
      'u.email',
      'u.status',
    ])
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
  db
    .updateTable('dashboard_sessions')
    .set({ revoked_at: at })
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .returning(['uuid', 'user_uuid'])
    .executeTakeFirst()

export const revokeSession = (db: Executor, uuid: string, at: Date) =>
  db
    .updateTable('dashboard_sessions')
    .set({ revoked_at: at })
    .where('uuid', '=', uuid)
    .where('revoked_at', 'is', null)
    .execute()

/** Ends every live session of the user; the number ended. */
export async function revokeUserSessions(db: Executor, userUuid: string, at: Date): Promise<number> {
  const rows = await db
    .updateTable('dashboard_sessions')
    .set({ revoked_at: at })
    .where('user_uuid', '=', userUuid)
    .where('revoked_at', 'is', null)
    .returning('uuid')
    .execute()
  return rows.length
}

export const insertAudit = (db: Executor, row: Insertable<DashboardAuditLogTable>) =>
  db.insertInto('dashboard_audit_log').values(row).execute()

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

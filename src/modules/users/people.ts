import type { UserRole } from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import { AppError, notFound, validationError } from '../../http/errors.ts'
import { decodeCursor, encodeCursor, filterDigest } from '../../http/pagination.ts'
import { isUuid, randomBase62 } from '../../lib/ids.ts'
import { hashPassword } from '../../lib/passwords.ts'
import { iso } from '../../lib/time.ts'
import { recordAudit } from './audit.ts'
import { type Actor, dashboardActor, type From, type UserDeps } from './deps.ts'
import { ownersOnly } from './invitations.ts'
import * as repo from './repository.ts'
import { mayManageRole } from './roles.ts'

/** The merchant's dashboard users, oldest first; `password_set` false means the invitation is still open. */
export async function listUsers(deps: UserDeps, merchantUuid: string) {
  if (!isUuid(merchantUuid)) throw notFound('merchant')
  if (!(await deps.merchants.getMerchant(merchantUuid))) throw notFound('merchant')
  return repo.listUsers(deps.db, merchantUuid)
}

/**
 * Ends every session the user has and records `action` with how many ended, in the caller's transaction (so no
 * request can slip through on a session the change was meant to end).
 */
async function endSessions(
  trx: Executor,
  user: { uuid: string; merchant_uuid: string },
  action: 'user_disabled' | 'password_reset',
  actor: Actor,
  now: Date,
): Promise<number> {
  const sessionsRevoked = await repo.revokeUserSessions(trx, user.uuid, now)
  await recordAudit(trx, {
    action,
    merchantUuid: user.merchant_uuid,
    actor,
    target: { type: 'user', id: user.uuid },
    details: { sessions_revoked: sessionsRevoked },
    at: now,
  })
  return sessionsRevoked
}

/** Disables the user and ends every session they have, in the caller's transaction, with its audit row. */
async function disableLocked(
  trx: Executor,
  user: { uuid: string; merchant_uuid: string },
  actor: Actor,
  now: Date,
) {
  const disabled = await repo.disableUser(trx, user.uuid, now)
  if (!disabled) throw notFound('user')
  return { user: disabled, sessionsRevoked: await endSessions(trx, user, 'user_disabled', actor, now) }
}

/**
 * Disables a user (the operator's command line): they can no longer sign in, and every session they have ends
 * at once (in the same transaction, so no request can slip through on a session of a disabled user).
 */
export async function disableUser(deps: UserDeps, userUuid: string, actor: Actor) {
  if (!isUuid(userUuid)) throw notFound('user')
  const now = new Date()
  return deps.db.transaction().execute(async (trx) => {
    const user = await repo.findUser(trx, userUuid)
    if (!user) throw notFound('user')
    return disableLocked(trx, user, actor, now)
  })
}

/**
 * Gives an active user a new generated password (the operator's command line, and the embedded default's
 * `serve --reset-demo-password`): for a person who lost theirs, which nothing else can recover, as only its hash
 * is kept. Every session they have ends in the same transaction, so whoever held the old password is signed
 * out. The password is returned to be shown once. `user` is a uuid or an email.
 */
export async function resetPassword(deps: UserDeps, user: string, actor: Actor) {
  const password = randomBase62(20)
  // Hashed before the transaction: 100 ms of scrypt should not hold a row lock.
  const passwordHash = await hashPassword(password)
  const now = new Date()
  return deps.db.transaction().execute(async (trx) => {
    const found = isUuid(user)
      ? await repo.findUserByUuid(trx, user, { lock: true })
      : user.includes('@')
        ? await repo.findUserByEmail(trx, user.trim(), { lock: true })
        : undefined
    if (!found) throw notFound('user')
    if (found.status !== 'active')
      throw new AppError('invalid_state', `${found.email} is disabled: a disabled user cannot sign in.`)
    await repo.setPassword(trx, found.uuid, passwordHash, now)
    const sessionsRevoked = await endSessions(trx, found, 'password_reset', actor, now)
    return {
      user: { uuid: found.uuid, email: found.email, merchant_uuid: found.merchant_uuid },
      password,
      sessionsRevoked,
    }
  })
}

/** A dashboard user acting on their merchant's people: who they are, their role, and where they are. */
export interface Manager {
  userUuid: string
  merchantUuid: string
  role: UserRole
  from: From
}

/**
 * Locks what a change to a person needs, owners first (always in one order, repository.lockSignInOwners), then
 * the person; refuses what nobody may do to themselves, and what only an owner may do.
 */
async function lockTarget(trx: Executor, manager: Manager, userUuid: string, doing: string) {
  const owners = await repo.lockSignInOwners(trx, manager.merchantUuid)
  const target = await repo.findMerchantUser(trx, manager.merchantUuid, userUuid, { lock: true })
  if (!target) throw notFound('user')
  if (target.uuid === manager.userUuid)
    throw new AppError('invalid_state', `You cannot ${doing} yourself: ask another owner or admin.`)
  if (!mayManageRole(manager.role, target.role)) throw ownersOnly()
  /** Whether the target is an owner who can sign in and no other owner can: the merchant would be locked out. */
  const lastOwner = owners.length === 1 && owners[0]?.uuid === target.uuid
  return { target, lastOwner }
}

const LAST_OWNER =
  "is the merchant's last owner who can sign in: make someone else an owner first (a merchant without one could not manage its people)."

/**
 * Disables a user of the manager's merchant from the dashboard. Not oneself; not an owner unless the manager is
 * an owner; never the last owner who can sign in.
 */
export async function disableMember(deps: UserDeps, manager: Manager, userUuid: string) {
  if (!isUuid(userUuid)) throw notFound('user')
  const now = new Date()
  return deps.db.transaction().execute(async (trx) => {
    const { target, lastOwner } = await lockTarget(trx, manager, userUuid, 'disable')
    if (target.status === 'disabled')
      throw new AppError('invalid_state', `${target.email} is already disabled.`)
    if (lastOwner) throw new AppError('invalid_state', `${target.email} ${LAST_OWNER}`)
    const { user, sessionsRevoked } = await disableLocked(
      trx,
      target,
      dashboardActor(manager.userUuid, manager.from),
      now,
    )
    return { user: { ...user, password_set: target.password_set }, sessionsRevoked }
  })
}

/**
 * Gives a user of the manager's merchant another role. The change holds from the user's next request (a
 * session reads the role every time). Not one's own role; to or from owner only by an owner; never leaving the
 * merchant without an owner who can sign in.
 */
export async function changeRole(deps: UserDeps, manager: Manager, userUuid: string, role: UserRole) {
  if (!isUuid(userUuid)) throw notFound('user')
  const now = new Date()
  return deps.db.transaction().execute(async (trx) => {
    const { target, lastOwner } = await lockTarget(trx, manager, userUuid, 'change the role of')
    if (!mayManageRole(manager.role, role)) throw ownersOnly()
    if (target.status === 'disabled')
      throw new AppError(
        'invalid_state',
        `${target.email} is disabled: a disabled user's role cannot change.`,
      )
    if (target.role === role) return target
    if (lastOwner) throw new AppError('invalid_state', `${target.email} ${LAST_OWNER}`)
    const changed = await repo.setRole(trx, target.uuid, role, now)
    await recordAudit(trx, {
      action: 'user_role_changed',
      merchantUuid: manager.merchantUuid,
      actor: dashboardActor(manager.userUuid, manager.from),
      target: { type: 'user', id: target.uuid },
      details: { email: target.email, from: target.role, to: role },
      at: now,
    })
    return { ...changed, password_set: target.password_set }
  })
}

/** What a cursor of the audit log is made under: a cursor of another list, or other filters, is refused. */
const auditDigest = (filters: repo.AuditFilters) =>
  `dashboard-audit-log:${filterDigest({
    actor_user_uuid: filters.actorUserUuid,
    action: filters.actions?.join(','),
    from: filters.from?.toISOString(),
    to: filters.to?.toISOString(),
  })}`

/**
 * One page of the merchant's audit log that the filters match, newest first, and the cursor of the next page
 * (null at the end), bound to the filters.
 */
export async function auditLog(
  deps: UserDeps,
  merchantUuid: string,
  page: { cursor?: string; perPage: number; filters: repo.AuditFilters },
) {
  const digest = auditDigest(page.filters)
  const cursor = page.cursor ? decodeCursor(page.cursor, digest) : null
  if (cursor && cursor.direction !== 'next')
    throw validationError('cursor', 'is not a cursor of the audit log')
  const rows = await repo.auditPage(deps.db, merchantUuid, page.filters, cursor, page.perPage + 1)
  const more = rows.length > page.perPage
  const data = more ? rows.slice(0, page.perPage) : rows
  const last = data[data.length - 1]
  return {
    data,
    nextCursor:
      more && last
        ? encodeCursor({ direction: 'next', createdAt: iso(last.created_at), uuid: last.uuid }, digest)
        : null,
  }
}

import { notFound } from '../../http/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import { recordAudit } from './audit.ts'
import type { Actor, UserDeps } from './deps.ts'
import * as repo from './repository.ts'

/** The merchant's dashboard users, oldest first; `password_set` false means the invitation is still open. */
export async function listUsers(deps: UserDeps, merchantUuid: string) {
  if (!isUuid(merchantUuid)) throw notFound('merchant')
  if (!(await deps.merchants.getMerchant(merchantUuid))) throw notFound('merchant')
  return repo.listUsers(deps.db, merchantUuid)
}

/**
 * Disables a user: they can no longer sign in, and every session they have ends at once (in the same
 * transaction, so no request can slip through on a session of a disabled user).
 */
export async function disableUser(deps: UserDeps, userUuid: string, actor: Actor) {
  if (!isUuid(userUuid)) throw notFound('user')
  const now = new Date()
  return deps.db.transaction().execute(async (trx) => {
    const user = await repo.disableUser(trx, userUuid, now)
    if (!user) throw notFound('user')
    const sessionsRevoked = await repo.revokeUserSessions(trx, userUuid, now)
    await recordAudit(trx, {
      action: 'user_disabled',
      merchantUuid: user.merchant_uuid,
      actor,
      target: { type: 'user', id: user.uuid },
      details: { sessions_revoked: sessionsRevoked },
      at: now,
    })
    return { user, sessionsRevoked }
  })
}

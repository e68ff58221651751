import type { UserRole } from '../../db/enums.ts'
import { isUniqueViolation } from '../../db/unique.ts'
import { AppError, notFound, validationError } from '../../http/errors.ts'
import { sha256Hex } from '../../lib/crypto.ts'
import { isUuid, newId, randomBase62, SECRET_LENGTH } from '../../lib/ids.ts'
import { passwordWeakness } from '../../lib/password-strength.ts'
import { hashPassword } from '../../lib/passwords.ts'
import { recordAudit } from './audit.ts'
import { type Actor, dashboardActor, type From, type UserDeps } from './deps.ts'
import * as repo from './repository.ts'
import { mayManageRole } from './roles.ts'

/** How long a set-password link works. */
export const INVITATION_TTL_MS = 24 * 3600 * 1000

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

export interface Invitation {
  user: Awaited<ReturnType<typeof repo.insertUser>>
  /** The one-time set-password link: the only copy of its token. */
  link: string
  expiresAt: Date
}

/** The refusal of an admin's change that only an owner may make. */
export const ownersOnly = (): AppError =>
  new AppError(
    'forbidden',
    "Only an owner can make someone an owner, or change or disable an owner's access.",
  )

/** Whether a user can be invited again: they never set a password and are not disabled. */
const canReinvite = (user: { password_hash: string | null; status: string }) =>
  user.password_hash === null && user.status === 'active'

/**
 * Makes a user of the merchant with the role, without a password, and a one-time link (24 h) that sets it.
 * The email must not be anyone's yet, at this merchant or another (sign-in asks for the email alone), except
 * a user of this merchant who never accepted their invitation: they get a new link, and the old one ends.
 * `byRole`, the role of the dashboard user inviting, limits what they may give (roles.ts, mayManageRole): an
 * admin neither invites an owner nor re-invites one as something else. The command line has no such limit.
 */
export async function inviteUser(
  deps: UserDeps,
  input: { merchantUuid: string; email: string; role: UserRole },
  actor: Actor,
  byRole?: UserRole,
): Promise<Invitation> {
  const email = input.email.trim()
  if (email.length > 254 || !EMAIL.test(email)) throw validationError('email', 'must be an email address')
  if (!isUuid(input.merchantUuid) || !(await deps.merchants.getMerchant(input.merchantUuid)))
    throw notFound('merchant')
  if (byRole && !mayManageRole(byRole, input.role)) throw ownersOnly()
  const token = randomBase62(SECRET_LENGTH)
  const now = new Date()
  const expiresAt = new Date(now.getTime() + INVITATION_TTL_MS)
  try {
    const user = await deps.db.transaction().execute(async (trx) => {
      const existing = await repo.findUserByEmail(trx, email, { lock: true })
      if (existing && !(existing.merchant_uuid === input.merchantUuid && canReinvite(existing)))
        throw new AppError('conflict', `There is already a dashboard user with the email ${email}.`)
      if (existing && byRole && !mayManageRole(byRole, existing.role)) throw ownersOnly()
      // Inviting someone again whose invitation is still open (lost, or expired) replaces it.
      if (existing) await repo.deleteOpenInvitations(trx, existing.uuid)
      const user = existing
        ? await repo.setRole(trx, existing.uuid, input.role, now)
        : await repo.insertUser(trx, {
            uuid: newId(),
            merchant_uuid: input.merchantUuid,
            email,
            role: input.role,
            password_hash: null,
            status: 'active',
            created_at: now,
            updated_at: now,
          })
      await repo.insertInvitation(trx, {
        uuid: newId(),
        user_uuid: user.uuid,
        token_hash: sha256Hex(token),
        expires_at: expiresAt,
        created_at: now,
      })
      await recordAudit(trx, {
        action: 'user_invited',
        merchantUuid: input.merchantUuid,
        actor,
        target: { type: 'user', id: user.uuid },
        details: { email, role: input.role, ...(existing && { replaces_open_invitation: true }) },
        at: now,
      })
      return user
    })
    const link = `${deps.config.publicBaseUrl}/dashboard/set-password?token=${token}`
    return { user, link, expiresAt }
  } catch (error) {
    if (isUniqueViolation(error, 'merchant_users_email_idx'))
      throw new AppError('conflict', `There is already a dashboard user with the email ${email}.`)
    throw error
  }
}

/**
 * Sets the invited user's password with the link's token: once only, and within 24 h of the invitation.
 * The invitation row is locked, so two uses of one link at once cannot both succeed.
 */
export async function acceptInvitation(
  deps: UserDeps,
  input: { token: string; password: string },
  from: From,
): Promise<{ email: string }> {
  const weakness = passwordWeakness(input.password)
  if (weakness) throw validationError('password', weakness)
  // Hashed before the transaction: 100 ms of scrypt should not hold a row lock.
  const passwordHash = await hashPassword(input.password)
  const now = new Date()
  return deps.db.transaction().execute(async (trx) => {
    const invitation = await repo.lockInvitation(trx, sha256Hex(input.token))
    if (!invitation)
      throw new AppError(
        'not_found',
        'No such invitation: check the link you were sent (a newer invitation replaces an older one).',
      )
    if (invitation.used_at)
      throw new AppError(
        'invalid_state',
        'This invitation was already used: sign in with the password you set, or ask for a new invitation.',
      )
    if (invitation.expires_at.getTime() <= now.getTime())
      throw new AppError(
        'invalid_state',
        'This invitation has expired (an invitation is valid for 24 hours): ask for a new one.',
        { expired_at: invitation.expires_at.toISOString() },
      )
    if (invitation.status !== 'active')
      throw new AppError('invalid_state', 'This user is disabled: ask an owner or admin of your merchant.')
    await repo.setPassword(trx, invitation.user_uuid, passwordHash, now)
    await repo.markInvitationUsed(trx, invitation.uuid, now)
    await recordAudit(trx, {
      action: 'invitation_accepted',
      merchantUuid: invitation.merchant_uuid,
      actor: dashboardActor(invitation.user_uuid, from),
      target: { type: 'user', id: invitation.user_uuid },
      at: now,
    })
    return { email: invitation.email }
  })
}

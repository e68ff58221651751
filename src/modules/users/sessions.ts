import type { UserRole } from '../../db/enums.ts'
import { AppError } from '../../http/errors.ts'
import { hmacSha256Hex, sha256Hex } from '../../lib/crypto.ts'
import { newId, randomBase62, SECRET_LENGTH } from '../../lib/ids.ts'
import { verifyPassword } from '../../lib/passwords.ts'
import { recordAudit } from './audit.ts'
import { dashboardActor, type From, type UserDeps } from './deps.ts'
import * as repo from './repository.ts'
import { type Permission, ROLE_PERMISSIONS } from './roles.ts'
import { acceptTotpCode } from './totp.ts'

/** The one answer to a wrong password, an unknown email, a disabled user and an unfinished invitation alike. */
const BAD_CREDENTIALS = 'The email or password is not right.'

export interface SignedInUser {
  uuid: string
  merchant_uuid: string
  email: string
  role: UserRole
  permissions: Permission[]
  totp_enabled: boolean
}

/** A live session: who it is, and what the dashboard needs to act in it. */
export interface DashboardSession {
  uuid: string
  user: SignedInUser
  /** Sent back in `X-CSRF-Token` with every change; bound to this session. */
  csrfToken: string
  idleExpiresAt: Date
  expiresAt: Date
  /**
   * The merchant requires a second factor and this user has none yet: until they enrol, the session may only
   * enrol, read itself, and sign out (docs/DASHBOARD.md, "Second factor").
   */
  totpEnrolmentRequired: boolean
}

/** The token of the session cookie, shown to the caller once, and the session it opens. */
export interface SignIn {
  token: string
  session: DashboardSession
}

/** The CSRF token of a session: an HMAC of its cookie token, so nothing more is stored and it cannot be guessed. */
export const csrfTokenFor = (deps: UserDeps, sessionToken: string): string =>
  hmacSha256Hex(deps.csrfKey, sessionToken)

/**
 * The hash of a random password nobody kept, with the default parameters: checked when the email names no
 * user that can sign in, so that such an answer costs the same scrypt as a wrong password and the time does
 * not tell which it was. A constant, so even the first such answer of a process costs one hash, not two.
 */
export const DECOY_HASH =
  'scrypt$32768$8$1$T8Wu08zu9eiLnJhHJrPyeQ$WHUq8C6wBA6z8bb4qF6Q5HZ8nAxqwmSwo9gkHKmKgKI'

/**
 * Reserves a sign-in attempt before anything of it is checked, or refuses it (429) without a check. In one
 * short transaction, under a lock on the email and one on the client address, the failures of the window are
 * counted and, below both limits, the attempt is written as a `login_failed` at once: whatever runs at the
 * same time, in this process or another on the database, counts it, so at most the limit are ever checked
 * in a window. The row is settled once the outcome is known (the sign-in it became, or the failure's user),
 * and stays a failure if that never comes. No connection is held while the password is hashed. The row's
 * uuid.
 */
async function reserveSignIn(deps: UserDeps, email: string, from: From, now: Date): Promise<string> {
  const { loginWindowSeconds, loginMaxFailuresPerAccount, loginMaxFailuresPerAddress } = deps.config.dashboard
  const since = new Date(now.getTime() - loginWindowSeconds * 1000)
  const minutes = Math.ceil(loginWindowSeconds / 60)
  const actor = { via: 'dashboard' as const, userUuid: null, ...from }
  const target = { type: 'email' as const, id: email }
  const reserved = await deps.db.transaction().execute(async (trx) => {
    // The email's lock before the address's in every attempt, so two attempts never wait on each other.
    await repo.lockAttempts(trx, `sign-in email ${email}`)
    if (from.ip) await repo.lockAttempts(trx, `sign-in address ${from.ip}`)
    const byAccount = await repo.countRecent(trx, 'login_failed', { targetId: email }, since)
    let refusal: string | null = null
    if (byAccount >= loginMaxFailuresPerAccount)
      refusal = `Too many failed sign-ins for this email: try again in ${minutes} minutes.`
    else if (from.ip) {
      const byAddress = await repo.countRecent(trx, 'login_failed', { ip: from.ip }, since)
      if (byAddress >= loginMaxFailuresPerAddress)
        refusal = `Too many failed sign-ins from your address: try again in ${minutes} minutes.`
    }
    if (refusal) {
      await recordAudit(trx, { action: 'login_throttled', merchantUuid: null, actor, target, at: now })
      return { refusal }
    }
    // Nobody's yet: the merchant's log shows the attempt once its outcome names the user.
    return {
      uuid: await recordAudit(trx, { action: 'login_failed', merchantUuid: null, actor, target, at: now }),
    }
  })
  if ('refusal' in reserved)
    throw new AppError('rate_limited', reserved.refusal, { retry_after_seconds: loginWindowSeconds }, null, {
      'retry-after': String(loginWindowSeconds),
    })
  return reserved.uuid
}

/**
 * Signs in with email and password, and the current TOTP code when the user has a second factor. Always a new
 * session with a new token: a token the browser already had (planted by someone else, or the user's own
 * earlier session) is never adopted, and is revoked if live. Failures are throttled per email and per client
 * address (429), and answer alike for every cause. With the right password, a missing or wrong code is
 * `401 totp_required` (a wrong one counts as a failed sign-in).
 */
export async function login(
  deps: UserDeps,
  input: { email: string; password: string; totp_code?: string },
  from: From,
  presentedToken: string | null,
): Promise<SignIn> {
  const now = new Date()
  const email = input.email.trim().toLowerCase()
  const attempt = await reserveSignIn(deps, email, from, now)
  const user = await repo.findUserByEmail(deps.db, email)
  const usable = user?.status === 'active' && user.password_hash !== null
  const matches = await verifyPassword(input.password, usable ? (user.password_hash as string) : DECOY_HASH)
  if (!user || !usable || !matches) {
    if (user)
      await repo.settleAudit(deps.db, attempt, {
        merchant_uuid: user.merchant_uuid,
        actor_user_uuid: user.uuid,
      })
    throw new AppError('unauthorized', BAD_CREDENTIALS)
  }
  if (user.totp_enabled) {
    if (input.totp_code === undefined || input.totp_code === '') {
      // The right password without its code is no failure: the page asks for the code next.
      await repo.deleteAudit(deps.db, attempt)
      throw new AppError('totp_required', 'Enter the 6-digit code from your authenticator app.', {
        reason: 'missing',
      })
    }
    if (!(await acceptTotpCode(deps, deps.db, user.uuid, input.totp_code, now))) {
      await repo.settleAudit(deps.db, attempt, {
        merchant_uuid: user.merchant_uuid,
        actor_user_uuid: user.uuid,
        details: JSON.stringify({ reason: 'totp_code' }),
      })
      throw new AppError(
        'totp_required',
        'The code is not right, or was used already: enter the current code from your authenticator app.',
        { reason: 'invalid' },
      )
    }
  }
  const totpEnrolmentRequired =
    !user.totp_enabled && (await repo.merchantRequiresTotp(deps.db, user.merchant_uuid))
  const token = randomBase62(SECRET_LENGTH)
  const { sessionIdleSeconds, sessionAbsoluteSeconds } = deps.config.dashboard
  const expiresAt = new Date(now.getTime() + sessionAbsoluteSeconds * 1000)
  const idleExpiresAt = new Date(now.getTime() + sessionIdleSeconds * 1000)
  const uuid = newId()
  await deps.db.transaction().execute(async (trx) => {
    if (presentedToken) await repo.revokeSessionByToken(trx, sha256Hex(presentedToken), now)
    await repo.insertSession(trx, {
      uuid,
      token_hash: sha256Hex(token),
      user_uuid: user.uuid,
      created_at: now,
      last_seen_at: now,
      idle_expires_at: idleExpiresAt,
      expires_at: expiresAt,
      revoked_at: null,
      ip: from.ip,
      user_agent: from.userAgent,
    })
    // The reserved attempt becomes the sign-in, so it counts as no failure from now on.
    await repo.settleAudit(trx, attempt, {
      action: 'login_succeeded',
      merchant_uuid: user.merchant_uuid,
      actor_user_uuid: user.uuid,
      target_type: 'session',
      target_id: uuid,
    })
  })
  return {
    token,
    session: {
      uuid,
      user: signedInUser(user),
      csrfToken: csrfTokenFor(deps, token),
      idleExpiresAt,
      expiresAt,
      totpEnrolmentRequired,
    },
  }
}

function signedInUser(user: {
  uuid: string
  merchant_uuid: string
  email: string
  role: UserRole
  totp_enabled: boolean
}): SignedInUser {
  return {
    uuid: user.uuid,
    merchant_uuid: user.merchant_uuid,
    email: user.email,
    role: user.role,
    permissions: [...ROLE_PERMISSIONS[user.role]],
    totp_enabled: user.totp_enabled,
  }
}

/**
 * The live session of a cookie token, its idle limit moved on by this use; null when there is none (unknown,
 * revoked, idle or past its absolute limit, or its user disabled).
 */
export async function authenticate(deps: UserDeps, token: string): Promise<DashboardSession | null> {
  const now = new Date()
  const session = await repo.touchSession(
    deps.db,
    sha256Hex(token),
    now,
    deps.config.dashboard.sessionIdleSeconds,
  )
  if (!session) return null
  const user = await repo.findSessionUser(deps.db, session.user_uuid)
  if (user?.status !== 'active') return null
  return {
    uuid: session.uuid,
    user: signedInUser(user),
    csrfToken: csrfTokenFor(deps, token),
    idleExpiresAt: session.idle_expires_at,
    expiresAt: session.expires_at,
    totpEnrolmentRequired: user.dashboard_require_totp && !user.totp_enabled,
  }
}

/** Ends this session. */
export async function logout(deps: UserDeps, session: DashboardSession, from: From): Promise<void> {
  const now = new Date()
  await deps.db.transaction().execute(async (trx) => {
    await repo.revokeSession(trx, session.uuid, now)
    await recordAudit(trx, {
      action: 'logout',
      merchantUuid: session.user.merchant_uuid,
      actor: dashboardActor(session.user.uuid, from),
      target: { type: 'session', id: session.uuid },
      at: now,
    })
  })
}

/** Ends every session of the signed-in user, this one included; how many ended. */
export async function logoutEverywhere(
  deps: UserDeps,
  session: DashboardSession,
  from: From,
): Promise<number> {
  const now = new Date()
  return deps.db.transaction().execute(async (trx) => {
    const ended = await repo.revokeUserSessions(trx, session.user.uuid, now)
    await recordAudit(trx, {
      action: 'logout_everywhere',
      merchantUuid: session.user.merchant_uuid,
      actor: dashboardActor(session.user.uuid, from),
      target: { type: 'user', id: session.user.uuid },
      details: { sessions_revoked: ended },
      at: now,
    })
    return ended
  })
}

/** How long an ended session is kept (for a look at recent sign-ins) before housekeeping deletes it. */
export const ENDED_SESSION_RETENTION_DAYS = 7

/** Deletes the sessions that ended (revoked, idle or past their limit) 7 days or more before `now`. */
export function purgeEndedSessions(deps: UserDeps, now = new Date()): Promise<number> {
  return repo.deleteEndedSessions(
    deps.db,
    new Date(now.getTime() - ENDED_SESSION_RETENTION_DAYS * 24 * 3600 * 1000),
  )
}

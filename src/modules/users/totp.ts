import type { Executor, Trx } from '../../db/index.ts'
import { AppError, validationError } from '../../http/errors.ts'
import { decryptSecret, deriveKey, encryptSecret } from '../../lib/crypto.ts'
import { newTotpSecret, totpCodeStep, totpUri } from '../../lib/totp.ts'
import { recordAudit } from './audit.ts'
import { dashboardActor, type From, type UserDeps } from './deps.ts'
import * as repo from './repository.ts'

/** What the authenticator app shows as the account's issuer. */
const ISSUER = 'Merchant Gateway'

/** TOTP secrets are sealed with a key of their own, derived from the master key. */
const totpKey = (deps: UserDeps) => deriveKey(deps.config.masterKey, 'dashboard-totp')

/** The signed-in user acting on their own second factor. */
export interface Self {
  userUuid: string
  merchantUuid: string
  email: string
  from: From
}

/**
 * Whether `code` is a current code of the user's secret not used before; if so its step becomes the last used,
 * so the same code (or an older one) is refused from now on. Works on a secret pending enrolment too.
 */
export async function acceptTotpCode(
  deps: UserDeps,
  db: Executor,
  userUuid: string,
  code: string,
  now: Date,
): Promise<boolean> {
  const row = await repo.findTotp(db, userUuid)
  if (!row.totp_secret_sealed) return false
  const step = totpCodeStep(decryptSecret(totpKey(deps), row.totp_secret_sealed), code, now)
  if (step === null) return false
  return (await repo.claimTotpStep(db, userUuid, step)) !== undefined
}

/**
 * Refuses (429) once the user's wrong codes in a session (confirming, turning off, a step-up) reach the limit,
 * as sign-ins are: otherwise a stolen session could try every code until it turned the second factor off or
 * moved money out. Called with the user's row locked (findTotp with `lock`) and the wrong code recorded in the
 * same transaction (recordRejection): the count, the check and its record are then one step per user in
 * every process on the database, so however many codes arrive together at most the limit are checked.
 */
async function refuseIfThrottled(deps: UserDeps, trx: Trx, self: Self, now: Date): Promise<void> {
  const { loginWindowSeconds, loginMaxFailuresPerAccount } = deps.config.dashboard
  const since = new Date(now.getTime() - loginWindowSeconds * 1000)
  const rejected = await repo.countRecent(trx, 'totp_code_rejected', { targetId: self.userUuid }, since)
  if (rejected >= loginMaxFailuresPerAccount)
    throw new AppError(
      'rate_limited',
      `Too many wrong codes: try again in ${Math.ceil(loginWindowSeconds / 60)} minutes.`,
      { retry_after_seconds: loginWindowSeconds },
      null,
      { 'retry-after': String(loginWindowSeconds) },
    )
}

const recordRejection = (trx: Trx, self: Self, now: Date, details: Record<string, unknown>) =>
  recordAudit(trx, {
    action: 'totp_code_rejected',
    merchantUuid: self.merchantUuid,
    actor: dashboardActor(self.userUuid, self.from),
    target: { type: 'user', id: self.userUuid },
    details,
    at: now,
  })

const wrongCode = () =>
  validationError('code', 'is not the current code of your authenticator app (or was used already)')

/**
 * Starts enrolment: a new secret, kept sealed and not in force until a code from it is confirmed. Starting
 * again replaces a secret not yet confirmed. Refused while a second factor is on (turn it off first).
 */
export async function startTotpEnrolment(deps: UserDeps, self: Self) {
  const secret = newTotpSecret()
  const now = new Date()
  await deps.db.transaction().execute(async (trx) => {
    const started = await repo.setPendingTotp(trx, self.userUuid, encryptSecret(totpKey(deps), secret), now)
    if (!started)
      throw new AppError(
        'invalid_state',
        'Your second factor is already on: turn it off first to set up another authenticator.',
      )
    await recordAudit(trx, {
      action: 'totp_enrolment_started',
      merchantUuid: self.merchantUuid,
      actor: dashboardActor(self.userUuid, self.from),
      target: { type: 'user', id: self.userUuid },
      at: now,
    })
  })
  return { secret, uri: totpUri(secret, ISSUER, self.email) }
}

/** Turns the second factor on with a code from the secret of the enrolment started. */
export async function confirmTotp(deps: UserDeps, self: Self, code: string) {
  await switchTotp(deps, self, code, true, async (_trx, row) => {
    if (row.totp_enabled) throw new AppError('invalid_state', 'Your second factor is already on.')
    if (!row.totp_secret_sealed)
      throw new AppError(
        'invalid_state',
        'There is no enrolment to confirm: start one with POST /dashboard/api/me/totp.',
      )
  })
}

/** Turns the second factor off, with a current code; refused while the merchant requires one. */
export async function removeTotp(deps: UserDeps, self: Self, code: string) {
  await switchTotp(deps, self, code, false, async (trx, row) => {
    if (!row.totp_enabled) throw new AppError('invalid_state', 'Your second factor is not on.')
    if (await repo.merchantRequiresTotp(trx, self.merchantUuid))
      throw new AppError(
        'invalid_state',
        'Your merchant requires a second factor, so it cannot be turned off (an owner can lift the requirement).',
      )
  })
}

/**
 * Turns the second factor on or off in one transaction: the user's row locked, the throttle, the caller's
 * refusals, then the code used up (a wrong one recorded as a rejection), the switch and its audit row.
 */
async function switchTotp(
  deps: UserDeps,
  self: Self,
  code: string,
  enabled: boolean,
  refuse: (trx: Trx, row: Awaited<ReturnType<typeof repo.findTotp>>) => Promise<void>,
) {
  const now = new Date()
  const accepted = await deps.db.transaction().execute(async (trx) => {
    const row = await repo.findTotp(trx, self.userUuid, { lock: true })
    await refuseIfThrottled(deps, trx, self, now)
    await refuse(trx, row)
    if (!(await acceptTotpCode(deps, trx, self.userUuid, code, now))) {
      await recordRejection(trx, self, now, { while: enabled ? 'confirming' : 'turning off' })
      return false
    }
    await repo.setTotpEnabled(trx, self.userUuid, enabled, now)
    await recordAudit(trx, {
      action: enabled ? 'totp_enabled' : 'totp_disabled',
      merchantUuid: self.merchantUuid,
      actor: dashboardActor(self.userUuid, self.from),
      target: { type: 'user', id: self.userUuid },
      at: now,
    })
    return true
  })
  if (!accepted) throw wrongCode()
}

/**
 * A step-up check: the signed-in user confirms one operation (a payout, say) with a current code of their second
 * factor. The code is used up like a sign-in code (a code, or an older one, works once), and wrong codes are
 * throttled per user with the other in-session codes. Missing or wrong: 403 `forbidden` with
 * `details.totp_required`; too many wrong codes: 429.
 */
export async function verifyStepUp(deps: UserDeps, self: Self, code: string | undefined, operation: string) {
  if (code === undefined || code.trim() === '')
    throw new AppError(
      'forbidden',
      'This operation needs the current code of your authenticator app in the X-Dashboard-Totp header.',
      { totp_required: true, reason: 'missing' },
    )
  const now = new Date()
  const accepted = await deps.db.transaction().execute(async (trx) => {
    const row = await repo.findTotp(trx, self.userUuid, { lock: true })
    await refuseIfThrottled(deps, trx, self, now)
    // A secret whose enrolment is not confirmed is no second factor (acceptTotpCode takes its codes).
    if (!row.totp_enabled)
      throw new AppError(
        'forbidden',
        'This operation needs a second factor: set up an authenticator app (POST /dashboard/api/me/totp) first.',
        { totp_required: true, totp_enrolment_required: true },
      )
    if (await acceptTotpCode(deps, trx, self.userUuid, code, now)) return true
    await recordRejection(trx, self, now, { while: 'step_up', operation })
    return false
  })
  if (accepted) return
  throw new AppError(
    'forbidden',
    'The code is not right, or was used already: enter the current code from your authenticator app.',
    { totp_required: true, reason: 'invalid' },
  )
}

/** The merchant's sign-in security, as every user of it may read. */
export async function securitySettings(deps: UserDeps, merchantUuid: string) {
  return { requireTotp: await repo.merchantRequiresTotp(deps.db, merchantUuid) }
}

/**
 * Requires (or stops requiring) a second factor of every dashboard user of the merchant. To require it, the
 * owner must have one on themselves: otherwise they would lock their own session out at once. From the next
 * request, users without one can only enrol (sessions.ts, totpEnrolmentRequired).
 */
export async function setRequireTotp(deps: UserDeps, self: Self, requireTotp: boolean) {
  const now = new Date()
  return deps.db.transaction().execute(async (trx) => {
    const own = await repo.findTotp(trx, self.userUuid)
    if (requireTotp && !own.totp_enabled)
      throw new AppError(
        'invalid_state',
        'Turn on your own second factor first (POST /dashboard/api/me/totp): requiring it without one would lock you out.',
      )
    const before = await repo.merchantRequiresTotp(trx, self.merchantUuid)
    if (before !== requireTotp) {
      await repo.setMerchantRequiresTotp(trx, self.merchantUuid, requireTotp)
      await recordAudit(trx, {
        action: 'merchant_security_changed',
        merchantUuid: self.merchantUuid,
        actor: dashboardActor(self.userUuid, self.from),
        target: { type: 'merchant', id: self.merchantUuid },
        details: { require_totp: requireTotp },
        at: now,
      })
    }
    return { requireTotp }
  })
}

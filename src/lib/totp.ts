import { Secret, TOTP } from 'otpauth'

/**
 * Time-based one-time passwords (RFC 6238) as every authenticator app reads them: SHA-1, 6 digits, a new code
 * every 30 seconds. The arithmetic is the `otpauth` library's; what is ours is which step a code belongs to,
 * so that a caller can accept each step's code once.
 */
export const TOTP_PERIOD_SECONDS = 30
const DIGITS = 6
/** A code of the step before or after the server's is accepted too: clocks drift, and people type slowly. */
const WINDOW = 1

const totp = (secret: string, issuer = '', label = 'OTPAuth') =>
  new TOTP({
    issuer,
    label,
    algorithm: 'SHA1',
    digits: DIGITS,
    period: TOTP_PERIOD_SECONDS,
    secret: Secret.fromBase32(secret),
  })

/** A new random secret, 160 bits (RFC 4226's recommendation), in base32 as apps take it. */
export const newTotpSecret = (): string => new Secret({ size: 20 }).base32

/** The `otpauth://totp/…` URI an authenticator app reads from a QR code. */
export const totpUri = (secret: string, issuer: string, account: string): string =>
  totp(secret, issuer, account).toString()

/** The step (30-second interval since the epoch) `at` falls in. */
export const totpStepAt = (at: Date): number => Math.floor(at.getTime() / 1000 / TOTP_PERIOD_SECONDS)

/**
 * The step whose code `code` is, within one step of `at`; null when it is none of them (or not 6 digits).
 * Spaces are ignored: apps show the code as "123 456".
 */
export function totpCodeStep(secret: string, code: string, at: Date): number | null {
  const token = code.replace(/\s+/g, '')
  if (!/^\d{6}$/.test(token)) return null
  const delta = totp(secret).validate({ token, timestamp: at.getTime(), window: WINDOW })
  return delta === null ? null : totpStepAt(at) + delta
}

/** The code of the step `at` falls in (what an authenticator app shows then). */
export const totpCode = (secret: string, at: Date = new Date()): string =>
  totp(secret).generate({ timestamp: at.getTime() })

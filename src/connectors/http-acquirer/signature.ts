import { randomBytes } from 'node:crypto'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'

/**
 * The acquirer protocol signs its callbacks as Standard Webhooks do (docs/CONNECTORS.md, Callbacks): headers
 * `webhook-id`, `webhook-timestamp` (unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">`, several space-separated during a rotation), a secret `whsec_<base64>`, and a
 * timestamp at most 5 minutes from the receiver's clock. The same scheme signs the gateway's own webhooks, so
 * any Standard Webhooks library signs and verifies both.
 */

const PREFIX = 'whsec_'

/** A new callback signing secret: 32 random bytes. */
export const newCallbackSecret = (): string => `${PREFIX}${randomBytes(32).toString('base64')}`

/** Whether `secret` can sign and verify (`whsec_` and base64 of at least 16 bytes). */
export function isCallbackSecret(secret: string): boolean {
  if (!secret.startsWith(PREFIX)) return false
  const bytes = secret.slice(PREFIX.length)
  return /^[A-Za-z0-9+/]+={0,2}$/.test(bytes) && Buffer.from(bytes, 'base64').length >= 16
}

/** The three headers of a callback with this id and time, signed with each secret. */
export function signCallback(secrets: string[], id: string, at: Date, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' '),
  }
}

/** Why a callback did not verify: no signature headers, a timestamp out of tolerance, or no matching signature. */
export type CallbackVerification = { ok: true } | { ok: false; reason: 'unsigned' | 'stale' | 'mismatch' }

/** Verifies a callback's raw body against its headers with any of the account's accepted secrets. */
export function verifyCallback(
  body: string,
  headers: Record<string, string | string[] | undefined>,
  secrets: string[],
): CallbackVerification {
  const header = (name: string) => {
    const value = headers[name]
    return Array.isArray(value) ? value[0] : value
  }
  const signed = {
    'webhook-id': header('webhook-id') ?? '',
    'webhook-timestamp': header('webhook-timestamp') ?? '',
    'webhook-signature': header('webhook-signature') ?? '',
  }
  if (!signed['webhook-id'] || !signed['webhook-timestamp'] || !signed['webhook-signature'])
    return { ok: false, reason: 'unsigned' }
  for (const secret of secrets) {
    try {
      new Webhook(secret).verify(body, signed)
      return { ok: true }
    } catch (error) {
      // The library parses the body once the signature matched: a body that is not JSON is verified all the same.
      if (error instanceof SyntaxError) return { ok: true }
      if (!(error instanceof WebhookVerificationError)) throw error
      // The timestamp is checked before any signature, alike for every secret.
      if (/timestamp too/.test(error.message)) return { ok: false, reason: 'stale' }
      if (/Invalid Signature Headers/.test(error.message)) return { ok: false, reason: 'unsigned' }
    }
  }
  return { ok: false, reason: 'mismatch' }
}

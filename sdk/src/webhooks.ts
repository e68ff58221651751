import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { WebhookVerificationError } from './errors.ts'
import type { components } from './openapi.ts'

/** A callback's body: a transaction's or a payout's event (a test delivery carries `event: 'webhook.test'`). */
export type WebhookEvent =
  | components['schemas']['MerchantTransactionCallback']
  | components['schemas']['MerchantPayoutCallback']
  | components['schemas']['MerchantTestCallback']

/** A request's headers: a fetch `Headers`, or Node's `IncomingHttpHeaders` (any case). */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>

/** How far a webhook's timestamp may be from this clock, either way: 5 minutes, as Standard Webhooks says. */
export const DEFAULT_TOLERANCE_SECONDS = 300

function header(headers: HeadersLike, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  for (const [key, value] of Object.entries(headers))
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(' ') : value
  return undefined
}

/** The key bytes of a `whsec_<base64>` secret. */
function keyOf(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64')
  if (key.length === 0) throw new WebhookVerificationError('the webhook secret is empty or not base64')
  return key
}

/** `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`: one signature, as Standard Webhooks makes it. */
function sign(secret: string, id: string, timestamp: number, body: string | Uint8Array): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.`).update(body).digest('base64')
  return `v1,${mac}`
}

/** A new signing secret, `whsec_` and 32 random bytes in base64 (what `listen` signs its forwards with). */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/**
 * The three Standard Webhooks headers of a delivery of `body`, signed with each of `secrets` (during a rotation
 * the service signs with the new secret and the old one).
 */
export function signHeaders(
  body: string,
  input: { id: string; secrets: string | readonly string[]; timestamp?: Date },
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const timestamp = Math.floor((input.timestamp ?? new Date()).getTime() / 1000)
  const secrets = typeof input.secrets === 'string' ? [input.secrets] : input.secrets
  return {
    'webhook-id': input.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => sign(secret, input.id, timestamp, body)).join(' '),
  }
}

/**
 * Checks a webhook before you act on it, and returns its parsed body: the `webhook-signature` header must hold a
 * `v1` signature of `webhook-id`, `webhook-timestamp` and the raw body made with one of `secrets` (give the old
 * and the new secret while you rotate), and the timestamp must be within `toleranceSeconds` of now. Compatible
 * with Standard Webhooks. Pass the body exactly as received, before any JSON parsing. Throws
 * WebhookVerificationError otherwise.
 */
export function verify(
  rawBody: string | Uint8Array,
  headers: HeadersLike,
  secrets: string | readonly string[],
  options: { toleranceSeconds?: number; now?: Date } = {},
): WebhookEvent {
  // The usual mistake: a JSON body parser ran first (express.json()), and the bytes that were signed are gone.
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array))
    throw new WebhookVerificationError(
      `verify() needs the raw body exactly as received, a string or a Buffer, not ${rawBody === null ? 'null' : typeof rawBody}: ` +
        "a JSON parser ran before it. Read this route's body raw, e.g. express.raw({ type: 'application/json' }), " +
        'and parse only what verify() returns',
    )
  const id = header(headers, 'webhook-id')
  const timestampText = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (!id || !timestampText || !signatures)
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature')
  const timestamp = Number(timestampText)
  if (!/^\d+$/.test(timestampText) || !Number.isSafeInteger(timestamp))
    throw new WebhookVerificationError('webhook-timestamp is not unix seconds')
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000)
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  if (Math.abs(now - timestamp) > tolerance)
    throw new WebhookVerificationError(
      `webhook-timestamp is ${now - timestamp} s from now: more than ${tolerance} s (a replay, or a clock off)`,
    )
  const offered = signatures
    .split(' ')
    .filter((part) => part.startsWith('v1,'))
    .map((part) => Buffer.from(part.slice(3), 'base64'))
  // An unset secret in the list (the previous one, outside a rotation) is skipped, not an error.
  const list = (typeof secrets === 'string' ? [secrets] : secrets).filter(
    (secret): secret is string => typeof secret === 'string' && secret.length > 0,
  )
  if (list.length === 0) throw new WebhookVerificationError('no secret to verify with')
  const matches = list.some((secret) => {
    const expected = Buffer.from(sign(secret, id, timestamp, rawBody).slice(3), 'base64')
    return offered.some((given) => given.length === expected.length && timingSafeEqual(given, expected))
  })
  if (!matches) throw new WebhookVerificationError('no signature matches: wrong secret, or a changed body')
  const text = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8')
  try {
    return JSON.parse(text) as WebhookEvent
  } catch {
    throw new WebhookVerificationError('the signed body is not JSON')
  }
}

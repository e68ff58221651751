import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify'
import { levels } from 'pino'
import type { Merchant, Mode } from '../db/types.ts'
import { constantTimeEqual, hmacSha256Hex } from '../lib/crypto.ts'
import { AppError, declareErrorResponses } from './errors.ts'

export type AuthRequirement = 'none' | 'key' | 'signature'

/** What an authenticated request knows about its caller. */
export interface AuthContext {
  keyId: string
  mode: Mode
  merchant: Merchant
}

/** An API key as the authenticator sees it: whose it is, whether it still works, and its secret. */
export interface KnownKey {
  auth: AuthContext
  revoked: boolean
  /** The plain secret, kept in process memory only to verify X-Signature. */
  secret: string
}

/** Where the authenticator looks keys up (the merchants module, with its cache). */
export interface KeyLookup {
  /** The key whose secret is `secret` (an `X-Api-Key`); null when unknown. */
  byApiKey(secret: string): Promise<KnownKey | null>
  /** The key for an `X-Signature` key_id; null when unknown. */
  byKeyId(keyId: string): Promise<KnownKey | null>
  /**
   * A key authenticated a request: the write of its `last_used_at` (not awaited by the request), or null when
   * none is due.
   */
  keyUsed?(keyId: string): Promise<unknown> | null
}

/**
 * The dashboard's way in (src/modules/dashboard): a request that names its mode in `X-Dashboard-Mode` is
 * authenticated by the browser session it carries instead of an API key. The dashboard's pages call the very
 * operations of this API, so no rule is written twice.
 */
export interface SessionAccess {
  /** The caller of a dashboard request to the operation named, or an AppError (401, 403). */
  authenticate(request: FastifyRequest, operationId: string | undefined): Promise<AuthContext>
}

/** The header a dashboard page sends, naming the mode (`test` or `live`) it works in. */
export const DASHBOARD_MODE_HEADER = 'x-dashboard-mode'

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null
    /** The request body exactly as received (signatures are over these bytes). */
    rawBody: Buffer | null
  }
  interface FastifyContextConfig {
    /** `key`: X-Api-Key or X-Signature; `signature`: X-Signature only (money-moving operations). */
    auth?: AuthRequirement
  }
}

/** Seconds a signed request's `t` may be away from the server's clock. */
export const SIGNATURE_TOLERANCE_SECONDS = 300

export interface ParsedSignature {
  keyId: string
  timestamp: number
  signatures: string[]
}

/** `key_id=<id>,t=<unix seconds>,v1=<hex>[,v1=<hex>…]` → its parts; null when malformed. */
export function parseSignatureHeader(header: string): ParsedSignature | null {
  let keyId: string | null = null
  let timestamp: number | null = null
  const signatures: string[] = []
  for (const part of header.split(',')) {
    const eq = part.indexOf('=')
    if (eq < 0) return null
    const name = part.slice(0, eq).trim()
    const value = part.slice(eq + 1).trim()
    // A key id the service could have issued, or the header is malformed (it never reaches the database).
    if (name === 'key_id' && /^mk_(test|live)_[A-Za-z0-9]{1,64}$/.test(value)) keyId = value
    else if (name === 'key_id') return null
    else if (name === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value)
    else if (name === 'v1' && /^[0-9a-fA-F]{64}$/.test(value)) signatures.push(value.toLowerCase())
    else if (name === 't' || name === 'v1') return null
  }
  if (!keyId || timestamp === null || signatures.length === 0 || signatures.length > 8) return null
  return { keyId, timestamp, signatures }
}

/** `<t>.<METHOD>.<path and query as sent>.<Idempotency-Key or empty>.<raw body>` (docs/API.md, Authentication). */
export function signingPayload(
  t: number,
  method: string,
  url: string,
  idempotencyKey: string,
  body: Buffer | string,
): Buffer {
  return Buffer.concat([
    Buffer.from(`${t}.${method.toUpperCase()}.${url}.${idempotencyKey}.`),
    Buffer.from(body),
  ])
}

export function sign(
  secret: string,
  t: number,
  method: string,
  url: string,
  idempotencyKey: string,
  body: Buffer | string,
): string {
  return hmacSha256Hex(secret, signingPayload(t, method, url, idempotencyKey, body))
}

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value

async function authenticate(
  merchants: KeyLookup,
  sessions: SessionAccess | undefined,
  request: FastifyRequest,
  requirement: AuthRequirement,
): Promise<AuthContext> {
  const signatureHeader = single(request.headers['x-signature'])
  const apiKey = single(request.headers['x-api-key'])

  // A dashboard page: its session stands for the key, and for the signature of an operation that moves
  // money (SessionAccess asks the page's Origin and the CSRF token of the session for every change).
  if (
    sessions &&
    signatureHeader === undefined &&
    apiKey === undefined &&
    request.headers[DASHBOARD_MODE_HEADER]
  )
    return sessions.authenticate(
      request,
      (request.routeOptions.schema as { operationId?: string })?.operationId,
    )

  if (signatureHeader === undefined) {
    if (requirement === 'signature') {
      throw new AppError(
        'signature_required',
        'This operation moves money: sign it with X-Signature (X-Api-Key alone is not accepted).',
      )
    }
    if (!apiKey)
      throw new AppError(
        'unauthorized',
        'Send your API key in X-Api-Key, or sign the request with X-Signature.',
      )
    const found = await merchants.byApiKey(apiKey)
    if (!found || found.revoked) throw new AppError('unauthorized', 'The API key is unknown or revoked.')
    return used(merchants, request, found.auth)
  }

  const parsed = parseSignatureHeader(signatureHeader)
  if (!parsed)
    throw new AppError(
      'signature_invalid',
      'X-Signature must read key_id=<key_id>,t=<unix seconds>,v1=<hex HMAC-SHA256>.',
    )
  const found = await merchants.byKeyId(parsed.keyId)
  if (!found || found.revoked) throw new AppError('unauthorized', 'The API key is unknown or revoked.')
  const now = Math.floor(Date.now() / 1000)
  if (Math.abs(now - parsed.timestamp) > SIGNATURE_TOLERANCE_SECONDS) {
    throw new AppError(
      'signature_expired',
      `The signature timestamp is more than ${SIGNATURE_TOLERANCE_SECONDS} s from the server's clock.`,
      {
        server_time: now,
      },
    )
  }
  const expected = sign(
    found.secret,
    parsed.timestamp,
    request.method,
    request.url,
    single(request.headers['idempotency-key']) ?? '',
    request.rawBody ?? Buffer.alloc(0),
  )
  // Every candidate is compared, in constant time, so timing does not tell which one nearly matched.
  let ok = false
  for (const candidate of parsed.signatures) ok = constantTimeEqual(candidate, expected) || ok
  if (!ok)
    throw new AppError(
      'signature_invalid',
      'The signature does not match the request. See docs/API.md for the string to sign.',
    )
  return used(merchants, request, found.auth)
}

/**
 * Notes the key's use (its `last_used_at`) without waiting for the write: a failed write is logged and never
 * fails the request.
 */
function used(merchants: KeyLookup, request: FastifyRequest, auth: AuthContext): AuthContext {
  try {
    merchants
      .keyUsed?.(auth.keyId)
      ?.catch((err: unknown) =>
        request.log.warn({ err, key_id: auth.keyId }, 'could not record the API key’s last use'),
      )
  } catch (err) {
    request.log.warn({ err, key_id: auth.keyId }, 'could not record the API key’s last use')
  }
  return auth
}

/**
 * Authenticates every route that asks for it, before its input is validated. Such a route can answer 401, and
 * 503 when the database that holds the keys cannot be reached.
 */
export function registerAuth(app: FastifyInstance, merchants: KeyLookup, sessions?: SessionAccess): void {
  app.decorateRequest('auth', null)
  app.addHook('onRoute', (route) => {
    if (route.config?.auth && route.config.auth !== 'none') declareErrorResponses(route.schema, 401, 503)
  })
  app.addHook('preValidation', async (request, reply) => {
    const requirement = request.routeOptions.config.auth ?? 'none'
    if (requirement === 'none') return
    request.auth = await authenticate(merchants, sessions, request, requirement)
    // Every later log line of the request says whose it is and which operation. Above `info` the only
    // lines a request can write are its errors, which add the same fields themselves (logContext), so the
    // child logger is not made for every request.
    if (infoEnabled(request.log)) {
      request.log = request.log.child(logContext(request))
      reply.log = request.log
    }
  })
}

/** Whether a logger writes `info` lines (Fastify's logger type does not expose pino's isLevelEnabled). */
export function infoEnabled(log: FastifyBaseLogger): boolean {
  return (levels.values[log.level] ?? 0) <= (levels.values.info ?? 30)
}

/** Whose request this is and which operation: the fields every log line of an authenticated request carries. */
export function logContext(request: FastifyRequest): Record<string, string> {
  if (!request.auth) return {}
  return {
    merchant_uuid: request.auth.merchant.uuid,
    mode: request.auth.mode,
    route: request.routeOptions.url ?? request.url,
  }
}

/** The caller of an authenticated route (routes that declare `auth` always have one). */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new AppError('unauthorized')
  return request.auth
}

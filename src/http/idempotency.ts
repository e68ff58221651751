import { createHmac } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { claimKey, findKey, releaseKey, storeAnswer, takeOverKey } from '../db/idempotency-keys.ts'
import type { Db } from '../db/index.ts'
import type { Scope } from '../db/scope.ts'
import type { Mode } from '../db/types.ts'
import { deriveKey } from '../lib/crypto.ts'
import { newId } from '../lib/ids.ts'
import { AppError, declareErrorResponses } from './errors.ts'

export type IdempotencyRequirement = 'optional' | 'required'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes an Idempotency-Key (docs/API.md, Idempotency); `required` refuses requests without one. */
    idempotency?: IdempotencyRequirement
    /** The body may be left out; it then validates as `{}`. */
    bodyOptional?: boolean
    /**
     * For operations that store their Idempotency-Key with the object they make, in the same database
     * transaction (refunds, payouts): the answer for the object this key made, if one was committed. A retry
     * of a key whose first request has not stored its answer (it is still running, or died after its commit)
     * gets this answer, replayed, rather than waiting for the lease.
     */
    committedAnswer?: (
      scope: { merchantUuid: string; mode: Mode },
      key: string,
    ) => Promise<CommittedAnswer | null>
  }
  interface FastifyRequest {
    idempotency: {
      key: string
      merchantUuid: string
      mode: Mode
      owner: string
      release: boolean
      /** The request failed as its write may have committed (`outcomeUnknown`): the key is kept, not released. */
      keep?: boolean
    } | null
  }
}

/** What a retry of a committed request answers: the object as it stands now. */
export interface CommittedAnswer {
  status: number
  headers: Record<string, string>
  body: unknown
}

const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/
/**
 * Refusals of the request's content, found by the service rather than the schema, are validation too: like a
 * schema refusal they do not keep the key, so the corrected request may use it.
 */
export const KEY_RELEASING_CODES: ReadonlySet<string> = new Set([
  'validation_failed',
  'unsupported_currency',
  'unsupported_payment_method',
])

/** Headers a replay must repeat besides the body. */
const REPLAYED_HEADERS = ['content-type', 'location']

/**
 * What a repeat must match: method, path and body. Keyed with a secret of the server (HMAC), so that the stored
 * fingerprint reveals nothing of the body: a payout body holds a card number, and a plain hash of it could be
 * searched through the few digits its masked form does not show.
 */
export const fingerprintKey = (masterKey: Buffer): Buffer => deriveKey(masterKey, 'idempotency-fingerprint')

export function fingerprint(request: FastifyRequest, key: Buffer): string {
  return createHmac('sha256', key)
    .update(`${request.method}\n${request.url}\n`)
    .update(request.rawBody ?? Buffer.alloc(0))
    .digest('hex')
}

/**
 * One mechanism for every POST that opts in. The first request that passes authentication and validation
 * owns the key (the hook runs after both) for `leaseMs`; its response is stored once sent, and replayed byte
 * for byte. A 5xx is not stored: the key is released and the request may be retried. Operations that move
 * money also store the key on the object they make, in the same database transaction as the money
 * (`committedAnswer`): a crash between that commit and the stored response is answered from the object.
 */
export function registerIdempotency(
  app: FastifyInstance,
  db: Db,
  fingerprintKey: Buffer,
  leaseMs = 60_000,
): void {
  app.decorateRequest('idempotency', null)

  // An operation that takes a key says so, and declares the answers about it: 400 for a missing (when
  // required) or malformed key, 409 while a request with it still runs, 422 for a key reused on another request.
  app.addHook('onRoute', (route) => {
    const requirement = route.config?.idempotency
    if (!requirement || !route.schema || route.schema.hide) return
    const headers = (route.schema.headers ?? Type.Object({})) as { properties?: Record<string, unknown> }
    if (!headers.properties?.['idempotency-key']) {
      route.schema.headers = Type.Object({
        ...(headers.properties as Record<string, never>),
        'idempotency-key': Type.Optional(
          Type.String({
            description:
              'Optional: makes retries safe. 1-255 printable ASCII characters; kept 7 days per merchant and mode. A repeat answers the first answer, with `Idempotent-Replayed: true`.',
            examples: ['9f1c2d3e-retry-1'],
          }),
        ),
      })
    }
    declareErrorResponses(route.schema, 400, 409, 422)
  })

  app.addHook('preHandler', async (request, reply) => {
    const requirement = request.routeOptions.config.idempotency
    if (!requirement || !request.auth) return
    const header = request.headers['idempotency-key']
    if (header === undefined) {
      if (requirement === 'required') {
        throw new AppError(
          'idempotency_key_required',
          'This operation needs an Idempotency-Key header (1-255 printable ASCII characters).',
        )
      }
      return
    }
    const key = Array.isArray(header) ? (header[0] ?? '') : header
    if (!KEY_PATTERN.test(key)) {
      throw new AppError(
        'idempotency_key_invalid',
        'Idempotency-Key must be 1-255 printable ASCII characters.',
      )
    }
    const scope = { merchantUuid: request.auth.merchant.uuid, mode: request.auth.mode }
    const print = fingerprint(request, fingerprintKey)
    const now = new Date()
    const owner = newId()

    // Claim the key, or take over one whose retention has run out.
    const claimed = await claimKey(db, scope, key, { fingerprint: print, owner, now, leaseMs })
    if (claimed) {
      request.idempotency = { key, ...scope, owner, release: false }
      return
    }

    const existing = await findKey(db, scope, key)
    if (!existing)
      throw new AppError('idempotency_request_in_progress', 'Retry the request.', null, null, {
        'retry-after': '1',
      })
    if (existing.fingerprint !== print) {
      throw new AppError(
        'idempotency_key_reused',
        'This Idempotency-Key was used with a different method, path or body. Use a fresh key for a new request.',
      )
    }
    if (existing.state === 'done' && existing.response_status !== null) {
      return replay(
        reply,
        existing.response_status,
        existing.response_headers ?? {},
        existing.response_body ?? '',
      )
    }
    // Still running, or its process died. When the object it makes was committed, that is the answer.
    const committed = await request.routeOptions.config.committedAnswer?.(scope, key)
    if (committed) {
      return replay(
        reply,
        committed.status,
        { 'content-type': 'application/json; charset=utf-8', ...committed.headers },
        JSON.stringify(committed.body),
      )
    }
    // Unless its lease ran out (its process died), in which case this request takes it over.
    const takenOver = await takeOverKey(db, scope, key, { owner, now, leaseMs })
    if (!takenOver) {
      throw new AppError(
        'idempotency_request_in_progress',
        'A request with this Idempotency-Key is still being processed. Retry shortly.',
        null,
        null,
        {
          'retry-after': '1',
        },
      )
    }
    request.idempotency = { key, ...scope, owner, release: false }
  })

  app.addHook('onSend', async (request, reply, payload) => {
    const owned = request.idempotency
    if (!owned) return payload
    request.idempotency = null
    // Only the current owner writes: a request whose lease was taken over must not overwrite its successor.
    // Whether the write committed is unknown: a retry must find it (committedAnswer) or wait out the lease, never
    // run it again.
    if (owned.keep) return payload
    if (reply.statusCode >= 500 || owned.release) {
      // A database that went away under the request (the likeliest 5xx, a 503) cannot be told at once: the
      // release is tried again until it is back (a failover takes seconds), so that the client's retry is not
      // kept waiting for the whole lease.
      await releaseKey(db, owned, owned.key, owned.owner).catch((error: unknown) => {
        request.log.warn({ err: error }, 'the Idempotency-Key could not be released; trying again')
        releaseLater(db, owned, leaseMs)
      })
      return payload
    }
    const headers: Record<string, string> = {}
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name)
      if (value !== undefined) headers[name] = String(value)
    }
    // The answer stands even if it cannot be kept (the database went away after the operation committed): a
    // retry then finds the committed object (committedAnswer) or takes the key over once its lease runs out.
    await storeAnswer(db, owned, owned.key, owned.owner, {
      status: reply.statusCode,
      headers,
      body: typeof payload === 'string' ? payload : String(payload ?? ''),
    }).catch((error: unknown) => {
      request.log.warn({ err: error }, 'the answer to an Idempotency-Key could not be kept')
    })
    return payload
  })
}

/** How often a release that failed is tried again, until the key's lease would have run out anyway. */
const RELEASE_RETRY_MS = 500

function releaseLater(db: Db, owned: { key: string; owner: string } & Scope, leaseMs: number): void {
  const until = Date.now() + leaseMs
  const attempt = () => {
    if (Date.now() > until) return
    releaseKey(db, owned, owned.key, owned.owner).catch(() => setTimeout(attempt, RELEASE_RETRY_MS).unref())
  }
  setTimeout(attempt, RELEASE_RETRY_MS).unref()
}

function replay(
  reply: FastifyReply,
  status: number,
  headers: Record<string, string>,
  body: string,
): FastifyReply {
  return reply
    .code(status)
    .headers(headers)
    .header('idempotent-replayed', 'true')
    .serializer((x: unknown) => x as string)
    .send(body)
}

import type { FastifyInstance } from 'fastify'
import sjson from 'secure-json-parse'
import { AppError, declareErrorResponses } from './errors.ts'

export const BODY_LIMIT = 64 * 1024

/** Refuses bytes that are not UTF-8 rather than reading them as U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true })
/** With the `u` flag a pair is one code point: only an unpaired surrogate matches. */
const LONE_SURROGATE = /\p{Cs}/u

/** Methods whose requests Fastify reads a body of. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * Whether a parsed JSON value holds a lone surrogate in any string, key or value, at any depth (walked with a
 * stack of its own: 64 KiB of `[` nest deeper than the call stack reaches).
 */
function hasLoneSurrogate(value: unknown): boolean {
  const pending = [value]
  while (pending.length) {
    const item = pending.pop()
    if (typeof item === 'string') {
      if (LONE_SURROGATE.test(item)) return true
    } else if (Array.isArray(item)) {
      for (const inner of item) pending.push(inner)
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, inner] of Object.entries(item)) {
        if (LONE_SURROGATE.test(key)) return true
        pending.push(inner)
      }
    }
  }
  return false
}

/**
 * JSON only, kept as raw bytes too: X-Signature is computed over the body exactly as sent. A body that is not
 * JSON, not UTF-8, or holds a lone surrogate is 400 `malformed_request`; another media type 415; more than
 * 64 KiB 413 (Fastify's `bodyLimit`). Every operation that reads a body declares those three.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.decorateRequest('rawBody', null)
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const raw = body as Buffer
    request.rawBody = raw
    // An operation that takes no body, or whose body is optional, accepts an empty one.
    if (raw.length === 0 && !request.routeOptions.schema?.body) return done(null, undefined)
    if (raw.length === 0 && request.routeOptions.config.bodyOptional) return done(null, {})
    if (raw.length === 0)
      return done(
        new AppError('malformed_request', 'The request body is empty: send a JSON object.'),
        undefined,
      )
    let text: string
    try {
      text = utf8.decode(raw)
    } catch {
      return done(new AppError('malformed_request', 'The request body is not valid UTF-8 JSON.'), undefined)
    }
    let parsed: unknown
    try {
      parsed = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
    } catch {
      return done(new AppError('malformed_request', 'The request body is not valid JSON.'), undefined)
    }
    // An escape such as "\ud800" with no pair decodes to a lone surrogate: no character, and no UTF-8 for it
    // (written to the database it would be stored as U+FFFD, not as what the client sent).
    if (hasLoneSurrogate(parsed))
      return done(new AppError('malformed_request', 'The request body is not valid UTF-8 JSON.'), undefined)
    done(null, parsed)
  })

  // An optional body that was not sent validates as an empty object.
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.routeOptions.config.bodyOptional) request.body = {}
  })

  app.addHook('onRoute', (route) => {
    if ([route.method].flat().some((method) => BODY_METHODS.has(method)))
      declareErrorResponses(route.schema, 400, 413, 415)
  })
}

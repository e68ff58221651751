import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { outcomeUnknown } from '../db/bounded.ts'
import { infoEnabled, logContext } from './auth.ts'
import {
  AppError,
  declareErrorResponses,
  errorEnvelope,
  registerErrorSchemas,
  renderError,
} from './errors.ts'
import { KEY_RELEASING_CODES } from './idempotency.ts'

/**
 * The router's own refusals (a bad %-escape, an over-long path segment) happen before any hook runs: they get
 * the same envelope and X-Request-Id as every other error. Fastify takes it as a server option.
 */
export function frameworkErrors(error: Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const rendered = renderError(error)
  return reply
    .code(rendered.status)
    .header('x-request-id', request.id)
    .send(errorEnvelope(rendered, request.id))
}

/**
 * Every error the service answers, in one place: the error schemas, the error handler (which hides the
 * internals of a 5xx and logs it), and the answers for a path no route has (404) or a method it lacks (405).
 */
export function registerErrorHandling(app: FastifyInstance): void {
  registerErrorSchemas(app)

  app.setErrorHandler((error: Error, request, reply) => {
    const rendered = renderError(error)
    if (request.idempotency && KEY_RELEASING_CODES.has(rendered.code)) request.idempotency.release = true
    if (request.idempotency && outcomeUnknown(error)) request.idempotency.keep = true
    if (rendered.status >= 500)
      request.log.error(
        // At `info` and below the request's child logger already carries these fields.
        infoEnabled(request.log) ? { err: error } : { err: error, ...logContext(request) },
        'request failed',
      )
    else request.log.info({ code: rendered.code, status: rendered.status }, 'request refused')
    return reply.code(rendered.status).headers(rendered.headers).send(errorEnvelope(rendered, request.id))
  })

  // 405 for a known path with another method, 404 otherwise.
  const routes: { pattern: RegExp; method: string }[] = []
  app.addHook('onRoute', (route) => {
    // Operations that take no query parameters refuse unknown ones too (422), like unknown body fields.
    if (route.config?.auth && route.method === 'GET' && route.schema && !route.schema.querystring) {
      route.schema.querystring = Type.Object({}, { additionalProperties: false })
      declareErrorResponses(route.schema, 422)
    }
    const pattern = new RegExp(`^${route.url.replace(/:[^/]+/g, '[^/]+')}/?$`)
    for (const method of [route.method].flat()) routes.push({ pattern, method })
  })
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? ''
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))]
    const error = allowed.length
      ? new AppError('method_not_allowed', `Use ${allowed.join(' or ')} on this path.`)
      : new AppError('not_found', 'No such operation.')
    if (allowed.length) reply.header('allow', allowed.join(', '))
    return reply.code(error.status).send(errorEnvelope(renderError(error), request.id))
  })
}

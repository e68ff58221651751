import type { FastifyInstance, FastifyRequest, FastifySchema, preHandlerAsyncHookHandler } from 'fastify'
import { errorResponses } from './errors.ts'

/**
 * What a route of the dashboard's own API (`/dashboard/api/…`) asks of its caller, declared in its config as a
 * route of the merchant API declares `auth` (auth.ts):
 * - `'sign-in'`: no session yet (signing in, accepting an invitation), but the request must come from a page
 *   of this service (its Origin);
 * - an object: a live session of a dashboard user, whose role allows `permission` when one is named. While
 *   the user's merchant requires a second factor the user has not set up, only a route that says
 *   `whileEnrolling` lets the session in.
 * A change (POST, PUT, PATCH, DELETE) in a session also needs the page's Origin and the CSRF token of the session.
 */
export type SessionRequirement = 'sign-in' | { permission?: string; whileEnrolling?: boolean }

/** The checks themselves (modules/dashboard/guard.ts): the sessions are the users module's. */
export interface SessionGuard {
  /** The permissions a requirement may name: a route that names another fails when it is registered. */
  permissions: readonly string[]
  /** Lets the request through, keeping its session on it, or throws the AppError (401, 403) that refuses it. */
  check(request: FastifyRequest, requirement: SessionRequirement): Promise<void>
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The dashboard sign-in the route needs (SessionRequirement). */
    session?: SessionRequirement
  }
}

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** Adds the guard's refusals to a route's documented responses, beside those the route declares itself. */
function declareRefusals(schema: FastifySchema | undefined, refusals: Record<number, string>): void {
  if (!schema?.response) return
  const responses = schema.response as Record<string, unknown>
  for (const [status, description] of Object.entries(refusals))
    if (!(status in responses))
      responses[status] = { ...(errorResponses(Number(status))[Number(status)] as object), description }
}

const NOT_FROM_A_PAGE = 'Not sent from a page of this service (its Origin).'

/**
 * Checks every route that declares a `session`, and declares in its schema what the check may answer and the
 * credentials it asks (the `Session` cookie, and the `CsrfToken` header on a change: the security schemes of
 * the dashboard's OpenAPI document, openapi.ts). The check runs once the request is validated, right before
 * the handler, so a malformed request is refused as such whoever sends it. Registered before the routes it
 * checks.
 */
export function registerSessionGuard(app: FastifyInstance, guard: SessionGuard): void {
  app.addHook('onRoute', (route) => {
    const requirement = route.config?.session
    if (!requirement) return
    // The route's own hook, so that no other route pays for it: it runs last before the handler.
    const check: preHandlerAsyncHookHandler = async (request) => guard.check(request, requirement)
    route.preHandler = [...[route.preHandler ?? []].flat(), check]
    if (requirement === 'sign-in') {
      // No credentials: the request opens (or prepares) a session.
      if (route.schema && !route.schema.security) route.schema.security = []
      declareRefusals(route.schema, { 403: NOT_FROM_A_PAGE })
      return
    }
    const { permission } = requirement
    if (permission !== undefined && !guard.permissions.includes(permission))
      throw new Error(`${route.method} ${route.url} asks for an unknown permission: ${permission}`)
    const change = [route.method].flat().some((method) => CHANGES.has(method))
    if (route.schema && !route.schema.security)
      route.schema.security = [change ? { Session: [], CsrfToken: [] } : { Session: [] }]
    declareRefusals(route.schema, {
      401: 'No live session: sign in to the dashboard.',
      403: "A change not sent from a page of this service or without the CSRF token of the session; an operation the user's role may not do; anything but enrolling before the second factor the merchant requires is set up.",
    })
  })
}

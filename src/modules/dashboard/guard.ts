import type { FastifyRequest } from 'fastify'
import { AppError } from '../../http/errors.ts'
import type { SessionGuard, SessionRequirement } from '../../http/session.ts'
import { constantTimeEqual } from '../../lib/crypto.ts'
import type { From } from '../users/deps.ts'
import type { Manager } from '../users/people.ts'
import { can, PERMISSIONS, type Permission } from '../users/roles.ts'
import type { UserService } from '../users/service.ts'
import type { DashboardSession } from '../users/sessions.ts'
import type { Self } from '../users/totp.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The dashboard sign-in the request runs under: a route of the dashboard's API, or a page's call of the merchant
     * API.
     */
    dashboardSession?: DashboardSession
  }
}

/** The session cookie's name; its value is the session token (only its sha256 is stored). */
export const SESSION_COOKIE = 'mg_session'

/** The session cookie's value in a Cookie header, or null. */
export function readSessionCookie(header: string | undefined): string | null {
  for (const part of header?.split(';') ?? []) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || null
  }
  return null
}

/**
 * Plain http is allowed for the cookie only on the local machine (the embedded default); anywhere else the
 * cookie is `Secure`, so a browser never sends it in clear.
 */
export function cookieIsSecure(publicBaseUrl: string): boolean {
  const url = new URL(publicBaseUrl)
  return !(url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname))
}

/** Where a request came from, as the audit log records it. */
export const fromOf = (request: FastifyRequest): From => ({
  ip: request.ip ?? null,
  userAgent: request.headers['user-agent']?.slice(0, 512) ?? null,
})

/** The signed-in user acting on their own account (their second factor, the merchant's security). */
export const selfOf = (session: DashboardSession, request: FastifyRequest): Self => ({
  userUuid: session.user.uuid,
  merchantUuid: session.user.merchant_uuid,
  email: session.user.email,
  from: fromOf(request),
})

/** The signed-in user acting on their merchant's people. */
export const managerOf = (session: DashboardSession, request: FastifyRequest): Manager => ({
  userUuid: session.user.uuid,
  merchantUuid: session.user.merchant_uuid,
  role: session.user.role,
  from: fromOf(request),
})

/** The session a route that declares `session` runs in (the guard let it through). */
export function sessionOf(request: FastifyRequest): DashboardSession {
  if (!request.dashboardSession)
    throw new AppError('unauthorized', 'Sign in to the dashboard: there is no live session.')
  return request.dashboardSession
}

/** Who may use the session for what, checked on the server whatever the page shows. */
export function requirePermission(session: DashboardSession, permission: Permission): void {
  if (!can(session.user.role, permission))
    throw new AppError('forbidden', `Your role (${session.user.role}) may not do this.`, {
      permission,
    })
}

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * The checks of every dashboard request: a change must come from a page of this service (its Origin is the
 * public base URL's origin); a session must be live (and, while its merchant requires a second factor it has
 * not set up, may only enrol); a change made in a session must also carry the CSRF token of the session.
 * SameSite=Lax alone would still let a top-level cross-site POST through older browsers, and a subdomain counts
 * as same-site.
 *
 * `guard` checks the routes that declare a `session` (http/session.ts); `requireSession` is the same check for
 * a page's call of the merchant API (access.ts).
 */
export function dashboardSessions(users: Pick<UserService, 'authenticate'>, publicBaseUrl: string) {
  const origin = new URL(publicBaseUrl).origin
  const requireSameOrigin = (request: FastifyRequest) => {
    if (request.headers.origin !== origin)
      throw new AppError(
        'forbidden',
        'This request did not come from the dashboard (its Origin is not ours).',
      )
  }
  /** The request's live session; for a change, from the dashboard's Origin and with the CSRF token of the session. */
  const requireSession = async (
    request: FastifyRequest,
    need: { whileEnrolling?: boolean } = {},
  ): Promise<DashboardSession> => {
    const change = CHANGES.has(request.method)
    if (change) requireSameOrigin(request)
    const token = readSessionCookie(request.headers.cookie)
    const session = token ? await users.authenticate(token) : null
    if (!session) throw new AppError('unauthorized', 'Sign in to the dashboard: there is no live session.')
    if (session.totpEnrolmentRequired && !need.whileEnrolling)
      throw new AppError(
        'forbidden',
        'Your merchant requires a second factor: set up an authenticator app (POST /dashboard/api/me/totp) before anything else.',
        { totp_enrolment_required: true },
      )
    if (change) {
      const sent = request.headers['x-csrf-token']
      if (typeof sent !== 'string' || !constantTimeEqual(sent, session.csrfToken))
        throw new AppError('forbidden', 'The X-CSRF-Token header is missing or does not match this session.')
    }
    return session
  }
  const guard: SessionGuard = {
    permissions: PERMISSIONS,
    async check(request: FastifyRequest, requirement: SessionRequirement) {
      if (requirement === 'sign-in') return requireSameOrigin(request)
      const session = await requireSession(request, requirement)
      // One of PERMISSIONS: registerSessionGuard refuses a route that names another.
      if (requirement.permission !== undefined)
        requirePermission(session, requirement.permission as Permission)
      request.dashboardSession = session
    },
  }
  return { guard, requireSession }
}

export type DashboardSessions = ReturnType<typeof dashboardSessions>

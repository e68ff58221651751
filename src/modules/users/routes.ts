import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../../http/errors.ts'
import { constantTimeEqual } from '../../lib/crypto.ts'
import { iso } from '../../lib/time.ts'
import type { From } from './deps.ts'
import { AcceptInvitationRequest, LoginRequest, SessionResponse } from './schemas.ts'
import type { UserService } from './service.ts'
import type { DashboardSession } from './sessions.ts'

/** The session cookie's name; its value is the session token (only its sha256 is stored). */
export const SESSION_COOKIE = 'mg_session'
const hide = { hide: true }
const PREFIX = '/dashboard/api'

export interface DashboardRouteOptions {
  users: UserService
  publicBaseUrl: string
  /** The cookie's Max-Age: the session's absolute limit. */
  sessionAbsoluteSeconds: number
}

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

const fromOf = (request: FastifyRequest): From => ({
  ip: request.ip ?? null,
  userAgent: request.headers['user-agent']?.slice(0, 512) ?? null,
})

const sessionView = (session: DashboardSession) => ({
  user: session.user,
  csrf_token: session.csrfToken,
  idle_expires_at: iso(session.idleExpiresAt),
  expires_at: iso(session.expiresAt),
})

/**
 * The dashboard's session API. Every change (POST, DELETE) must come from a page of this service: its Origin
 * header must be the public base URL's origin; a change made in a session must also carry the session's CSRF
 * token in `X-CSRF-Token`. SameSite=Lax alone would still let a top-level cross-site POST through older
 * browsers, and a subdomain counts as same-site.
 */
export const dashboardRoutes: FastifyPluginAsyncTypebox<DashboardRouteOptions> = async (app, options) => {
  const { users } = options
  const origin = new URL(options.publicBaseUrl).origin
  const cookieAttributes = [
    // The whole origin: the dashboard's pages call the merchant API at /integration with it (modules/dashboard).
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    ...(cookieIsSecure(options.publicBaseUrl) ? ['Secure'] : []),
  ].join('; ')

  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store')
  })

  const requireSameOrigin = (request: FastifyRequest) => {
    if (request.headers.origin !== origin)
      throw new AppError(
        'forbidden',
        'This request did not come from the dashboard (its Origin is not ours).',
      )
  }
  const requireSession = async (request: FastifyRequest): Promise<DashboardSession> => {
    const token = readSessionCookie(request.headers.cookie)
    const session = token ? await users.authenticate(token) : null
    if (!session) throw new AppError('unauthorized', 'Sign in to the dashboard: there is no live session.')
    return session
  }
  /** A change in a session: same origin, a live session, and that session's CSRF token. */
  const requireChange = async (request: FastifyRequest): Promise<DashboardSession> => {
    requireSameOrigin(request)
    const session = await requireSession(request)
    const sent = request.headers['x-csrf-token']
    if (typeof sent !== 'string' || !constantTimeEqual(sent, session.csrfToken))
      throw new AppError('forbidden', 'The X-CSRF-Token header is missing or does not match this session.')
    return session
  }
  const setCookie = (reply: FastifyReply, token: string) =>
    reply.header(
      'set-cookie',
      `${SESSION_COOKIE}=${token}; ${cookieAttributes}; Max-Age=${options.sessionAbsoluteSeconds}`,
    )
  const clearCookie = (reply: FastifyReply) =>
    reply.header('set-cookie', `${SESSION_COOKIE}=; ${cookieAttributes}; Max-Age=0`)

  app.post(
    `${PREFIX}/session`,
    { schema: { ...hide, body: LoginRequest, response: { 200: SessionResponse } } },
    async (request, reply) => {
      requireSameOrigin(request)
      const signedIn = await users.login(
        request.body,
        fromOf(request),
        readSessionCookie(request.headers.cookie),
      )
      setCookie(reply, signedIn.token)
      return sessionView(signedIn.session)
    },
  )

  app.get(`${PREFIX}/me`, { schema: { ...hide, response: { 200: SessionResponse } } }, async (request) =>
    sessionView(await requireSession(request)),
  )

  app.delete(`${PREFIX}/session`, { schema: hide }, async (request, reply) => {
    const session = await requireChange(request)
    await users.logout(session, fromOf(request))
    return clearCookie(reply).code(204).send()
  })

  app.delete(`${PREFIX}/sessions`, { schema: hide }, async (request, reply) => {
    const session = await requireChange(request)
    await users.logoutEverywhere(session, fromOf(request))
    return clearCookie(reply).code(204).send()
  })

  app.post(
    `${PREFIX}/invitations/accept`,
    { schema: { ...hide, body: AcceptInvitationRequest } },
    async (request, reply) => {
      requireSameOrigin(request)
      await users.acceptInvitation(request.body, fromOf(request))
      return reply.code(204).send()
    },
  )
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../../http/errors.ts'
import { registerValidators } from '../../http/validation.ts'
import { constantTimeEqual } from '../../lib/crypto.ts'
import { iso } from '../../lib/time.ts'
import { dashboardActor, type From } from './deps.ts'
import type { Manager } from './people.ts'
import { can, type Permission } from './roles.ts'
import {
  AcceptInvitationRequest,
  AuditPage,
  AuditQuery,
  DisableResponse,
  InviteRequest,
  InviteResponse,
  LoginRequest,
  MemberList,
  MemberParams,
  MemberView,
  RoleChangeRequest,
  SecuritySettings,
  SessionResponse,
  TotpCodeRequest,
  TotpEnrolment,
  TotpState,
} from './schemas.ts'
import type { UserService } from './service.ts'
import type { DashboardSession } from './sessions.ts'
import type { Self } from './totp.ts'

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

export const fromOf = (request: FastifyRequest): From => ({
  ip: request.ip ?? null,
  userAgent: request.headers['user-agent']?.slice(0, 512) ?? null,
})

const sessionView = (session: DashboardSession) => ({
  user: session.user,
  csrf_token: session.csrfToken,
  idle_expires_at: iso(session.idleExpiresAt),
  expires_at: iso(session.expiresAt),
  totp_enrolment_required: session.totpEnrolmentRequired,
})

const memberView = (user: {
  uuid: string
  email: string
  role: MemberView['role']
  status: MemberView['status']
  password_set: boolean
  totp_enabled: boolean
  created_at: Date
}): MemberView => ({
  uuid: user.uuid,
  email: user.email,
  role: user.role,
  status: user.status,
  password_set: user.password_set,
  totp_enabled: user.totp_enabled,
  created_at: iso(user.created_at),
})

/** Who may use the session for what, checked on the server whatever the page shows. */
export function requirePermission(session: DashboardSession, permission: Permission): void {
  if (!can(session.user.role, permission))
    throw new AppError('forbidden', `Your role (${session.user.role}) may not do this.`, {
      permission,
    })
}

const managerOf = (session: DashboardSession, request: FastifyRequest): Manager => ({
  userUuid: session.user.uuid,
  merchantUuid: session.user.merchant_uuid,
  role: session.user.role,
  from: fromOf(request),
})

export const selfOf = (session: DashboardSession, request: FastifyRequest): Self => ({
  userUuid: session.user.uuid,
  merchantUuid: session.user.merchant_uuid,
  email: session.user.email,
  from: fromOf(request),
})

/**
 * What a session may do while its merchant requires a second factor it has not set up: read itself, enrol,
 * and sign out. Everything else answers 403 until it has.
 */
export interface SessionNeed {
  /** This route is one of those an unenrolled session may use. */
  whileEnrolling?: boolean
}

/**
 * The checks of the dashboard's own endpoints: a change must come from a page of this service (its Origin is
 * the public base URL's origin); a session must be live (and, while its merchant requires a second factor it has
 * not set up, may only enrol); a change made in a session must also carry the session's CSRF token.
 */
export function sessionGuards(users: Pick<UserService, 'authenticate'>, publicBaseUrl: string) {
  const origin = new URL(publicBaseUrl).origin
  const requireSameOrigin = (request: FastifyRequest) => {
    if (request.headers.origin !== origin)
      throw new AppError(
        'forbidden',
        'This request did not come from the dashboard (its Origin is not ours).',
      )
  }
  const requireSession = async (
    request: FastifyRequest,
    need: SessionNeed = {},
  ): Promise<DashboardSession> => {
    const token = readSessionCookie(request.headers.cookie)
    const session = token ? await users.authenticate(token) : null
    if (!session) throw new AppError('unauthorized', 'Sign in to the dashboard: there is no live session.')
    if (session.totpEnrolmentRequired && !need.whileEnrolling)
      throw new AppError(
        'forbidden',
        'Your merchant requires a second factor: set up an authenticator app (POST /dashboard/api/me/totp) before anything else.',
        { totp_enrolment_required: true },
      )
    return session
  }
  /** A change in a session: same origin, a live session, and that session's CSRF token. */
  const requireChange = async (
    request: FastifyRequest,
    need: SessionNeed = {},
  ): Promise<DashboardSession> => {
    requireSameOrigin(request)
    const session = await requireSession(request, need)
    const sent = request.headers['x-csrf-token']
    if (typeof sent !== 'string' || !constantTimeEqual(sent, session.csrfToken))
      throw new AppError('forbidden', 'The X-CSRF-Token header is missing or does not match this session.')
    return session
  }
  return { requireSameOrigin, requireSession, requireChange }
}

/**
 * The dashboard's session API. Every change (POST, DELETE) must come from a page of this service: its Origin
 * header must be the public base URL's origin; a change made in a session must also carry the session's CSRF
 * token in `X-CSRF-Token`. SameSite=Lax alone would still let a top-level cross-site POST through older
 * browsers, and a subdomain counts as same-site.
 */
export const dashboardRoutes: FastifyPluginAsyncTypebox<DashboardRouteOptions> = async (app, options) => {
  const { users } = options
  // The app's strict validators again, in this plugin's own context: without this, a plugin registered before
  // the modules that add shared schemas to the app compiles its bodies with Fastify's default Ajv, which drops
  // unknown fields instead of refusing them.
  registerValidators(app)
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

  const { requireSameOrigin, requireSession, requireChange } = sessionGuards(users, options.publicBaseUrl)

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

  const enrolling: SessionNeed = { whileEnrolling: true }

  app.get(`${PREFIX}/me`, { schema: { ...hide, response: { 200: SessionResponse } } }, async (request) =>
    sessionView(await requireSession(request, enrolling)),
  )

  app.delete(`${PREFIX}/session`, { schema: hide }, async (request, reply) => {
    const session = await requireChange(request, enrolling)
    await users.logout(session, fromOf(request))
    return clearCookie(reply).code(204).send()
  })

  app.delete(`${PREFIX}/sessions`, { schema: hide }, async (request, reply) => {
    const session = await requireChange(request, enrolling)
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

  // People: owner and admin (manage_users); what only an owner may do is the service's rule (mayManageRole).

  app.get(`${PREFIX}/users`, { schema: { ...hide, response: { 200: MemberList } } }, async (request) => {
    const session = await requireSession(request)
    requirePermission(session, 'manage_users')
    return { data: (await users.list(session.user.merchant_uuid)).map(memberView) }
  })

  app.post(
    `${PREFIX}/users/invitations`,
    { schema: { ...hide, body: InviteRequest, response: { 201: InviteResponse } } },
    async (request, reply) => {
      const session = await requireChange(request)
      requirePermission(session, 'manage_users')
      const invitation = await users.invite(
        { merchantUuid: session.user.merchant_uuid, email: request.body.email, role: request.body.role },
        dashboardActor(session.user.uuid, fromOf(request)),
        session.user.role,
      )
      return reply.code(201).send({
        user: memberView({ ...invitation.user, password_set: false }),
        invite_url: invitation.link,
        expires_at: iso(invitation.expiresAt),
      })
    },
  )

  app.patch(
    `${PREFIX}/users/:uuid`,
    { schema: { ...hide, params: MemberParams, body: RoleChangeRequest, response: { 200: MemberView } } },
    async (request) => {
      const session = await requireChange(request)
      requirePermission(session, 'manage_users')
      return memberView(
        await users.changeRole(managerOf(session, request), request.params.uuid, request.body.role),
      )
    },
  )

  app.post(
    `${PREFIX}/users/:uuid/disable`,
    { schema: { ...hide, params: MemberParams, response: { 200: DisableResponse } } },
    async (request) => {
      const session = await requireChange(request)
      requirePermission(session, 'manage_users')
      const { user, sessionsRevoked } = await users.disableMember(
        managerOf(session, request),
        request.params.uuid,
      )
      return { user: memberView(user), sessions_revoked: sessionsRevoked }
    },
  )

  app.get(
    `${PREFIX}/audit-log`,
    { schema: { ...hide, querystring: AuditQuery, response: { 200: AuditPage } } },
    async (request) => {
      const session = await requireSession(request)
      requirePermission(session, 'read_audit_log')
      const page = await users.auditLog(session.user.merchant_uuid, {
        cursor: request.query.cursor,
        perPage: request.query.per_page,
      })
      return {
        data: page.data.map(({ created_at, ...row }) => ({ ...row, at: iso(created_at) })),
        next_cursor: page.nextCursor,
      }
    },
  )

  // The second factor: each user's own, and the merchant's requirement (owner only: manage_security).

  app.post(
    `${PREFIX}/me/totp`,
    { schema: { ...hide, response: { 200: TotpEnrolment } } },
    async (request) => {
      const session = await requireChange(request, enrolling)
      const started = await users.startTotp(selfOf(session, request))
      return { secret: started.secret, otpauth_uri: started.uri }
    },
  )

  app.post(
    `${PREFIX}/me/totp/confirm`,
    { schema: { ...hide, body: TotpCodeRequest, response: { 200: TotpState } } },
    async (request) => {
      const session = await requireChange(request, enrolling)
      await users.confirmTotp(selfOf(session, request), request.body.code)
      return { totp_enabled: true }
    },
  )

  app.delete(
    `${PREFIX}/me/totp`,
    { schema: { ...hide, body: TotpCodeRequest, response: { 200: TotpState } } },
    async (request) => {
      const session = await requireChange(request)
      await users.removeTotp(selfOf(session, request), request.body.code)
      return { totp_enabled: false }
    },
  )

  app.get(
    `${PREFIX}/merchant/security`,
    { schema: { ...hide, response: { 200: SecuritySettings } } },
    async (request) => {
      const session = await requireSession(request)
      return { require_totp: (await users.security(session.user.merchant_uuid)).requireTotp }
    },
  )

  app.put(
    `${PREFIX}/merchant/security`,
    { schema: { ...hide, body: SecuritySettings, response: { 200: SecuritySettings } } },
    async (request) => {
      const session = await requireChange(request)
      requirePermission(session, 'manage_security')
      const set = await users.setRequireTotp(selfOf(session, request), request.body.require_totp)
      return { require_totp: set.requireTotp }
    },
  )
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { type Static, Type } from 'typebox'
import type { Mode } from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import { authOf } from '../../http/auth.ts'
import { jsonOrCsv, sendCsv, wantsCsv } from '../../http/csv.ts'
import { AppError, errorResponses } from '../../http/errors.ts'
import { exportQuery } from '../../http/pagination.ts'
import { answers } from '../../http/routes.ts'
import { Ref, UuidParams } from '../../http/schemas.ts'
import type { SessionRequirement } from '../../http/session.ts'
import { registerValidators } from '../../http/validation.ts'
import { mapBatches } from '../../lib/lists.ts'
import { iso } from '../../lib/time.ts'
import { keyName, type ListedKey, type MerchantService } from '../merchants/service.ts'
import { PAYMENT_METHODS } from '../transactions/schemas.ts'
import type { TransactionService } from '../transactions/service.ts'
import { dashboardActor } from '../users/deps.ts'
import type { UserService } from '../users/service.ts'
import type { DashboardSession } from '../users/sessions.ts'
import type { Self } from '../users/totp.ts'
import type { WebhookService } from '../webhooks/service.ts'
import { AUDIT_CSV_COLUMNS, auditEntryView, auditFilters } from './audit-view.ts'
import {
  cookieIsSecure,
  fromOf,
  managerOf,
  readSessionCookie,
  SESSION_COOKIE,
  selfOf,
  sessionOf,
} from './guard.ts'
import {
  AcceptInvitationRequest,
  ApiKeyList,
  ApiKeyView,
  AuditEntryView,
  AuditPage,
  AuditQuery,
  CreatedKey,
  CreateKeyRequest,
  DailyPayments,
  DeliveryAttempts,
  DisableResponse,
  InviteRequest,
  InviteResponse,
  KeyParams,
  LoginRequest,
  MemberList,
  MemberParams,
  MemberView,
  MerchantProfile,
  PaymentStats,
  RenameKeyRequest,
  RevokedKey,
  RoleChangeRequest,
  SearchQuery,
  SearchResult,
  SearchResults,
  SecuritySettings,
  SessionResponse,
  StatsQuery,
  TotpCodeRequest,
  TotpEnrolment,
  TotpState,
  WebhookSecret,
} from './schemas.ts'
import { type SearchDeps, searchDashboard } from './search.ts'

const PREFIX = '/dashboard/api'

export interface DashboardRouteOptions {
  users: UserService
  merchants: Pick<MerchantService, 'listKeys' | 'createKey' | 'revokeMerchantKey' | 'renameMerchantKey'>
  publicBaseUrl: string
  /** The cookie's Max-Age: the absolute limit of a session. */
  sessionAbsoluteSeconds: number
}

/** An API key as the dashboard shows it: never its secret. */
const keyView = (key: ListedKey): ApiKeyView => ({
  key_id: key.key_id,
  name: key.name ?? null,
  mode: key.mode,
  created_at: iso(key.created_at),
  revoked_at: key.revoked_at ? iso(key.revoked_at) : null,
  last_used_at: key.last_used_at ? iso(key.last_used_at) : null,
  secret_last4: key.secret_last4,
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

/**
 * The options of a route of one section of the dashboard's API: the session it needs (`session`, checked by
 * http/session.ts with guard.ts), and the rest its entry in the document, under the section's tag.
 */
const sectionRoute =
  (tag: string) =>
  <S extends { session: SessionRequirement }>({ session, ...schema }: S) => ({
    config: { session },
    schema: { ...schema, tags: [tag] },
  })

/** The options of a route of a section whose every route needs the one session `session`. */
const sectionOf =
  (tag: string, session: SessionRequirement) =>
  <S extends object>(schema: S) =>
    sectionRoute(tag)({ session, ...schema })

const signInRoute = sectionRoute('Sign-in')
const peopleRoute = sectionOf('People', { permission: 'manage_users' })
const auditRoute = sectionOf('Audit log', { permission: 'read_audit_log' })
const securityRoute = sectionRoute('Security')
const keysRoute = sectionOf('API keys', { permission: 'developer_tools' })

/** A 204: no body (`type: null` is how the OpenAPI document says so). */
const noContent = (description: string) => Type.Unsafe<undefined>({ type: 'null', description })

/**
 * The dashboard's own API: its sessions, the second factor, people, the audit log, the merchant's sign-in
 * security and its API keys. Each route declares the session it needs in its config (`session`, checked by
 * http/session.ts with guard.ts): every change must come from a page of this service and, in a session, carry
 * the CSRF token of the session in `X-CSRF-Token`.
 */
export const dashboardRoutes: FastifyPluginAsyncTypebox<DashboardRouteOptions> = async (app, options) => {
  const { users, merchants } = options
  // The app's strict validators again, in this plugin's own context: without this, a plugin registered before
  // the modules that add shared schemas to the app compiles its bodies with Fastify's default Ajv, which drops
  // unknown fields instead of refusing them.
  registerValidators(app)
  for (const schema of [
    SessionResponse,
    MemberView,
    MemberList,
    InviteResponse,
    DisableResponse,
    AuditEntryView,
    AuditPage,
    TotpEnrolment,
    TotpState,
    SecuritySettings,
    ApiKeyView,
    ApiKeyList,
    CreatedKey,
    RevokedKey,
  ])
    app.addSchema(schema)
  const cookieAttributes = [
    // The whole origin: the dashboard's pages call the merchant API at /integration with it (access.ts).
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    ...(cookieIsSecure(options.publicBaseUrl) ? ['Secure'] : []),
  ].join('; ')

  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store')
  })

  const setCookie = (reply: FastifyReply, token: string) =>
    reply.header(
      'set-cookie',
      `${SESSION_COOKIE}=${token}; ${cookieAttributes}; Max-Age=${options.sessionAbsoluteSeconds}`,
    )
  const clearCookie = (reply: FastifyReply) =>
    reply.header('set-cookie', `${SESSION_COOKIE}=; ${cookieAttributes}; Max-Age=0`)

  /** Ends the session with `users[end]` (this one, or every one of its user) and clears its cookie: 204. */
  const signOut =
    (end: 'logout' | 'logoutEverywhere') => async (request: FastifyRequest, reply: FastifyReply) => {
      await users[end](sessionOf(request), fromOf(request))
      return clearCookie(reply).code(204).send()
    }

  // Signing in and out.

  app.post(
    `${PREFIX}/session`,
    signInRoute({
      session: 'sign-in',
      operationId: 'signIn',
      summary: 'Sign in',
      description:
        'Opens a session: its token goes in the `mg_session` cookie (HttpOnly), its CSRF token in the answer. A user with a second factor also sends the current code of their authenticator app.',
      body: LoginRequest,
      response: answers(200, SessionResponse, 'Signed in: the session cookie is set.', 401, 422, 429),
    }),
    async (request, reply) => {
      const signedIn = await users.login(
        request.body,
        fromOf(request),
        readSessionCookie(request.headers.cookie),
      )
      setCookie(reply, signedIn.token)
      return sessionView(signedIn.session)
    },
  )

  app.get(
    `${PREFIX}/me`,
    signInRoute({
      session: { whileEnrolling: true },
      operationId: 'getSession',
      summary: 'Who is signed in',
      description: 'The signed-in user, what their role may do, and the CSRF token of the session.',
      response: { 200: Ref(SessionResponse, { description: 'The live session.' }) },
    }),
    async (request) => sessionView(sessionOf(request)),
  )

  // Signing out: this session, or every session of its user.
  for (const { path, operationId, summary, ended, end } of [
    {
      path: 'session',
      operationId: 'signOut',
      summary: 'Sign out',
      ended: 'Signed out: the session has ended and its cookie is cleared.',
      end: 'logout',
    },
    {
      path: 'sessions',
      operationId: 'signOutEverywhere',
      summary: 'Sign out on every device',
      ended: "Every session of the user has ended; this one's cookie is cleared.",
      end: 'logoutEverywhere',
    },
  ] as const)
    app.delete(
      `${PREFIX}/${path}`,
      signInRoute({
        session: { whileEnrolling: true },
        operationId,
        summary,
        response: { 204: noContent(ended) },
      }),
      signOut(end),
    )

  app.post(
    `${PREFIX}/invitations/accept`,
    signInRoute({
      session: 'sign-in',
      operationId: 'acceptInvitation',
      summary: 'Accept an invitation',
      description: "Sets the invited user's password with the token of their invitation link: once.",
      body: AcceptInvitationRequest,
      response: {
        204: noContent('The password is set: the user can sign in.'),
        ...errorResponses(404, 409, 422),
      },
    }),
    async (request, reply) => {
      await users.acceptInvitation(request.body, fromOf(request))
      return reply.code(204).send()
    },
  )

  // People: owner and admin (manage_users); what only an owner may do is the service's rule (mayManageRole).

  app.get(
    `${PREFIX}/users`,
    peopleRoute({
      operationId: 'listUsers',
      summary: "List the merchant's people",
      response: { 200: Ref(MemberList, { description: 'Every person of the merchant.' }) },
    }),
    async (request) => {
      const session = sessionOf(request)
      return { data: (await users.list(session.user.merchant_uuid)).map(memberView) }
    },
  )

  app.post(
    `${PREFIX}/users/invitations`,
    peopleRoute({
      operationId: 'inviteUser',
      summary: 'Invite someone',
      description:
        'Makes the user (or renews the invitation of one who has not accepted yet) and answers the one-time link that lets them set a password.',
      body: InviteRequest,
      response: answers(201, InviteResponse, 'Invited: the link is in this answer only.', 404, 409, 422),
    }),
    async (request, reply) => {
      const session = sessionOf(request)
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
    peopleRoute({
      operationId: 'changeUserRole',
      summary: "Change a person's role",
      params: MemberParams,
      body: RoleChangeRequest,
      response: answers(200, MemberView, 'The person with their new role.', 404, 409, 422),
    }),
    async (request) => {
      const manager = managerOf(sessionOf(request), request)
      return memberView(await users.changeRole(manager, request.params.uuid, request.body.role))
    },
  )

  app.post(
    `${PREFIX}/users/:uuid/disable`,
    peopleRoute({
      operationId: 'disableUser',
      summary: 'Disable a person',
      description: 'They cannot sign in any more, and their sessions end now.',
      params: MemberParams,
      response: answers(200, DisableResponse, 'The person, disabled, and how many sessions ended.', 404, 409),
    }),
    async (request) => {
      const manager = managerOf(sessionOf(request), request)
      const { user, sessionsRevoked } = await users.disableMember(manager, request.params.uuid)
      return { user: memberView(user), sessions_revoked: sessionsRevoked }
    },
  )

  app.get(
    `${PREFIX}/audit-log`,
    auditRoute({
      operationId: 'listAuditLog',
      summary: 'Read the audit log',
      description: 'What was done in the dashboard and by the operator, newest first, a page at a time.',
      querystring: AuditQuery,
      response: {
        200: jsonOrCsv(
          AuditPage,
          'A page of the audit log.',
          AUDIT_CSV_COLUMNS.map((column) => column.header),
        ),
        ...errorResponses(422),
      },
    }),
    async (request, reply) => {
      const merchantUuid = sessionOf(request).user.merchant_uuid
      if (wantsCsv(request)) {
        const filters = auditFilters(exportQuery(request.query))
        return sendCsv(
          reply,
          'audit-log',
          AUDIT_CSV_COLUMNS,
          mapBatches(users.auditExport(merchantUuid, filters), auditEntryView),
        )
      }
      const page = await users.auditLog(merchantUuid, {
        cursor: request.query.cursor,
        perPage: request.query.per_page,
        filters: auditFilters(request.query),
      })
      return { data: page.data.map(auditEntryView), next_cursor: page.nextCursor }
    },
  )

  /** Turns the user's own second factor on or off (`users[turn]`) with a current code: whether it is on. */
  const turnTotp =
    (turn: 'confirmTotp' | 'removeTotp', on: boolean) =>
    async (request: FastifyRequest<{ Body: Static<typeof TotpCodeRequest> }>) => {
      await users[turn](selfOf(sessionOf(request), request), request.body.code)
      return { totp_enabled: on }
    }

  // The second factor: each user's own, and the merchant's requirement (owner only: manage_security).

  app.post(
    `${PREFIX}/me/totp`,
    securityRoute({
      session: { whileEnrolling: true },
      operationId: 'startTotpEnrolment',
      summary: 'Set up an authenticator app',
      description: 'A new secret for the app; the second factor is on once a code of it is confirmed.',
      response: answers(200, TotpEnrolment, 'The secret to add to the app.', 409),
    }),
    async (request) => {
      const started = await users.startTotp(selfOf(sessionOf(request), request))
      return { secret: started.secret, otpauth_uri: started.uri }
    },
  )

  app.post(
    `${PREFIX}/me/totp/confirm`,
    securityRoute({
      session: { whileEnrolling: true },
      operationId: 'confirmTotp',
      summary: 'Turn the second factor on',
      description: 'With a current code of the app being set up.',
      body: TotpCodeRequest,
      response: answers(200, TotpState, 'The second factor is on.', 409, 422, 429),
    }),
    turnTotp('confirmTotp', true),
  )

  app.delete(
    `${PREFIX}/me/totp`,
    securityRoute({
      session: {},
      operationId: 'removeTotp',
      summary: 'Turn the second factor off',
      description: "With a current code; refused while the user's merchant requires a second factor.",
      body: TotpCodeRequest,
      response: answers(200, TotpState, 'The second factor is off.', 409, 422, 429),
    }),
    turnTotp('removeTotp', false),
  )

  app.get(
    `${PREFIX}/merchant/security`,
    securityRoute({
      session: {},
      operationId: 'getMerchantSecurity',
      summary: "The merchant's sign-in security",
      response: { 200: Ref(SecuritySettings, { description: 'Whether a second factor is required.' }) },
    }),
    async (request) => ({
      require_totp: (await users.security(sessionOf(request).user.merchant_uuid)).requireTotp,
    }),
  )

  app.put(
    `${PREFIX}/merchant/security`,
    securityRoute({
      session: { permission: 'manage_security' },
      operationId: 'setMerchantSecurity',
      summary: 'Require a second factor, or stop requiring it',
      description: 'Of every dashboard user of the merchant; the owner must have one on themselves first.',
      body: SecuritySettings,
      response: answers(200, SecuritySettings, 'The requirement now.', 409, 422),
    }),
    async (request) => {
      const set = await users.setRequireTotp(selfOf(sessionOf(request), request), request.body.require_totp)
      return { require_totp: set.requireTotp }
    },
  )

  // Developers → API keys (`developer_tools`: owner, admin, developer): the merchant's keys of both modes, a
  // new key (its secret answered once and never again), and revoking one. Never a secret of an existing key,
  // its hash or its seal. Making and revoking are written to the audit log in the same transaction.

  /** What `self` did to an API key, for the audit log in the key's own transaction; `at` names when. */
  const auditKey =
    <At extends 'created_at' | 'revoked_at'>(
      self: Self,
      action: 'api_key_created' | 'api_key_revoked',
      at: At,
    ) =>
    (trx: Executor, key: { key_id: string; mode: Mode } & Record<At, Date>) =>
      users.audit(
        self,
        { action, target: { type: 'api_key', id: key.key_id }, mode: key.mode, at: key[at] },
        trx,
      )

  app.get(
    `${PREFIX}/keys`,
    keysRoute({
      operationId: 'listApiKeys',
      summary: "List the merchant's API keys",
      response: { 200: Ref(ApiKeyList, { description: 'Every key of both modes, revoked ones too.' }) },
    }),
    async (request) => {
      const keys = await merchants.listKeys(sessionOf(request).user.merchant_uuid)
      return { data: keys.map(keyView) }
    },
  )

  app.post(
    `${PREFIX}/keys`,
    keysRoute({
      operationId: 'createApiKey',
      summary: 'Make an API key',
      body: CreateKeyRequest,
      response: answers(201, CreatedKey, 'The new key, with its secret: shown in this answer only.', 422),
    }),
    async (request, reply) => {
      const self = selfOf(sessionOf(request), request)
      const mode = request.body.mode as 'test' | 'live'
      const key = await merchants.createKey(self.merchantUuid, mode, {
        name: request.body.name === undefined ? null : (keyName(request.body.name) ?? null),
        also: auditKey(self, 'api_key_created', 'created_at'),
      })
      if (!key) throw new AppError('unauthorized', 'Sign in to the dashboard: there is no live session.')
      return reply.code(201).send({
        key_id: key.key_id,
        name: key.name,
        mode: key.mode,
        secret: key.secret,
        created_at: iso(key.created_at),
      })
    },
  )

  app.patch(
    `${PREFIX}/keys/:key_id`,
    keysRoute({
      operationId: 'renameApiKey',
      summary: 'Name an API key',
      description: 'Gives a key of either mode, revoked or not, a new name, or takes its name away (null).',
      params: KeyParams,
      body: RenameKeyRequest,
      response: answers(200, ApiKeyView, 'The key with its new name.', 404, 422),
    }),
    async (request) => {
      const self = selfOf(sessionOf(request), request)
      const renamed = await merchants.renameMerchantKey(
        self.merchantUuid,
        request.params.key_id,
        request.body.name === null ? null : (keyName(request.body.name) ?? null),
        (trx, key) =>
          users.audit(
            self,
            {
              action: 'api_key_renamed',
              target: { type: 'api_key', id: key.key_id },
              mode: key.mode,
              details: { name: key.name ?? null },
              at: new Date(),
            },
            trx,
          ),
      )
      if (renamed === 'not_found') throw new AppError('not_found', 'No such API key.')
      return keyView(renamed)
    },
  )

  app.delete(
    `${PREFIX}/keys/:key_id`,
    keysRoute({
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key',
      description: 'It stops working at once, everywhere.',
      params: KeyParams,
      response: answers(200, RevokedKey, 'The key, revoked.', 404, 409),
    }),
    async (request, reply) => {
      const self = selfOf(sessionOf(request), request)
      const revoked = await merchants.revokeMerchantKey(
        self.merchantUuid,
        request.params.key_id,
        auditKey(self, 'api_key_revoked', 'revoked_at'),
      )
      if (revoked === 'not_found') throw new AppError('not_found', 'No such API key.')
      if (revoked === 'already_revoked')
        throw new AppError('invalid_state', 'This API key is revoked already.')
      return reply.code(200).send({
        key_id: revoked.key_id,
        mode: revoked.mode,
        revoked_at: iso(revoked.revoked_at),
      })
    },
  )
}

export interface DashboardViewOptions extends SearchDeps {
  transactions: Pick<TransactionService, 'daily' | 'search'>
  webhooks: Pick<WebhookService, 'attempts' | 'getConfig' | 'findEventBrief'>
  merchants: Pick<MerchantService, 'fee'>
  users: Pick<UserService, 'audit'>
}

/** A dashboard page's call (a session with X-Dashboard-Mode), else 404: these are not API operations. */
function sessionCall(request: FastifyRequest) {
  if (!request.dashboardSession) throw new AppError('not_found', 'This is a dashboard page’s call.')
  return authOf(request)
}

/** What the views ask besides the session cookie: the mode the page works in. */
const inMode = [{ Session: [], DashboardMode: [] }]

/**
 * The options of a view of one page of the dashboard: called with a key's authentication in a mode (see
 * dashboardViews), under the page's tag in the document.
 */
const pageView =
  (tag: string) =>
  <S extends object>(schema: S) => ({
    config: { auth: 'key' as const },
    schema: { ...schema, tags: [tag], security: inMode },
  })

const homeView = pageView('Home')
const webhooksView = pageView('Webhooks')
const merchantView = pageView('Merchant')
const searchView = pageView('Search')

/**
 * The merchant's own figures the pages show and the merchant API does not answer: the home page's chart, the
 * profile, a delivery's attempts. A page calls them as it calls the merchant API, in a mode (`auth: 'key'` and
 * `X-Dashboard-Mode`: access.ts, whose DASHBOARD_OPERATIONS names the permission each needs), so they are
 * registered with the merchant API's modules, after its authentication and rate limits.
 */
export const dashboardViews: FastifyPluginAsyncTypebox<DashboardViewOptions> = async (app, options) => {
  const { transactions, webhooks, merchants, users } = options
  // The app's strict validators in this plugin's context too, as dashboardRoutes does: an unknown query
  // parameter is refused, not dropped.
  registerValidators(app)
  for (const schema of [
    DailyPayments,
    PaymentStats,
    MerchantProfile,
    DeliveryAttempts,
    WebhookSecret,
    SearchResult,
    SearchResults,
  ])
    app.addSchema(schema)

  app.get(
    `${PREFIX}/stats`,
    homeView({
      operationId: 'dashboardStats',
      summary: 'Payments per day',
      description:
        "The mode's payments per UTC day and currency over the last 7 or 30 days (today included), for the home page's chart.",
      querystring: StatsQuery,
      response: answers(200, PaymentStats, 'The days that had payments, oldest first.', 401, 403, 404, 422),
    }),
    async (request) => {
      const auth = sessionCall(request)
      const since = new Date()
      since.setUTCHours(0, 0, 0, 0)
      since.setUTCDate(since.getUTCDate() - (request.query.days - 1))
      return { data: await transactions.daily(auth, since) }
    },
  )

  app.get(
    `${PREFIX}/search`,
    searchView({
      operationId: 'dashboardSearch',
      summary: 'Find a payment, refund, payout or event',
      description:
        "By any of its ids (ours, the merchant's external id, a provider's reference or a chain transaction's hash), its amount as a decimal in its own currency (`1500.00`), an e-mail among a payment's metadata, or the last four digits of a payout's card; in the mode of the page, the signed-in user's merchant only.",
      querystring: SearchQuery,
      response: answers(
        200,
        SearchResults,
        'What matched: ids first, then newest first.',
        401,
        403,
        404,
        422,
      ),
    }),
    async (request) => searchDashboard(options, sessionCall(request), request.query.q, request.query.limit),
  )

  app.get(
    `${PREFIX}/webhook/deliveries/:uuid/attempts`,
    webhooksView({
      operationId: 'dashboardDeliveryAttempts',
      summary: "A delivery's attempts",
      description:
        'The request a webhook delivery sends, and the answer to each attempt, for the webhooks page.',
      params: UuidParams,
      response: answers(
        200,
        DeliveryAttempts,
        'The delivery, its request and its attempts.',
        401,
        403,
        404,
        422,
      ),
    }),
    async (request) => webhooks.attempts(sessionCall(request), request.params.uuid),
  )

  app.post(
    `${PREFIX}/webhook/secret/reveal`,
    webhooksView({
      operationId: 'revealWebhookSecret',
      summary: "Show the webhook's signing secret",
      description:
        "The mode's current signing secret, which the configuration's answers to a page leave masked. A user with a second factor, or of a merchant that requires one, sends a current code in `X-Dashboard-Totp`. Every showing is written to the audit log (`webhook_secret_revealed`), never the secret.",
      response: answers(200, WebhookSecret, 'The signing secret.', 401, 403, 404, 422, 429),
    }),
    async (request) => {
      const auth = sessionCall(request)
      const session = sessionOf(request)
      const config = await webhooks.getConfig(auth)
      const at = new Date()
      await users.audit(selfOf(session, request), {
        action: 'webhook_secret_revealed',
        target: { type: 'webhook', id: auth.mode },
        mode: auth.mode,
        details: request.dashboardStepUp ? { totp_step_up: true } : undefined,
        at,
      })
      request.dashboardAudited = true
      return {
        secret: config.secret,
        previous_secret_expires_at: config.previous_secret_expires_at,
        revealed_at: iso(at),
      }
    },
  )

  app.get(
    `${PREFIX}/merchant`,
    merchantView({
      operationId: 'dashboardMerchantProfile',
      summary: "The merchant's profile",
      description: 'As the operator set it: read-only in the dashboard.',
      response: answers(
        200,
        MerchantProfile,
        "The merchant's settings and payment fees.",
        401,
        403,
        404,
        422,
      ),
    }),
    async (request) => {
      const { merchant } = sessionCall(request)
      const fees = await Promise.all(
        PAYMENT_METHODS.map(async (method) => {
          const fee = await merchants.fee(merchant.uuid, method)
          return {
            payment_method: method,
            fee_bps: fee.fee_bps,
            merchant_fee_share_bps: fee.merchant_fee_share_bps,
          }
        }),
      )
      return {
        uuid: merchant.uuid,
        name: merchant.name,
        settlement_currency: merchant.settlement_currency,
        settlement_hold_seconds: merchant.settlement_hold_seconds,
        transaction_ttl_seconds: merchant.transaction_ttl_seconds,
        fx_markup_bps: merchant.fx_markup_bps,
        payout_fee_bps: merchant.payout_fee_bps,
        payout_fixed_fee_micro: merchant.payout_fixed_fee_micro,
        fees,
      }
    },
  )
}

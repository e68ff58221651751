import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { UserRole } from '../../src/db/enums.ts'
import { sha256Hex } from '../../src/lib/crypto.ts'
import { totpCode } from '../../src/lib/totp.ts'
import { CLI } from '../../src/modules/users/deps.ts'
import type { TestContext } from './harness.ts'
import { rowsWhere } from './rows.ts'

/** The password the tests type themselves, to accept an invitation and sign in with it: a secret of theirs. */
export const PASSWORD = 'a long enough password'

let counter = 0
/** A unique email for a test. */
export const newEmail = (prefix = 'person') =>
  `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}@example.test`

/** Invites through the service as the command line does; the link's token is registered as a secret. */
export async function invite(
  ctx: TestContext,
  role: UserRole = 'owner',
  email = newEmail(),
  merchantUuid = ctx.merchant.uuid,
) {
  const invitation = await ctx.services.users.invite({ merchantUuid, email, role }, CLI)
  const token = new URL(invitation.link).searchParams.get('token') as string
  ctx.secrets.push(token)
  return { ...invitation, token, email }
}

/** A user who has accepted the invitation and set a password (registered as a secret). */
export async function activeUser(
  ctx: TestContext,
  role: UserRole = 'owner',
  merchantUuid = ctx.merchant.uuid,
) {
  const invited = await invite(ctx, role, newEmail(), merchantUuid)
  const password = `pw-${sha256Hex(invited.token).slice(0, 20)}`
  ctx.secrets.push(password)
  const accepted = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
    body: { token: invited.token, password },
  })
  if (accepted.statusCode !== 204) throw new Error(`accept failed: ${accepted.body}`)
  return { uuid: invited.user.uuid, email: invited.email, password, role }
}

export interface DashboardCall {
  body?: unknown
  /** The session cookie's value. */
  cookie?: string
  csrf?: string
  /** The Origin header: the origin of the config's PUBLIC_BASE_URL by default, null for none. */
  origin?: string | null
  ip?: string
  /** The mode a page calling the merchant API works in (X-Dashboard-Mode). */
  mode?: 'test' | 'live'
  /** More headers (an Idempotency-Key, say). */
  headers?: Record<string, string>
}

export function dashboard(
  ctx: TestContext,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  call: DashboardCall = {},
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { 'user-agent': 'dashboard-test' }
  const origin = call.origin === undefined ? new URL(ctx.config.publicBaseUrl).origin : call.origin
  if (origin !== null) headers.origin = origin
  if (call.cookie !== undefined) headers.cookie = `mg_session=${call.cookie}`
  if (call.csrf !== undefined) headers['x-csrf-token'] = call.csrf
  if (call.body !== undefined) headers['content-type'] = 'application/json'
  if (call.mode) headers['x-dashboard-mode'] = call.mode
  Object.assign(headers, call.headers)
  return ctx.app.inject({
    method,
    url,
    headers,
    remoteAddress: call.ip ?? '127.0.0.1',
    ...(call.body !== undefined ? { payload: JSON.stringify(call.body) } : {}),
  })
}

/** The session token a response's Set-Cookie carries (registered as a secret), or null. */
export function sessionCookie(ctx: TestContext, response: LightMyRequestResponse): string | null {
  const header = [response.headers['set-cookie'] ?? []].flat()[0]
  const match = header ? /^mg_session=([^;]*)/.exec(header) : null
  if (!match?.[1]) return null
  ctx.secrets.push(match[1])
  return match[1]
}

/** Signs in: the cookie's token and the CSRF token (both registered as secrets). */
export async function signIn(
  ctx: TestContext,
  user: { email: string; password: string },
  call: DashboardCall & { totpCode?: string } = {},
) {
  const response = await dashboard(ctx, 'POST', '/dashboard/api/session', {
    ...call,
    body: {
      email: user.email,
      password: user.password,
      ...(call.totpCode !== undefined && { totp_code: call.totpCode }),
    },
  })
  if (response.statusCode !== 200) throw new Error(`sign-in failed: ${response.statusCode} ${response.body}`)
  const token = sessionCookie(ctx, response) as string
  const csrf = response.json().csrf_token as string
  ctx.secrets.push(csrf)
  return { token, csrf, body: response.json() }
}

/** The audit rows of an action, oldest first. */
export const auditRows = (ctx: TestContext, action: string) =>
  rowsWhere(ctx.db, 'dashboard_audit_log', { action }, { orderBy: ['created_at'] })

/** A signed-in user: who they are, and the session's cookie token and CSRF token. */
export async function signedIn(ctx: TestContext, role: UserRole = 'owner', merchantUuid = ctx.merchant.uuid) {
  const user = await activeUser(ctx, role, merchantUuid)
  const session = await signIn(ctx, user)
  return { ...user, cookie: session.token, csrf: session.csrf }
}

/** A change in that user's session: their cookie and CSRF token, from the dashboard's origin. */
export const asUser = (
  ctx: TestContext,
  user: { cookie: string; csrf: string },
  method: 'GET' | 'POST' | 'DELETE' | 'PATCH' | 'PUT',
  url: string,
  body?: unknown,
) =>
  dashboard(ctx, method, url, {
    cookie: user.cookie,
    csrf: user.csrf,
    ...(body !== undefined && { body }),
  })

/** A signed-in user with their session, as signedIn answers. */
export type Session = Awaited<ReturnType<typeof signedIn>>

/**
 * A code is good once per 30 s step: a test that needs another code at once forgets the last one used instead
 * of waiting for the next step.
 */
export const forgetLastCode = (ctx: TestContext, uuid: string) =>
  ctx.db.updateTable('merchant_users').set({ totp_last_step: null }).where('uuid', '=', uuid).execute()

/** Enrols the user's authenticator (the second factor on) and forgets the code used: the secret. */
export async function enrol(
  ctx: TestContext,
  user: { uuid: string; cookie: string; csrf: string },
): Promise<string> {
  const started = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp')
  assert.equal(started.statusCode, 200, started.body)
  const { secret } = started.json()
  ctx.secrets.push(secret)
  const confirmed = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp/confirm', {
    code: totpCode(secret),
  })
  assert.equal(confirmed.statusCode, 200, confirmed.body)
  await forgetLastCode(ctx, user.uuid)
  return secret
}

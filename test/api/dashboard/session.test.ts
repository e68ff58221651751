import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { sha256Hex } from '../../../src/lib/crypto.ts'
import { CLI } from '../../../src/modules/users/deps.ts'
import {
  activeUser,
  auditRows,
  dashboard,
  invite,
  newEmail,
  sessionCookie,
  signIn,
} from '../../helpers/dashboard.ts'
import { backends, type TestContext } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const withoutRequestId = (body: string) => {
  const parsed = JSON.parse(body)
  delete parsed.error.request_id
  return parsed
}

const sessionRow = (ctx: TestContext, token: string) =>
  ctx.db
    .selectFrom('dashboard_sessions')
    .selectAll()
    .where('token_hash', '=', sha256Hex(token))
    .executeTakeFirstOrThrow()

/** Moves the session's idle or absolute end, as time passing would. */
const setSessionEnd = (
  ctx: TestContext,
  token: string,
  end: { idle_expires_at: Date } | { expires_at: Date },
) => ctx.db.updateTable('dashboard_sessions').set(end).where('token_hash', '=', sha256Hex(token)).execute()

/** The status GET /dashboard/api/me answers the session cookie `token`. */
const meStatus = async (ctx: TestContext, token: string) =>
  (await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: token })).statusCode

for (const backend of backends()) {
  describe(`dashboard sessions (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('signs in with the right password: a session cookie, the user, their permissions and a CSRF token', async () => {
      const user = await activeUser(ctx, 'support')
      const response = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: user.email.toUpperCase(), password: user.password },
      })
      assert.equal(response.statusCode, 200, response.body)
      const body = response.json()
      assert.equal(body.user.uuid, user.uuid)
      assert.equal(body.user.merchant_uuid, ctx.merchant.uuid)
      assert.equal(body.user.role, 'support')
      assert.deepEqual(body.user.permissions, ['read', 'refund'])
      assert.match(body.csrf_token, /^[0-9a-f]{64}$/)
      ctx.secrets.push(body.csrf_token)
      const token = sessionCookie(ctx, response)
      assert.ok(token)
      assert.equal(response.headers['cache-control'], 'no-store')
      // Only the token's hash is stored.
      const row = await sessionRow(ctx, token)
      assert.equal(row.user_uuid, user.uuid)
      assert.equal(row.ip, '127.0.0.1')
      assert.equal(row.user_agent, 'dashboard-test')
      const stored = await sql<{
        n: string
      }>`SELECT count(*) AS n FROM dashboard_sessions WHERE token_hash = ${token}`.execute(ctx.db)
      assert.equal(Number(stored.rows[0]?.n), 0)

      const me = await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: token })
      assert.equal(me.statusCode, 200, me.body)
      assert.equal(me.json().user.email, user.email)
      assert.equal(me.json().csrf_token, body.csrf_token)
    })

    it('sets the cookie HttpOnly, SameSite=Lax, Path=/, Secure off localhost, for the absolute limit', async () => {
      const user = await activeUser(ctx, 'viewer')
      const response = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: user.email, password: user.password },
      })
      sessionCookie(ctx, response)
      const header = String(response.headers['set-cookie'])
      const attributes = header
        .split(';')
        .slice(1)
        .map((a) => a.trim())
      assert.deepEqual(attributes.sort(), [
        'HttpOnly',
        `Max-Age=${ctx.config.dashboard.sessionAbsoluteSeconds}`,
        'Path=/',
        'SameSite=Lax',
        'Secure',
      ])
    })

    it('answers a wrong password, an unknown email, a disabled user and an unaccepted invitation alike', async () => {
      const user = await activeUser(ctx, 'viewer')
      const disabled = await activeUser(ctx, 'viewer')
      await ctx.services.users.disable(disabled.uuid, CLI)
      const pending = await invite(ctx, 'viewer')
      const attempts = [
        { email: user.email, password: `${user.password}x` },
        { email: newEmail('nobody'), password: user.password },
        { email: disabled.email, password: disabled.password },
        { email: pending.email, password: 'anything-at-all' },
      ]
      const answers = []
      for (const attempt of attempts) {
        const response = await dashboard(ctx, 'POST', '/dashboard/api/session', {
          body: attempt,
          ip: '10.1.0.1',
        })
        assert.equal(response.statusCode, 401, response.body)
        assert.equal(response.headers['set-cookie'], undefined)
        answers.push(withoutRequestId(response.body))
      }
      for (const answer of answers) assert.deepEqual(answer, answers[0])
      assert.equal(answers[0].error.code, 'unauthorized')
      const failed = await auditRows(ctx, 'login_failed')
      const emails = failed.map((r) => r.target_id)
      for (const attempt of attempts) assert.ok(emails.includes(attempt.email.toLowerCase()))
      const unknown = failed.find((r) => r.target_id === attempts[1]?.email)
      assert.equal(unknown?.actor_user_uuid, null)
      assert.equal(unknown?.ip, '10.1.0.1')
    })

    it('takes about as long for an unknown email as for a wrong password (one scrypt each)', async () => {
      const user = await activeUser(ctx, 'viewer')
      // The fastest of each: what the path itself costs, without the pauses another process's load adds.
      const fastest = (values: number[]) => Math.min(...values)
      const timed = async (email: string, ip: string) => {
        const started = process.hrtime.bigint()
        const response = await dashboard(ctx, 'POST', '/dashboard/api/session', {
          body: { email, password: 'not the password' },
          ip,
        })
        assert.equal(response.statusCode, 401)
        return Number(process.hrtime.bigint() - started) / 1e6
      }
      const wrong: number[] = []
      const unknown: number[] = []
      for (let i = 0; i < 5; i++) {
        wrong.push(await timed(user.email, `10.6.0.${i}`))
        unknown.push(await timed(newEmail('nobody'), `10.6.1.${i}`))
      }
      // Loose bounds on a shared machine: what matters is that neither path skips the hash (one that did would be
      // a few milliseconds against a scrypt's hundred).
      const ratio = fastest(unknown) / fastest(wrong)
      assert.ok(ratio > 0.5 && ratio < 2, `unknown ${unknown.join(', ')} ms; wrong ${wrong.join(', ')} ms`)
    })

    it('never adopts a session id the browser brings: a new one at sign-in, and the old one revoked', async () => {
      const user = await activeUser(ctx, 'admin')
      // An attacker plants a value of their choosing.
      const planted = 'attacker-chosen-session-value'
      const first = await signIn(ctx, user, { cookie: planted })
      assert.notEqual(first.token, planted)
      assert.equal(await meStatus(ctx, planted), 401)
      // An attacker plants their own live session: signing in replaces it and it ends.
      const second = await signIn(ctx, user, { cookie: first.token })
      assert.notEqual(second.token, first.token)
      assert.notEqual(second.csrf, first.csrf)
      assert.equal(await meStatus(ctx, first.token), 401)
      assert.equal(await meStatus(ctx, second.token), 200)
    })

    it('refuses /me without a session', async () => {
      for (const cookie of [undefined, '', 'no-such-session']) {
        const response = await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie })
        assert.equal(response.statusCode, 401)
        assert.equal(response.json().error.code, 'unauthorized')
      }
    })

    it('ends a session left idle, and moves the idle limit on with every use', async () => {
      const user = await activeUser(ctx, 'viewer')
      const { token } = await signIn(ctx, user)
      await setSessionEnd(ctx, token, { idle_expires_at: new Date(Date.now() + 5000) })
      assert.equal(await meStatus(ctx, token), 200)
      const touched = await sessionRow(ctx, token)
      const idleMs = ctx.config.dashboard.sessionIdleSeconds * 1000
      assert.ok(touched.idle_expires_at.getTime() > Date.now() + idleMs - 60_000)

      await setSessionEnd(ctx, token, { idle_expires_at: new Date(Date.now() - 1000) })
      assert.equal(await meStatus(ctx, token), 401)
    })

    it('ends a session at its absolute limit however much it is used, and never extends past it', async () => {
      const user = await activeUser(ctx, 'viewer')
      const { token } = await signIn(ctx, user)
      const soon = new Date(Date.now() + 2000)
      await setSessionEnd(ctx, token, { expires_at: soon })
      assert.equal(await meStatus(ctx, token), 200)
      assert.ok((await sessionRow(ctx, token)).idle_expires_at.getTime() <= soon.getTime())
      await setSessionEnd(ctx, token, { expires_at: new Date(Date.now() - 1000) })
      assert.equal(await meStatus(ctx, token), 401)
    })

    it('logs out: the session ends, the cookie is cleared, and it is audited', async () => {
      const user = await activeUser(ctx, 'developer')
      const { token, csrf } = await signIn(ctx, user)
      const other = await signIn(ctx, user)
      const response = await dashboard(ctx, 'DELETE', '/dashboard/api/session', { cookie: token, csrf })
      assert.equal(response.statusCode, 204, response.body)
      assert.match(String(response.headers['set-cookie']), /^mg_session=; .*Max-Age=0/)
      assert.equal(await meStatus(ctx, token), 401)
      // Another session of the same user lives on.
      assert.equal(await meStatus(ctx, other.token), 200)
      const row = (await auditRows(ctx, 'logout')).find((r) => r.actor_user_uuid === user.uuid)
      assert.equal(row?.merchant_uuid, ctx.merchant.uuid)
      assert.equal(row?.via, 'dashboard')
      assert.equal(row?.user_agent, 'dashboard-test')
    })

    it('logs out everywhere: every session of the user ends, another user’s do not', async () => {
      const user = await activeUser(ctx, 'owner')
      const someoneElse = await activeUser(ctx, 'owner')
      const sessions = [await signIn(ctx, user), await signIn(ctx, user), await signIn(ctx, user)]
      const theirs = await signIn(ctx, someoneElse)
      const [first] = sessions
      const response = await dashboard(ctx, 'DELETE', '/dashboard/api/sessions', {
        cookie: first?.token,
        csrf: first?.csrf,
      })
      assert.equal(response.statusCode, 204, response.body)
      for (const s of sessions) assert.equal(await meStatus(ctx, s.token), 401)
      assert.equal(await meStatus(ctx, theirs.token), 200)
      const row = (await auditRows(ctx, 'logout_everywhere')).find((r) => r.actor_user_uuid === user.uuid)
      assert.deepEqual(row?.details, { sessions_revoked: 3 })
    })

    it('a disabled user loses every session at once and cannot sign in again', async () => {
      const user = await activeUser(ctx, 'support')
      const { token } = await signIn(ctx, user)
      const { sessionsRevoked } = await ctx.services.users.disable(user.uuid, CLI)
      assert.equal(sessionsRevoked, 1)
      assert.equal(await meStatus(ctx, token), 401)
      const again = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: user.email, password: user.password },
        ip: '10.1.0.2',
      })
      assert.equal(again.statusCode, 401)
      const row = (await auditRows(ctx, 'user_disabled')).find((r) => r.target_id === user.uuid)
      assert.equal(row?.via, 'cli')
      assert.deepEqual(row?.details, { sessions_revoked: 1 })
    })

    it('records every sign-in in the audit log with who, when and from where', async () => {
      const user = await activeUser(ctx, 'viewer')
      const { body } = await signIn(ctx, user, { ip: '10.1.0.3' })
      const row = (await auditRows(ctx, 'login_succeeded')).find((r) => r.actor_user_uuid === body.user.uuid)
      assert.equal(row?.merchant_uuid, ctx.merchant.uuid)
      assert.equal(row?.ip, '10.1.0.3')
      assert.equal(row?.user_agent, 'dashboard-test')
      assert.equal(row?.target_type, 'session')
      assert.ok(row?.created_at instanceof Date)
    })
  })

  describe(`dashboard sign-in throttling (${backend})`, () => {
    const ctx = suiteContext(backend)
    before(async () => {
      ctx.config.dashboard.loginMaxFailuresPerAddress = 8
    })

    it('after 5 failures for an email, refuses it with 429 even with the right password, from any address', async () => {
      const user = await activeUser(ctx, 'viewer')
      for (let i = 0; i < 5; i++) {
        const wrong = await dashboard(ctx, 'POST', '/dashboard/api/session', {
          body: { email: user.email, password: 'wrong-password' },
          ip: `10.2.0.${i}`,
        })
        assert.equal(wrong.statusCode, 401)
      }
      const right = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: user.email, password: user.password },
        ip: '10.2.1.1',
      })
      assert.equal(right.statusCode, 429, right.body)
      assert.equal(right.json().error.code, 'rate_limited')
      assert.match(
        right.json().error.message,
        /Too many failed sign-ins for this email: try again in 15 minutes/,
      )
      assert.equal(right.headers['retry-after'], '900')
      assert.equal(right.headers['set-cookie'], undefined)
      assert.ok(
        (await auditRows(ctx, 'login_throttled')).some((r) => r.target_id === user.email.toLowerCase()),
      )

      // An unknown email is throttled the same way, so a 429 tells nothing about who exists.
      const nobody = newEmail('nobody')
      for (let i = 0; i < 5; i++)
        await dashboard(ctx, 'POST', '/dashboard/api/session', {
          body: { email: nobody, password: 'x' },
          ip: `10.3.0.${i}`,
        })
      const refused = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: nobody, password: 'x' },
        ip: '10.3.1.1',
      })
      assert.equal(refused.statusCode, 429)
      assert.equal(refused.json().error.message, right.json().error.message)
    })

    it('after too many failures from one address, refuses that address, not others', async () => {
      const user = await activeUser(ctx, 'viewer')
      for (let i = 0; i < 8; i++)
        await dashboard(ctx, 'POST', '/dashboard/api/session', {
          body: { email: newEmail('guess'), password: 'x' },
          ip: '10.4.0.1',
        })
      const refused = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: user.email, password: user.password },
        ip: '10.4.0.1',
      })
      assert.equal(refused.statusCode, 429)
      assert.match(refused.json().error.message, /from your address/)
      await signIn(ctx, user, { ip: '10.4.0.2' })
    })

    it('counts only failures within the window', async () => {
      const user = await activeUser(ctx, 'viewer')
      for (let i = 0; i < 5; i++)
        await dashboard(ctx, 'POST', '/dashboard/api/session', {
          body: { email: user.email, password: 'wrong' },
          ip: `10.5.0.${i}`,
        })
      // The failures age past the window.
      await ctx.db
        .updateTable('dashboard_audit_log')
        .set({ created_at: new Date(Date.now() - 16 * 60 * 1000) })
        .where('target_id', '=', user.email.toLowerCase())
        .execute()
      await signIn(ctx, user, { ip: '10.5.1.1' })
    })
  })
}

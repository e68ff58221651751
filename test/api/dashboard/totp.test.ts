import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Secret, TOTP, URI } from 'otpauth'
import { totpCode, totpStepAt } from '../../../src/lib/totp.ts'
import {
  activeUser,
  asUser,
  auditRows,
  dashboard,
  enrol,
  sessionCookie,
  signedIn,
  signIn,
} from '../../helpers/dashboard.ts'
import { backends, type TestContext } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const signInCall = (ctx: TestContext, user: { email: string; password: string }, totp_code?: string) =>
  dashboard(ctx, 'POST', '/dashboard/api/session', {
    body: { email: user.email, password: user.password, ...(totp_code !== undefined && { totp_code }) },
  })

for (const backend of backends()) {
  describe(`dashboard TOTP (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('enrols: an otpauth URI and its secret, stored sealed, in force only once a code is confirmed', async () => {
      const user = await signedIn(ctx, 'support')
      const started = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp')
      assert.equal(started.statusCode, 200, started.body)
      const { secret, otpauth_uri } = started.json()
      ctx.secrets.push(secret)
      assert.match(secret, /^[A-Z2-7]{32}$/)
      const uri = new URL(otpauth_uri)
      assert.equal(uri.protocol, 'otpauth:')
      assert.equal(uri.searchParams.get('secret'), secret)
      assert.equal(uri.searchParams.get('digits'), '6')
      assert.equal(uri.searchParams.get('period'), '30')
      assert.match(decodeURIComponent(uri.pathname), new RegExp(user.email.replace(/[.]/g, '\\.')))
      const row = await ctx.db
        .selectFrom('merchant_users')
        .select(['totp_secret_sealed', 'totp_enabled'])
        .where('uuid', '=', user.uuid)
        .executeTakeFirstOrThrow()
      assert.equal(row.totp_enabled, false)
      assert.match(row.totp_secret_sealed ?? '', /^v1\./)
      assert.ok(!row.totp_secret_sealed?.includes(secret))
      // Not in force yet: signing in needs no code.
      await signIn(ctx, user)

      const wrong = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp/confirm', { code: '000000' })
      assert.equal(wrong.statusCode, 422)
      assert.ok(wrong.json().error.errors.code)
      // The code of an app that read the URI (otpauth itself, as a third party would).
      const app = URI.parse(otpauth_uri) as TOTP
      const confirmed = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp/confirm', {
        code: app.generate(),
      })
      assert.equal(confirmed.statusCode, 200, confirmed.body)
      assert.deepEqual(confirmed.json(), { totp_enabled: true })
      const me = await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: user.cookie })
      assert.equal(me.json().user.totp_enabled, true)
      const actions = (await auditRows(ctx, 'totp_enabled')).filter((r) => r.target_id === user.uuid)
      assert.equal(actions.length, 1)
      assert.equal(
        (await auditRows(ctx, 'totp_code_rejected')).filter((r) => r.target_id === user.uuid).length,
        1,
      )
      // Enrolling again while on is refused: turn it off first.
      const again = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp')
      assert.equal(again.statusCode, 409)
      const confirmNothing = await asUser(
        ctx,
        await signedIn(ctx, 'viewer'),
        'POST',
        '/dashboard/api/me/totp/confirm',
        {
          code: '123456',
        },
      )
      assert.equal(confirmNothing.statusCode, 409)
      assert.match(confirmNothing.json().error.message, /no enrolment to confirm/)
    })

    it('signs in with the code: without it 401 totp_required (only with the right password), a wrong one counts as a failure', async () => {
      const user = await signedIn(ctx, 'viewer')
      const secret = await enrol(ctx, user)

      const missing = await signInCall(ctx, user)
      assert.equal(missing.statusCode, 401)
      assert.equal(missing.json().error.code, 'totp_required')
      assert.equal(missing.json().error.details.reason, 'missing')
      assert.equal(missing.headers['set-cookie'], undefined)
      // A wrong password answers as ever: no hint that this user has a second factor.
      const wrongPassword = await signInCall(ctx, { ...user, password: `${user.password}x` })
      assert.equal(wrongPassword.statusCode, 401)
      assert.equal(wrongPassword.json().error.code, 'unauthorized')

      const failedBefore = (await auditRows(ctx, 'login_failed')).filter(
        (r) => r.target_id === user.email.toLowerCase(),
      ).length
      const wrongCode = await signInCall(ctx, user, totpCode(secret, new Date(Date.now() - 10 * 60_000)))
      assert.equal(wrongCode.statusCode, 401)
      assert.equal(wrongCode.json().error.code, 'totp_required')
      assert.equal(wrongCode.json().error.details.reason, 'invalid')
      const failed = (await auditRows(ctx, 'login_failed')).filter(
        (r) => r.target_id === user.email.toLowerCase(),
      )
      assert.equal(failed.length, failedBefore + 1)
      assert.deepEqual(failed.at(-1)?.details, { reason: 'totp_code' })

      const code = totpCode(secret)
      const ok = await signInCall(ctx, user, code)
      assert.equal(ok.statusCode, 200, ok.body)
      assert.ok(sessionCookie(ctx, ok))
      assert.equal(ok.json().user.totp_enabled, true)
      assert.equal(ok.json().totp_enrolment_required, false)
      // The same code again is refused: each 30 s step's code works once.
      const replay = await signInCall(ctx, user, code)
      assert.equal(replay.statusCode, 401)
      assert.equal(replay.json().error.details.reason, 'invalid')
      const row = await ctx.db
        .selectFrom('merchant_users')
        .select('totp_last_step')
        .where('uuid', '=', user.uuid)
        .executeTakeFirstOrThrow()
      assert.ok(Math.abs(Number(row.totp_last_step) - totpStepAt(new Date())) <= 1)
    })

    it('throttles wrong codes like wrong passwords: the 6th attempt is 429 even with the right code', async () => {
      const user = await signedIn(ctx, 'viewer')
      const secret = await enrol(ctx, user)
      for (let i = 0; i < 5; i++) {
        const wrong = await dashboard(ctx, 'POST', '/dashboard/api/session', {
          body: { email: user.email, password: user.password, totp_code: '000000' },
          ip: `10.9.0.${i}`,
        })
        assert.equal(wrong.statusCode, 401)
      }
      const right = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: user.email, password: user.password, totp_code: totpCode(secret) },
        ip: '10.9.1.1',
      })
      assert.equal(right.statusCode, 429)
      assert.equal(right.json().error.code, 'rate_limited')
    })

    it('throttles wrong codes in a session too: after 5, even the right code is 429 for a while', async () => {
      const user = await signedIn(ctx, 'viewer')
      const started = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp')
      const { secret } = started.json()
      ctx.secrets.push(secret)
      for (let i = 0; i < 5; i++) {
        const wrong = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp/confirm', { code: '000000' })
        assert.equal(wrong.statusCode, 422)
      }
      const right = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp/confirm', {
        code: totpCode(secret),
      })
      assert.equal(right.statusCode, 429)
      assert.equal(right.headers['retry-after'], String(ctx.config.dashboard.loginWindowSeconds))
      const row = await ctx.db
        .selectFrom('merchant_users')
        .select('totp_enabled')
        .where('uuid', '=', user.uuid)
        .executeTakeFirstOrThrow()
      assert.equal(row.totp_enabled, false)
    })

    it('turns off with a current code; refuses a wrong code, and refuses while the merchant requires it', async () => {
      const m = await ctx.newMerchant('Off')
      const owner = await signedIn(ctx, 'owner', m.uuid)
      const secret = await enrol(ctx, owner)
      const wrong = await asUser(ctx, owner, 'DELETE', '/dashboard/api/me/totp', { code: '000000' })
      assert.equal(wrong.statusCode, 422)

      const required = await asUser(ctx, owner, 'PUT', '/dashboard/api/merchant/security', {
        require_totp: true,
      })
      assert.equal(required.statusCode, 200, required.body)
      assert.deepEqual(required.json(), { require_totp: true })
      const refused = await asUser(ctx, owner, 'DELETE', '/dashboard/api/me/totp', { code: totpCode(secret) })
      assert.equal(refused.statusCode, 409)
      assert.match(refused.json().error.message, /requires a second factor/)

      await asUser(ctx, owner, 'PUT', '/dashboard/api/merchant/security', { require_totp: false })
      const off = await asUser(ctx, owner, 'DELETE', '/dashboard/api/me/totp', { code: totpCode(secret) })
      assert.equal(off.statusCode, 200, off.body)
      assert.deepEqual(off.json(), { totp_enabled: false })
      // Off means off: signing in needs no code, and the secret is gone.
      await signIn(ctx, owner)
      const row = await ctx.db
        .selectFrom('merchant_users')
        .select(['totp_secret_sealed', 'totp_enabled'])
        .where('uuid', '=', owner.uuid)
        .executeTakeFirstOrThrow()
      assert.deepEqual(row, { totp_secret_sealed: null, totp_enabled: false })
      assert.equal(
        (await auditRows(ctx, 'totp_disabled')).filter((r) => r.target_id === owner.uuid).length,
        1,
      )
    })

    it('lets only an owner with a second factor require it; others read the setting', async () => {
      const m = await ctx.newMerchant('Require')
      const owner = await signedIn(ctx, 'owner', m.uuid)
      const admin = await signedIn(ctx, 'admin', m.uuid)
      const byAdmin = await asUser(ctx, admin, 'PUT', '/dashboard/api/merchant/security', {
        require_totp: true,
      })
      assert.equal(byAdmin.statusCode, 403)
      const withoutOwn = await asUser(ctx, owner, 'PUT', '/dashboard/api/merchant/security', {
        require_totp: true,
      })
      assert.equal(withoutOwn.statusCode, 409)
      assert.match(withoutOwn.json().error.message, /Turn on your own second factor first/)
      const bad = await asUser(ctx, owner, 'PUT', '/dashboard/api/merchant/security', { require_totp: 'yes' })
      assert.equal(bad.statusCode, 422)
      await enrol(ctx, owner)
      const on = await asUser(ctx, owner, 'PUT', '/dashboard/api/merchant/security', { require_totp: true })
      assert.equal(on.statusCode, 200, on.body)
      const audit = (await auditRows(ctx, 'merchant_security_changed')).filter(
        (r) => r.merchant_uuid === m.uuid,
      )
      assert.deepEqual(
        audit.map((r) => r.details),
        [{ require_totp: true }],
      )
      const read = await asUser(ctx, owner, 'GET', '/dashboard/api/merchant/security')
      assert.deepEqual(read.json(), { require_totp: true })
      // Another merchant is untouched.
      const elsewhere = await signedIn(ctx, 'viewer')
      const theirs = await asUser(ctx, elsewhere, 'GET', '/dashboard/api/merchant/security')
      assert.deepEqual(theirs.json(), { require_totp: false })
    })

    it('when required, a user without a second factor may only enrol, read /me and sign out, until enrolled', async () => {
      const m = await ctx.newMerchant('Enforced')
      const owner = await signedIn(ctx, 'owner', m.uuid)
      await enrol(ctx, owner)
      const admin = await signedIn(ctx, 'admin', m.uuid)
      const on = await asUser(ctx, owner, 'PUT', '/dashboard/api/merchant/security', { require_totp: true })
      assert.equal(on.statusCode, 200)

      // A session opened before the requirement is held to it from its next request.
      const blocked = await asUser(ctx, admin, 'GET', '/dashboard/api/users')
      assert.equal(blocked.statusCode, 403)
      assert.equal(blocked.json().error.details.totp_enrolment_required, true)

      const user = await activeUser(ctx, 'admin', m.uuid)
      const login = await signInCall(ctx, user)
      assert.equal(login.statusCode, 200, login.body)
      assert.equal(login.json().totp_enrolment_required, true)
      const session = {
        ...user,
        cookie: sessionCookie(ctx, login) as string,
        csrf: login.json().csrf_token as string,
      }
      ctx.secrets.push(session.csrf)
      for (const [method, url, body] of [
        ['GET', '/dashboard/api/users', undefined],
        ['GET', '/dashboard/api/audit-log', undefined],
        ['GET', '/dashboard/api/merchant/security', undefined],
        ['POST', '/dashboard/api/users/invitations', { email: 'x@example.test', role: 'viewer' }],
        ['DELETE', '/dashboard/api/me/totp', { code: '123456' }],
      ] as const) {
        const response = await asUser(ctx, session, method, url, body)
        assert.equal(response.statusCode, 403, `${method} ${url}: ${response.body}`)
      }
      // The merchant API's pages too (modules/dashboard/access.ts).
      const payments = await dashboard(ctx, 'GET', '/integration/transactions', {
        cookie: session.cookie,
        mode: 'test',
      })
      assert.equal(payments.statusCode, 403, payments.body)
      assert.equal(payments.json().error.details.totp_enrolment_required, true)
      const me = await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: session.cookie })
      assert.equal(me.statusCode, 200)
      assert.equal(me.json().totp_enrolment_required, true)

      const started = await asUser(ctx, session, 'POST', '/dashboard/api/me/totp')
      assert.equal(started.statusCode, 200, started.body)
      const secret = started.json().secret
      ctx.secrets.push(secret)
      const confirmed = await asUser(ctx, session, 'POST', '/dashboard/api/me/totp/confirm', {
        code: new TOTP({ secret: Secret.fromBase32(secret) }).generate(),
      })
      assert.equal(confirmed.statusCode, 200, confirmed.body)
      const now = await asUser(ctx, session, 'GET', '/dashboard/api/users')
      assert.equal(now.statusCode, 200, now.body)
      const paymentsNow = await dashboard(ctx, 'GET', '/integration/transactions', {
        cookie: session.cookie,
        mode: 'test',
      })
      assert.equal(paymentsNow.statusCode, 200, paymentsNow.body)
      const meAfter = await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: session.cookie })
      assert.equal(meAfter.json().totp_enrolment_required, false)

      const out = await asUser(ctx, admin, 'DELETE', '/dashboard/api/session')
      assert.equal(out.statusCode, 204)
    })

    it('refuses a code for a second factor that is not on, and bad bodies, with 4xx', async () => {
      const user = await signedIn(ctx, 'viewer')
      const off = await asUser(ctx, user, 'DELETE', '/dashboard/api/me/totp', { code: '123456' })
      assert.equal(off.statusCode, 409)
      for (const body of [{}, { code: '' }, { code: 1 }, { code: '1'.repeat(17) }, { code: '1', x: 1 }]) {
        const response = await asUser(ctx, user, 'POST', '/dashboard/api/me/totp/confirm', body)
        assert.equal(response.statusCode, 422, `${JSON.stringify(body)}: ${response.body}`)
      }
      const longCode = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: user.email, password: user.password, totp_code: 'x'.repeat(17) },
      })
      assert.equal(longCode.statusCode, 422)
    })
  })
}

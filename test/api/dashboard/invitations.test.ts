import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sha256Hex } from '../../../src/lib/crypto.ts'
import { CLI } from '../../../src/modules/users/deps.ts'
import { auditRows, dashboard, invite, newEmail, PASSWORD, signIn } from '../../helpers/dashboard.ts'
import { backends } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

for (const backend of backends()) {
  describe(`dashboard invitations (${backend})`, () => {
    const ctx = suiteContext(backend, { secrets: [PASSWORD] })

    it('invites: a user without a password, and a one-time set-password link on the public base URL', async () => {
      const invited = await invite(ctx, 'support')
      assert.match(invited.link, /^http:\/\/gateway\.test\/dashboard\/set-password\?token=[0-9A-Za-z]{43}$/)
      assert.equal(invited.user.role, 'support')
      assert.equal(invited.user.merchant_uuid, ctx.merchant.uuid)
      const hours = (invited.expiresAt.getTime() - Date.now()) / 3_600_000
      assert.ok(hours > 23.9 && hours <= 24, String(hours))
      const row = await ctx.db
        .selectFrom('merchant_user_invitations')
        .selectAll()
        .where('user_uuid', '=', invited.user.uuid)
        .executeTakeFirstOrThrow()
      assert.equal(row.token_hash, sha256Hex(invited.token))
      const [listed] = (await ctx.services.users.list(ctx.merchant.uuid)).filter(
        (u) => u.uuid === invited.user.uuid,
      )
      assert.equal(listed?.password_set, false)
      const audit = (await auditRows(ctx, 'user_invited')).find((r) => r.target_id === invited.user.uuid)
      assert.equal(audit?.via, 'cli')
      assert.deepEqual(audit?.details, { email: invited.email, role: 'support' })
    })

    it('accepts once: the password is set and works; the same link again is refused, clearly', async () => {
      const invited = await invite(ctx, 'viewer')
      const accepted = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token: invited.token, password: PASSWORD },
      })
      assert.equal(accepted.statusCode, 204, accepted.body)
      await signIn(ctx, { email: invited.email, password: PASSWORD })
      const again = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token: invited.token, password: 'another long password' },
      })
      assert.equal(again.statusCode, 409)
      assert.equal(again.json().error.code, 'invalid_state')
      assert.match(again.json().error.message, /already used/)
      // The first password still stands.
      await signIn(ctx, { email: invited.email, password: PASSWORD })
      const audit = (await auditRows(ctx, 'invitation_accepted')).filter(
        (r) => r.target_id === invited.user.uuid,
      )
      assert.equal(audit.length, 1)
      assert.equal(audit[0]?.actor_user_uuid, invited.user.uuid)
    })

    it('refuses a link past its 24 hours, saying so', async () => {
      const invited = await invite(ctx, 'viewer')
      await ctx.db
        .updateTable('merchant_user_invitations')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('user_uuid', '=', invited.user.uuid)
        .execute()
      const expired = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token: invited.token, password: PASSWORD },
      })
      assert.equal(expired.statusCode, 409)
      assert.match(expired.json().error.message, /expired .*24 hours.*ask for a new one/)
      const login = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: invited.email, password: PASSWORD },
      })
      assert.equal(login.statusCode, 401)
    })

    it('refuses an unknown token (404) and a short password (422)', async () => {
      const unknown = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token: 'not-a-token-we-made', password: PASSWORD },
      })
      assert.equal(unknown.statusCode, 404)
      assert.equal(unknown.json().error.code, 'not_found')
      const invited = await invite(ctx, 'viewer')
      const short = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token: invited.token, password: 'short' },
      })
      assert.equal(short.statusCode, 422)
      assert.equal(short.json().error.code, 'validation_failed')
    })

    it('refuses a common or repetitive password, says why, and keeps the link usable', async () => {
      const invited = await invite(ctx, 'viewer')
      for (const [password, why] of [
        ['aaaaaaaaaaaa', /repeated/i],
        ['password1234', /common/i],
        ['abcdefghijklmnop', /sequence/i],
        ['qwertyuiopasdf', /common|keyboard|easy to guess/i],
      ] as const) {
        const weak = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
          body: { token: invited.token, password },
        })
        assert.equal(weak.statusCode, 422, password)
        assert.equal(weak.json().error.code, 'validation_failed', password)
        assert.match(String(weak.json().error.errors?.password?.[0]), why, password)
        assert.ok(!weak.body.includes(password), 'the refusal does not echo the password')
      }
      const accepted = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token: invited.token, password: PASSWORD },
      })
      assert.equal(accepted.statusCode, 204, accepted.body)
    })

    it('refuses the invitation of a user disabled since', async () => {
      const invited = await invite(ctx, 'viewer')
      await ctx.services.users.disable(invited.user.uuid, CLI)
      const response = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token: invited.token, password: PASSWORD },
      })
      assert.equal(response.statusCode, 409)
      assert.match(response.json().error.message, /disabled/)
    })

    it('refuses an email already in use, at this merchant or another, whatever its case', async () => {
      const email = newEmail('taken')
      await invite(ctx, 'viewer', email)
      await assert.rejects(
        ctx.services.users.invite(
          { merchantUuid: ctx.other.uuid, email: email.toUpperCase(), role: 'owner' },
          CLI,
        ),
        (error: { code?: string }) => error.code === 'conflict',
      )
      await assert.rejects(
        ctx.services.users.invite(
          { merchantUuid: ctx.merchant.uuid, email: 'not an email', role: 'owner' },
          CLI,
        ),
        (error: { code?: string }) => error.code === 'validation_failed',
      )
      await assert.rejects(
        ctx.services.users.invite(
          { merchantUuid: '00000000-0000-4000-8000-000000000000', email: newEmail(), role: 'owner' },
          CLI,
        ),
        (error: { code?: string }) => error.code === 'not_found',
      )
    })

    it('invites again someone whose invitation is still open: a new link and role, the old link ends', async () => {
      const first = await invite(ctx, 'viewer')
      const second = await invite(ctx, 'support', first.email.toUpperCase())
      assert.equal(second.user.uuid, first.user.uuid)
      assert.equal(second.user.role, 'support')
      const old = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token: first.token, password: PASSWORD },
      })
      assert.equal(old.statusCode, 404)
      assert.match(old.json().error.message, /newer invitation replaces an older one/)
      const accepted = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token: second.token, password: PASSWORD },
      })
      assert.equal(accepted.statusCode, 204)
      // Once the password is set, the email is taken for good.
      await assert.rejects(
        invite(ctx, 'owner', first.email),
        (error: { code?: string }) => error.code === 'conflict',
      )
      const audit = (await auditRows(ctx, 'user_invited')).filter((r) => r.target_id === first.user.uuid)
      assert.deepEqual(audit[1]?.details, {
        email: second.email,
        role: 'support',
        replaces_open_invitation: true,
      })
    })

    it('keeps the token of a set-password page out of the logs', async () => {
      const invited = await invite(ctx, 'viewer')
      await ctx.app.inject({ method: 'GET', url: `/dashboard/set-password?token=${invited.token}` })
      assert.ok(ctx.logs.some((line) => line.includes('/dashboard/set-password?token=[redacted]')))
      // ctx.close() fails the suite if the token reached any log line.
    })
  })
}

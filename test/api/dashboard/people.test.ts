import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  activeUser,
  asUser,
  auditRows,
  dashboard,
  invite,
  newEmail,
  PASSWORD,
  signedIn,
  signIn,
} from '../../helpers/dashboard.ts'
import { backends } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

for (const backend of backends()) {
  describe(`dashboard people (${backend})`, () => {
    const ctx = suiteContext(backend, { secrets: [PASSWORD] })

    it("lists the merchant's users, and only theirs, without any hash or secret", async () => {
      const owner = await signedIn(ctx, 'owner')
      const pending = await invite(ctx, 'viewer')
      const elsewhere = await activeUser(ctx, 'owner', ctx.other.uuid)
      const response = await asUser(ctx, owner, 'GET', '/dashboard/api/users')
      assert.equal(response.statusCode, 200, response.body)
      const { data } = response.json()
      const me = data.find((u: { uuid: string }) => u.uuid === owner.uuid)
      assert.deepEqual(Object.keys(me).sort(), [
        'created_at',
        'email',
        'password_set',
        'role',
        'status',
        'totp_enabled',
        'uuid',
      ])
      assert.deepEqual(
        { ...me, created_at: undefined },
        {
          uuid: owner.uuid,
          email: owner.email,
          role: 'owner',
          status: 'active',
          password_set: true,
          totp_enabled: false,
          created_at: undefined,
        },
      )
      assert.match(me.created_at, /^\d{4}-\d{2}-\d{2}T/)
      const open = data.find((u: { uuid: string }) => u.uuid === pending.user.uuid)
      assert.equal(open.password_set, false)
      assert.equal(
        data.some((u: { uuid: string }) => u.uuid === elsewhere.uuid),
        false,
      )
      assert.doesNotMatch(response.body, /scrypt|password_hash|totp_secret/)
    })

    it('refuses people management to developer, support and viewer, server-side', async () => {
      const target = await activeUser(ctx, 'viewer')
      for (const role of ['developer', 'support', 'viewer'] as const) {
        const user = await signedIn(ctx, role)
        const calls = [
          await asUser(ctx, user, 'GET', '/dashboard/api/users'),
          await asUser(ctx, user, 'POST', '/dashboard/api/users/invitations', {
            email: newEmail(),
            role: 'viewer',
          }),
          await asUser(ctx, user, 'PATCH', `/dashboard/api/users/${target.uuid}`, { role: 'support' }),
          await asUser(ctx, user, 'POST', `/dashboard/api/users/${target.uuid}/disable`),
          await asUser(ctx, user, 'GET', '/dashboard/api/audit-log'),
        ]
        for (const response of calls) {
          assert.equal(response.statusCode, 403, `${role}: ${response.body}`)
          assert.equal(response.json().error.code, 'forbidden')
        }
      }
      const listed = (await ctx.services.users.list(ctx.merchant.uuid)).find((u) => u.uuid === target.uuid)
      assert.equal(listed?.role, 'viewer')
      assert.equal(listed?.status, 'active')
    })

    it('invites from the dashboard: the user, a one-time link that works, its expiry, and an audit row', async () => {
      const admin = await signedIn(ctx, 'admin')
      const email = newEmail('invited')
      const response = await asUser(ctx, admin, 'POST', '/dashboard/api/users/invitations', {
        email,
        role: 'support',
      })
      assert.equal(response.statusCode, 201, response.body)
      const body = response.json()
      ctx.secrets.push(new URL(body.invite_url).searchParams.get('token') as string)
      assert.match(
        body.invite_url,
        /^http:\/\/gateway\.test\/dashboard\/set-password\?token=[0-9A-Za-z]{43}$/,
      )
      assert.equal(body.user.email, email)
      assert.equal(body.user.role, 'support')
      assert.equal(body.user.password_set, false)
      const hours = (Date.parse(body.expires_at) - Date.now()) / 3_600_000
      assert.ok(hours > 23.9 && hours <= 24, String(hours))
      const audit = (await auditRows(ctx, 'user_invited')).find((r) => r.target_id === body.user.uuid)
      assert.equal(audit?.via, 'dashboard')
      assert.equal(audit?.actor_user_uuid, admin.uuid)
      assert.equal(audit?.merchant_uuid, ctx.merchant.uuid)
      assert.deepEqual(audit?.details, { email, role: 'support' })

      const token = new URL(body.invite_url).searchParams.get('token')
      const accepted = await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
        body: { token, password: PASSWORD },
      })
      assert.equal(accepted.statusCode, 204, accepted.body)
      const session = await signIn(ctx, { email, password: PASSWORD })
      assert.equal(session.body.user.role, 'support')
      assert.equal(session.body.user.merchant_uuid, ctx.merchant.uuid)
    })

    it('lets an owner invite an owner, but not an admin; an email already taken is a 409', async () => {
      const owner = await signedIn(ctx, 'owner')
      const admin = await signedIn(ctx, 'admin')
      const byAdmin = await asUser(ctx, admin, 'POST', '/dashboard/api/users/invitations', {
        email: newEmail(),
        role: 'owner',
      })
      assert.equal(byAdmin.statusCode, 403)
      assert.match(byAdmin.json().error.message, /Only an owner/)
      const byOwner = await asUser(ctx, owner, 'POST', '/dashboard/api/users/invitations', {
        email: newEmail(),
        role: 'owner',
      })
      assert.equal(byOwner.statusCode, 201, byOwner.body)
      ctx.secrets.push(new URL(byOwner.json().invite_url).searchParams.get('token') as string)
      // An admin cannot turn an open owner invitation into another role by inviting the email again.
      const again = await asUser(ctx, admin, 'POST', '/dashboard/api/users/invitations', {
        email: byOwner.json().user.email,
        role: 'viewer',
      })
      assert.equal(again.statusCode, 403)
      const taken = await asUser(ctx, owner, 'POST', '/dashboard/api/users/invitations', {
        email: admin.email,
        role: 'viewer',
      })
      assert.equal(taken.statusCode, 409)
      assert.equal(taken.json().error.code, 'conflict')
    })

    it('answers bad input with 4xx: a bad email, an unknown role, extra fields, a bad uuid', async () => {
      const owner = await signedIn(ctx, 'owner')
      const cases: [string, string, unknown, number][] = [
        ['POST', '/dashboard/api/users/invitations', { email: 'not-an-email', role: 'viewer' }, 422],
        ['POST', '/dashboard/api/users/invitations', { email: newEmail(), role: 'root' }, 422],
        ['POST', '/dashboard/api/users/invitations', { email: newEmail(), role: 'viewer', x: 1 }, 422],
        ['POST', '/dashboard/api/users/invitations', { email: newEmail() }, 422],
        ['PATCH', '/dashboard/api/users/not-a-uuid', { role: 'viewer' }, 404],
        ['PATCH', `/dashboard/api/users/${owner.uuid}`, { role: 'superuser' }, 422],
        ['POST', '/dashboard/api/users/0190f0c4-0000-7000-8000-000000000000/disable', undefined, 404],
        ['GET', '/dashboard/api/audit-log?per_page=0', undefined, 422],
        ['GET', '/dashboard/api/audit-log?per_page=101', undefined, 422],
        ['GET', '/dashboard/api/audit-log?cursor=bm9wZQ', undefined, 422],
      ]
      for (const [method, url, body, status] of cases) {
        const response = await asUser(ctx, owner, method as 'POST', url, body)
        assert.equal(response.statusCode, status, `${method} ${url}: ${response.body}`)
        assert.ok(response.json().error.code, response.body)
      }
    })

    it('changes a role: it holds from the next request, and is audited with from and to', async () => {
      const admin = await signedIn(ctx, 'admin')
      const member = await signedIn(ctx, 'viewer')
      const response = await asUser(ctx, admin, 'PATCH', `/dashboard/api/users/${member.uuid}`, {
        role: 'support',
      })
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.json().role, 'support')
      assert.equal(response.json().uuid, member.uuid)
      const me = await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: member.cookie })
      assert.equal(me.json().user.role, 'support')
      assert.deepEqual(me.json().user.permissions, ['read', 'refund'])
      const audit = (await auditRows(ctx, 'user_role_changed')).find((r) => r.target_id === member.uuid)
      assert.equal(audit?.actor_user_uuid, admin.uuid)
      assert.deepEqual(audit?.details, { email: member.email, from: 'viewer', to: 'support' })
    })

    it('keeps owners for owners: an admin can neither promote to nor change an owner', async () => {
      const admin = await signedIn(ctx, 'admin')
      const member = await activeUser(ctx, 'viewer')
      const owner = await activeUser(ctx, 'owner')
      const promote = await asUser(ctx, admin, 'PATCH', `/dashboard/api/users/${member.uuid}`, {
        role: 'owner',
      })
      assert.equal(promote.statusCode, 403)
      const demote = await asUser(ctx, admin, 'PATCH', `/dashboard/api/users/${owner.uuid}`, {
        role: 'viewer',
      })
      assert.equal(demote.statusCode, 403)
      const disable = await asUser(ctx, admin, 'POST', `/dashboard/api/users/${owner.uuid}/disable`)
      assert.equal(disable.statusCode, 403)
      const self = await asUser(ctx, admin, 'PATCH', `/dashboard/api/users/${admin.uuid}`, { role: 'owner' })
      assert.equal(self.statusCode, 409)
      assert.match(self.json().error.message, /cannot change the role of yourself/)
    })

    it("cannot reach another merchant's user", async () => {
      const owner = await signedIn(ctx, 'owner')
      const elsewhere = await activeUser(ctx, 'viewer', ctx.other.uuid)
      const change = await asUser(ctx, owner, 'PATCH', `/dashboard/api/users/${elsewhere.uuid}`, {
        role: 'admin',
      })
      assert.equal(change.statusCode, 404)
      const disable = await asUser(ctx, owner, 'POST', `/dashboard/api/users/${elsewhere.uuid}/disable`)
      assert.equal(disable.statusCode, 404)
      await signIn(ctx, elsewhere)
    })

    it('disables a user: their sessions end at once, the answer says how many, and it is audited', async () => {
      const admin = await signedIn(ctx, 'admin')
      const member = await signedIn(ctx, 'developer')
      const response = await asUser(ctx, admin, 'POST', `/dashboard/api/users/${member.uuid}/disable`)
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.json().user.status, 'disabled')
      assert.equal(response.json().sessions_revoked, 1)
      const me = await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: member.cookie })
      assert.equal(me.statusCode, 401)
      const audit = (await auditRows(ctx, 'user_disabled')).find((r) => r.target_id === member.uuid)
      assert.equal(audit?.via, 'dashboard')
      assert.equal(audit?.actor_user_uuid, admin.uuid)
      const again = await asUser(ctx, admin, 'POST', `/dashboard/api/users/${member.uuid}/disable`)
      assert.equal(again.statusCode, 409)
      assert.match(again.json().error.message, /already disabled/)
    })

    it('refuses to disable yourself or the last owner who can sign in, with a clear 409', async () => {
      const m = await ctx.newMerchant('Owners')
      const owner = await signedIn(ctx, 'owner', m.uuid)
      const self = await asUser(ctx, owner, 'POST', `/dashboard/api/users/${owner.uuid}/disable`)
      assert.equal(self.statusCode, 409)
      assert.equal(self.json().error.code, 'invalid_state')
      assert.match(self.json().error.message, /cannot disable yourself/)

      // With a second owner, one may demote or disable the other, but not leave none.
      const second = await signedIn(ctx, 'owner', m.uuid)
      const demoted = await asUser(ctx, second, 'PATCH', `/dashboard/api/users/${owner.uuid}`, {
        role: 'admin',
      })
      assert.equal(demoted.statusCode, 200, demoted.body)
      // The demoted owner is an admin now, from their next request on.
      const back = await asUser(ctx, owner, 'PATCH', `/dashboard/api/users/${second.uuid}`, { role: 'admin' })
      assert.equal(back.statusCode, 403)
      // An owner whose invitation is still open does not count: they cannot sign in.
      await invite(ctx, 'owner', newEmail(), m.uuid)
      const bySelf = await asUser(ctx, second, 'POST', `/dashboard/api/users/${second.uuid}/disable`)
      assert.equal(bySelf.statusCode, 409)
      assert.equal((await ctx.services.users.list(m.uuid)).filter((u) => u.role === 'owner').length, 2)
    })

    it('never leaves a merchant without an owner when two owners demote each other at once', async () => {
      const m = await ctx.newMerchant('Race')
      const a = await signedIn(ctx, 'owner', m.uuid)
      const b = await signedIn(ctx, 'owner', m.uuid)
      const [ab, ba] = await Promise.all([
        asUser(ctx, a, 'PATCH', `/dashboard/api/users/${b.uuid}`, { role: 'admin' }),
        asUser(ctx, b, 'PATCH', `/dashboard/api/users/${a.uuid}`, { role: 'admin' }),
      ])
      // One wins; the other is refused: 409 when it ran on the locked owners, 403 when its session already
      // read its user as an admin.
      const statuses = [ab.statusCode, ba.statusCode].sort()
      assert.equal(statuses[0], 200, `${ab.body} ${ba.body}`)
      assert.ok([403, 409].includes(statuses[1] as number), `${ab.body} ${ba.body}`)
      const owners = (await ctx.services.users.list(m.uuid)).filter((u) => u.role === 'owner')
      assert.equal(owners.length, 1)
    })

    it('needs the same Origin and the CSRF token for every change', async () => {
      const owner = await signedIn(ctx, 'owner')
      const member = await activeUser(ctx, 'viewer')
      const changes: ['POST' | 'PATCH' | 'PUT' | 'DELETE', string, unknown][] = [
        ['POST', '/dashboard/api/users/invitations', { email: newEmail(), role: 'viewer' }],
        ['PATCH', `/dashboard/api/users/${member.uuid}`, { role: 'admin' }],
        ['POST', `/dashboard/api/users/${member.uuid}/disable`, undefined],
        ['POST', '/dashboard/api/me/totp', undefined],
        ['POST', '/dashboard/api/me/totp/confirm', { code: '123456' }],
        ['DELETE', '/dashboard/api/me/totp', { code: '123456' }],
        ['PUT', '/dashboard/api/merchant/security', { require_totp: false }],
      ]
      for (const [method, url, body] of changes) {
        const noCsrf = await dashboard(ctx, method, url, { cookie: owner.cookie, body })
        assert.equal(noCsrf.statusCode, 403, `${method} ${url}: ${noCsrf.body}`)
        const wrongOrigin = await dashboard(ctx, method, url, {
          cookie: owner.cookie,
          csrf: owner.csrf,
          origin: 'https://evil.test',
          body,
        })
        assert.equal(wrongOrigin.statusCode, 403, `${method} ${url}: ${wrongOrigin.body}`)
      }
      const listed = (await ctx.services.users.list(ctx.merchant.uuid)).find((u) => u.uuid === member.uuid)
      assert.equal(listed?.role, 'viewer')
      assert.equal(listed?.status, 'active')
    })
  })

  describe(`dashboard audit log (${backend})`, () => {
    const ctx = suiteContext(backend)

    it("reads the merchant's rows newest first, page by page, with the actor's email and nothing of others", async () => {
      const m = await ctx.newMerchant('Audited')
      const owner = await signedIn(ctx, 'owner', m.uuid)
      const member = await activeUser(ctx, 'viewer', m.uuid)
      for (const role of ['support', 'developer', 'admin'] as const)
        await asUser(ctx, owner, 'PATCH', `/dashboard/api/users/${member.uuid}`, { role })
      // Another merchant's activity never shows.
      await signedIn(ctx, 'owner', ctx.other.uuid)

      const seen: Record<string, unknown>[] = []
      let cursor: string | null = null
      let pages = 0
      do {
        const url: string = `/dashboard/api/audit-log?per_page=2${cursor ? `&cursor=${cursor}` : ''}`
        const response = await asUser(ctx, owner, 'GET', url)
        assert.equal(response.statusCode, 200, response.body)
        const body = response.json()
        assert.ok(body.data.length <= 2)
        seen.push(...body.data)
        cursor = body.next_cursor
        pages++
      } while (cursor && pages < 20)
      assert.equal(cursor, null)

      const stored = await ctx.db
        .selectFrom('dashboard_audit_log')
        .select(['uuid'])
        .where('merchant_uuid', '=', m.uuid)
        .orderBy('created_at', 'desc')
        .orderBy('uuid', 'desc')
        .execute()
      assert.deepEqual(
        seen.map((r) => r.uuid),
        stored.map((r) => r.uuid),
      )
      // Invited (cli), accepted, signed in, three role changes, the member accepted: at least 7.
      assert.ok(seen.length >= 7, String(seen.length))
      const [newest] = seen
      assert.deepEqual(Object.keys(newest ?? {}).sort(), [
        'action',
        'actor_email',
        'actor_user_uuid',
        'at',
        'details',
        'ip',
        'mode',
        'target_id',
        'target_kind',
        'target_path',
        'target_type',
        'user_agent',
        'uuid',
        'via',
      ])
      assert.equal(newest?.action, 'user_role_changed')
      assert.equal(newest?.actor_email, owner.email)
      assert.equal(newest?.actor_user_uuid, owner.uuid)
      assert.equal(newest?.via, 'dashboard')
      assert.equal(newest?.ip, '127.0.0.1')
      assert.equal(newest?.user_agent, 'dashboard-test')
      assert.equal(newest?.target_type, 'user')
      assert.equal(newest?.target_id, member.uuid)
      assert.equal(newest?.target_kind, 'user')
      assert.equal(newest?.target_path, '/settings/people')
      assert.deepEqual(newest?.details, { email: member.email, from: 'developer', to: 'admin' })
      const times = seen.map((r) => Date.parse(r.at as string))
      assert.deepEqual(
        times,
        [...times].sort((x, y) => y - x),
      )
      const cliInvite = seen.find((r) => r.action === 'user_invited' && r.via === 'cli')
      assert.equal(cliInvite?.actor_email, null)
    })

    it('lets an admin read it, and refuses a cursor of another list', async () => {
      const admin = await signedIn(ctx, 'admin')
      const response = await asUser(ctx, admin, 'GET', '/dashboard/api/audit-log')
      assert.equal(response.statusCode, 200, response.body)
      assert.ok(response.json().data.length > 0)
      const foreign = Buffer.from(
        JSON.stringify(['n', new Date().toISOString(), '0190f0c4-0000-7000-8000-000000000000', 'x']),
      ).toString('base64url')
      const refused = await asUser(ctx, admin, 'GET', `/dashboard/api/audit-log?cursor=${foreign}`)
      assert.equal(refused.statusCode, 422)
      assert.equal(refused.json().error.code, 'validation_failed')
    })
  })
}

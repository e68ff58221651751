import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { USER_ROLES } from '../../../src/db/enums.ts'
import { totpCode } from '../../../src/lib/totp.ts'
import { ROLE_PERMISSIONS } from '../../../src/modules/users/roles.ts'
import {
  asUser,
  auditRows,
  dashboard,
  enrol,
  forgetLastCode,
  type Session,
  signedIn,
} from '../../helpers/dashboard.ts'
import { backends, call, type TestMerchant } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const REVEAL = '/dashboard/api/webhook/secret/reveal'

for (const backend of backends()) {
  describe(`the webhook signing secret in the dashboard (${backend})`, () => {
    const ctx = suiteContext(backend)

    /** The secret of the merchant's webhook in `mode`, as its API key reads it. */
    const secretOf = async (merchant: TestMerchant, mode: 'test' | 'live') => {
      const res = await call(ctx, 'GET', '/integration/webhook', undefined, { as: { merchant, mode } })
      assert.equal(res.statusCode, 200, res.body)
      ctx.secrets.push(res.json().secret)
      return res.json().secret as string
    }
    const reveal = (user: Session, mode: 'test' | 'live' = 'test', code?: string) =>
      dashboard(ctx, 'POST', REVEAL, {
        mode,
        cookie: user.cookie,
        csrf: user.csrf,
        ...(code !== undefined && { headers: { 'x-dashboard-totp': code } }),
      })
    const revealRows = async (user: Session) =>
      (await auditRows(ctx, 'webhook_secret_revealed')).filter((row) => row.actor_user_uuid === user.uuid)

    for (const role of USER_ROLES) {
      const allowed = ROLE_PERMISSIONS[role].includes('developer_tools')
      it(`${role}: ${allowed ? 'sees the secret of the mode asked, audited without it' : 'is refused (403), and nothing is audited'}`, async () => {
        const user = await signedIn(ctx, role)
        for (const mode of ['test', 'live'] as const) {
          const res = await reveal(user, mode)
          if (!allowed) {
            assert.equal(res.statusCode, 403, res.body)
            assert.equal(res.json().error.code, 'forbidden')
            continue
          }
          assert.equal(res.statusCode, 200, res.body)
          assert.equal(res.headers['cache-control'], 'no-store')
          const shown = res.json()
          assert.equal(shown.secret, await secretOf(ctx.merchant, mode))
          assert.match(shown.secret, /^whsec_/)
          assert.equal(shown.previous_secret_expires_at, null)
        }
        const rows = await revealRows(user)
        assert.deepEqual(
          rows.map((row) => [row.mode, row.target_type, row.target_id, row.merchant_uuid, row.details]),
          allowed
            ? [
                ['test', 'webhook', 'test', ctx.merchant.uuid, null],
                ['live', 'webhook', 'live', ctx.merchant.uuid, null],
              ]
            : [],
        )
        const written = JSON.stringify(await auditRows(ctx, 'webhook_secret_revealed'))
        assert.ok(!written.includes(await secretOf(ctx.merchant, 'test')))
        // The reveal's own row, not the generic one of a page's call.
        const generic = (await auditRows(ctx, 'api_operation')).filter(
          (row) => row.actor_user_uuid === user.uuid,
        )
        assert.deepEqual(generic, [])
      })
    }

    it("masks the secret in the configuration's answers to a page; a rotation shows the new one once", async () => {
      const developer = await signedIn(ctx, 'developer')
      const secret = await secretOf(ctx.merchant, 'test')
      const masked = `whsec_••••${secret.slice(-4)}`
      const read = await dashboard(ctx, 'GET', '/integration/webhook', {
        mode: 'test',
        cookie: developer.cookie,
      })
      assert.equal(read.statusCode, 200, read.body)
      assert.equal(read.json().secret, masked)
      assert.ok(!read.body.includes(secret))
      const updated = await dashboard(ctx, 'PUT', '/integration/webhook', {
        mode: 'test',
        cookie: developer.cookie,
        csrf: developer.csrf,
        body: { url: null },
      })
      assert.equal(updated.statusCode, 200, updated.body)
      assert.equal(updated.json().secret, masked)
      const rotated = await dashboard(ctx, 'POST', '/integration/webhook/secret/rotate', {
        mode: 'test',
        cookie: developer.cookie,
        csrf: developer.csrf,
        body: { overlap_seconds: 0 },
      })
      assert.equal(rotated.statusCode, 200, rotated.body)
      ctx.secrets.push(rotated.json().secret)
      assert.equal(rotated.json().secret, await secretOf(ctx.merchant, 'test'))
      // An API key reads the secret itself, as ever.
      assert.notEqual(await secretOf(ctx.merchant, 'test'), masked)
      // Not a call of the merchant API: a key cannot reach the reveal.
      const byKey = await call(ctx, 'POST', REVEAL)
      assert.equal(byKey.statusCode, 404, byKey.body)
    })

    describe('with a second factor', () => {
      let m: TestMerchant
      let owner: Session
      let totpSecret: string
      before(async () => {
        m = await ctx.newMerchant('Second factor')
        owner = await signedIn(ctx, 'owner', m.uuid)
        totpSecret = await enrol(ctx, owner)
      })

      it('needs a current code from a user who has one, even when the merchant does not require it', async () => {
        const missing = await reveal(owner)
        assert.equal(missing.statusCode, 403, missing.body)
        assert.equal(missing.json().error.code, 'forbidden')
        assert.deepEqual(
          [missing.json().error.details.totp_required, missing.json().error.details.reason],
          [true, 'missing'],
        )
        for (const code of ['000000', totpCode(totpSecret, new Date(Date.now() - 10 * 60_000))]) {
          const wrong = await reveal(owner, 'test', code)
          assert.equal(wrong.statusCode, 403, wrong.body)
          assert.equal(wrong.json().error.details.reason, 'invalid')
        }
        assert.deepEqual(await revealRows(owner), [])

        const code = totpCode(totpSecret)
        const shown = await reveal(owner, 'test', code)
        assert.equal(shown.statusCode, 200, shown.body)
        assert.equal(shown.json().secret, await secretOf(m, 'test'))
        assert.deepEqual(
          (await revealRows(owner)).map((row) => row.details),
          [{ totp_step_up: true }],
        )
        // A code is good once.
        const again = await reveal(owner, 'test', code)
        assert.equal(again.statusCode, 403, again.body)
        await forgetLastCode(ctx, owner.uuid)
      })

      it('needs it from everyone when the merchant requires a second factor', async () => {
        const required = await asUser(ctx, owner, 'PUT', '/dashboard/api/merchant/security', {
          require_totp: true,
        })
        assert.equal(required.statusCode, 200, required.body)
        await forgetLastCode(ctx, owner.uuid)
        const missing = await reveal(owner, 'live')
        assert.equal(missing.statusCode, 403, missing.body)
        const shown = await reveal(owner, 'live', totpCode(totpSecret))
        assert.equal(shown.statusCode, 200, shown.body)
        assert.equal(shown.json().secret, await secretOf(m, 'live'))
      })
    })
  })
}

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { totpCode } from '../../../src/lib/totp.ts'
import { asUser, auditRows, dashboard, enrol, newEmail, signedIn } from '../../helpers/dashboard.ts'
import { backends } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

/** More attempts at once than any limit: every one of them sees the same count unless it is reserved first. */
const BURST = 30

const statuses = (responses: { statusCode: number }[]) => {
  const counts: Record<number, number> = {}
  for (const r of responses) counts[r.statusCode] = (counts[r.statusCode] ?? 0) + 1
  return counts
}

for (const backend of backends()) {
  describe(`dashboard throttles under bursts of attempts (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('checks exactly 5 of 30 wrong passwords sent at once for one email; a right sign-in before counts for nothing', async () => {
      const user = await signedIn(ctx, 'viewer')
      const answers = await Promise.all(
        Array.from({ length: BURST }, (_, i) =>
          dashboard(ctx, 'POST', '/dashboard/api/session', {
            body: { email: user.email, password: 'wrong-password' },
            ip: `10.20.0.${i}`,
          }),
        ),
      )
      assert.deepEqual(statuses(answers), { 401: 5, 429: BURST - 5 })
      const failed = (await auditRows(ctx, 'login_failed')).filter((r) => r.target_id === user.email)
      assert.equal(failed.length, 5)
      for (const row of failed) assert.equal(row.actor_user_uuid, user.uuid)
      const succeeded = (await auditRows(ctx, 'login_succeeded')).filter(
        (r) => r.actor_user_uuid === user.uuid,
      )
      assert.equal(succeeded.length, 1)
    })

    it('checks exactly 20 of 30 sign-ins sent at once from one address', async () => {
      const answers = await Promise.all(
        Array.from({ length: BURST }, () =>
          dashboard(ctx, 'POST', '/dashboard/api/session', {
            body: { email: newEmail('guess'), password: 'x' },
            ip: '10.21.0.1',
          }),
        ),
      )
      const limit = ctx.config.dashboard.loginMaxFailuresPerAddress
      assert.deepEqual(statuses(answers), { 401: limit, 429: BURST - limit })
      const failed = (await auditRows(ctx, 'login_failed')).filter((r) => r.ip === '10.21.0.1')
      assert.equal(failed.length, limit)
    })

    it('checks exactly 5 of 30 wrong codes sent at once with the right password', async () => {
      const user = await signedIn(ctx, 'viewer')
      const secret = await enrol(ctx, user)
      const answers = await Promise.all(
        Array.from({ length: BURST }, (_, i) =>
          dashboard(ctx, 'POST', '/dashboard/api/session', {
            body: { email: user.email, password: user.password, totp_code: '000000' },
            ip: `10.22.0.${i}`,
          }),
        ),
      )
      assert.deepEqual(statuses(answers), { 401: 5, 429: BURST - 5 })
      const failed = (await auditRows(ctx, 'login_failed')).filter((r) => r.target_id === user.email)
      assert.equal(failed.length, 5)
      for (const row of failed) assert.deepEqual(row.details, { reason: 'totp_code' })
      const right = await dashboard(ctx, 'POST', '/dashboard/api/session', {
        body: { email: user.email, password: user.password, totp_code: totpCode(secret) },
        ip: '10.22.1.1',
      })
      assert.equal(right.statusCode, 429)
    })

    it('checks exactly 5 of 30 wrong codes sent at once to confirm, and to turn off, the second factor', async () => {
      const enrolling = await signedIn(ctx, 'viewer')
      const started = await asUser(ctx, enrolling, 'POST', '/dashboard/api/me/totp')
      ctx.secrets.push(started.json().secret)
      const confirms = await Promise.all(
        Array.from({ length: BURST }, () =>
          asUser(ctx, enrolling, 'POST', '/dashboard/api/me/totp/confirm', { code: '000000' }),
        ),
      )
      assert.deepEqual(statuses(confirms), { 422: 5, 429: BURST - 5 })

      const enrolled = await signedIn(ctx, 'viewer')
      await enrol(ctx, enrolled)
      const removals = await Promise.all(
        Array.from({ length: BURST }, () =>
          asUser(ctx, enrolled, 'DELETE', '/dashboard/api/me/totp', { code: '000000' }),
        ),
      )
      assert.deepEqual(statuses(removals), { 422: 5, 429: BURST - 5 })
      for (const who of [enrolling, enrolled]) {
        const rejected = (await auditRows(ctx, 'totp_code_rejected')).filter((r) => r.target_id === who.uuid)
        assert.equal(rejected.length, 5)
      }
    })

    it('checks only the one step-up code left of 30 sent at once for a payout', async () => {
      const m = await ctx.newMerchant('Burst step-up')
      const owner = await signedIn(ctx, 'owner', m.uuid)
      await enrol(ctx, owner)
      const required = await asUser(ctx, owner, 'PUT', '/dashboard/api/merchant/security', {
        require_totp: true,
      })
      assert.equal(required.statusCode, 200, required.body)
      const payout = (i: number) =>
        dashboard(ctx, 'POST', '/integration/payouts', {
          mode: 'test',
          cookie: owner.cookie,
          csrf: owner.csrf,
          body: {
            external_id: `burst-${Date.now()}-${i}`,
            amount: 1000,
            currency: 'USD',
            method: 'usdt_wallet',
            destination: { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' },
          },
          headers: { 'idempotency-key': `burst-${Date.now()}-${i}`, 'x-dashboard-totp': '000000' },
        })
      for (let i = 0; i < 4; i++) assert.equal((await payout(i)).statusCode, 403)
      const answers = await Promise.all(Array.from({ length: BURST }, (_, i) => payout(100 + i)))
      assert.deepEqual(statuses(answers), { 403: 1, 429: BURST - 1 })
      const rejected = (await auditRows(ctx, 'totp_code_rejected')).filter((r) => r.target_id === owner.uuid)
      assert.equal(rejected.length, 5)
    })
  })
}

import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { totpCode } from '../../../src/lib/totp.ts'
import {
  asUser,
  auditRows,
  dashboard,
  enrol,
  forgetLastCode,
  type Session,
  signedIn,
} from '../../helpers/dashboard.ts'
import {
  backends,
  extId,
  paidTransaction,
  type TestContext,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const TRC20 = { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' }
const newPayout = () => ({
  external_id: extId('po'),
  amount: 1000,
  currency: 'USD',
  method: 'usdt_wallet',
  destination: TRC20,
})
let counter = 0
const idempotencyKey = () => `dash-payout-${Date.now()}-${counter++}`

const payouts = (ctx: TestContext, merchant: TestMerchant) =>
  ctx.db.selectFrom('payouts').select('uuid').where('merchant_uuid', '=', merchant.uuid).execute()

for (const backend of backends()) {
  describe(`payouts from the dashboard, with the TOTP step (${backend})`, () => {
    const ctx = suiteContext(backend)

    const create = (user: Session, extra: { code?: string; csrf?: string | null; key?: string } = {}) =>
      dashboard(ctx, 'POST', '/integration/payouts', {
        mode: 'test',
        cookie: user.cookie,
        ...(extra.csrf !== null && { csrf: extra.csrf ?? user.csrf }),
        body: newPayout(),
        headers: {
          'idempotency-key': extra.key ?? idempotencyKey(),
          ...(extra.code !== undefined && { 'x-dashboard-totp': extra.code }),
        },
      })

    /** A quote for the payout `create` makes: answered 200. */
    const quotes = async (user: Session) => {
      const quote = await dashboard(
        ctx,
        'GET',
        '/integration/payouts/quote?amount=1000&currency=USD&method=usdt_wallet',
        { mode: 'test', cookie: user.cookie },
      )
      assert.equal(quote.statusCode, 200, quote.body)
    }

    it('needs no code while the merchant does not require a second factor', async () => {
      const m = await ctx.newMerchant('No TOTP')
      await paidTransaction(ctx, { amount: 100000, currency: 'USD' }, { merchant: m })
      const owner = await signedIn(ctx, 'owner', m.uuid)
      await quotes(owner)
      const made = await create(owner)
      assert.equal(made.statusCode, 201, made.body)
      assert.equal(made.json().status === 'processing' || made.json().status === 'completed', true)
      const audit = (await auditRows(ctx, 'api_operation')).filter((r) => r.target_id === made.json().uuid)
      assert.equal(audit.length, 1)
      assert.deepEqual(audit[0]?.details, { operation: 'createPayout' })
    })

    describe('when the merchant requires a second factor', () => {
      let m: TestMerchant
      let owner: Session
      let secret: string
      before(async () => {
        m = await ctx.newMerchant('TOTP required')
        await paidTransaction(ctx, { amount: 100000, currency: 'USD' }, { merchant: m })
        owner = await signedIn(ctx, 'owner', m.uuid)
        secret = await enrol(ctx, owner)
        const required = await asUser(ctx, owner, 'PUT', '/dashboard/api/merchant/security', {
          require_totp: true,
        })
        assert.equal(required.statusCode, 200, required.body)
      })

      it('refuses a payout without a code, or with a wrong one (403 totp_required), and makes none', async () => {
        const missing = await create(owner)
        assert.equal(missing.statusCode, 403, missing.body)
        assert.equal(missing.json().error.code, 'forbidden')
        assert.equal(missing.json().error.details.totp_required, true)
        assert.equal(missing.json().error.details.reason, 'missing')

        for (const code of ['000000', 'abc', totpCode(secret, new Date(Date.now() - 10 * 60_000))]) {
          const wrong = await create(owner, { code })
          assert.equal(wrong.statusCode, 403, wrong.body)
          assert.equal(wrong.json().error.code, 'forbidden')
          assert.equal(wrong.json().error.details.totp_required, true)
          assert.equal(wrong.json().error.details.reason, 'invalid')
        }
        assert.deepEqual(await payouts(ctx, m), [])
        const rejected = (await auditRows(ctx, 'totp_code_rejected')).filter(
          (r) => r.target_id === owner.uuid,
        )
        assert.equal(rejected.length, 3)
        assert.deepEqual(rejected[0]?.details, {
          while: 'step_up',
          operation: 'createPayout',
        })
        // The quote moves nothing: it needs no code.
        await quotes(owner)
        await ctx.db.deleteFrom('dashboard_audit_log').where('action', '=', 'totp_code_rejected').execute()
      })

      it('makes the payout with a current code, once: the same code again is refused', async () => {
        const code = totpCode(secret)
        // A request refused before the step (no CSRF token) does not spend the code.
        const noCsrf = await create(owner, { code, csrf: null })
        assert.equal(noCsrf.statusCode, 403)
        assert.equal(noCsrf.json().error.details?.totp_required, undefined)

        const made = await create(owner, { code })
        assert.equal(made.statusCode, 201, made.body)
        const audit = (await auditRows(ctx, 'api_operation')).filter((r) => r.target_id === made.json().uuid)
        assert.equal(audit.length, 1)
        assert.deepEqual(audit[0]?.details, {
          operation: 'createPayout',
          totp_step_up: true,
        })

        const replayed = await create(owner, { code })
        assert.equal(replayed.statusCode, 403, replayed.body)
        assert.equal(replayed.json().error.details.totp_required, true)
        assert.equal((await payouts(ctx, m)).length, 1)
      })

      it('throttles wrong codes (429) like the other codes of a session', async () => {
        await forgetLastCode(ctx, owner.uuid)
        let last = await create(owner, { code: '000000' })
        for (let i = 0; i < 10 && last.statusCode !== 429; i++) last = await create(owner, { code: '000000' })
        assert.equal(last.statusCode, 429, last.body)
        assert.equal(last.json().error.code, 'rate_limited')
        // Even a right code waits out the window.
        const right = await create(owner, { code: totpCode(secret) })
        assert.equal(right.statusCode, 429)
        assert.equal((await payouts(ctx, m)).length, 1)
      })
    })
  })
}

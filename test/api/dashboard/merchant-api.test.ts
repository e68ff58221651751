import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { DASHBOARD_OPERATIONS } from '../../../src/modules/dashboard/access.ts'
import { ROLE_PERMISSIONS } from '../../../src/modules/users/roles.ts'
import { activeUser, auditRows, dashboard, signIn } from '../../helpers/dashboard.ts'
import { backends, call, paidTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const USER_ROLES = Object.keys(ROLE_PERMISSIONS) as (keyof typeof ROLE_PERMISSIONS)[]

for (const backend of backends()) {
  describe(`the merchant API in the dashboard (${backend})`, () => {
    const ctx = suiteContext(backend)
    let owner: Awaited<ReturnType<typeof signIn>>
    before(async () => {
      owner = await signIn(ctx, await activeUser(ctx, 'owner'))
    })

    it('lists and reads the signed-in merchant’s payments of the mode in the path, and only those', async () => {
      const mine = await paidTransaction(ctx, { description: 'dashboard-visible' })
      const live = await paidTransaction(ctx, { description: 'dashboard-live' }, { mode: 'live' })
      const theirs = await paidTransaction(ctx, {}, { merchant: ctx.other })

      const test = await dashboard(ctx, 'GET', '/integration/transactions?per_page=100', {
        mode: 'test',
        cookie: owner.token,
      })
      assert.equal(test.statusCode, 200, test.body)
      assert.equal(test.headers['cache-control'], 'no-store')
      const testUuids = test.json().data.map((t: { uuid: string }) => t.uuid)
      assert.ok(testUuids.includes(mine.uuid))
      assert.ok(!testUuids.includes(live.uuid))
      assert.ok(!testUuids.includes(theirs.uuid))

      const liveList = await dashboard(ctx, 'GET', '/integration/transactions', {
        mode: 'live',
        cookie: owner.token,
      })
      assert.deepEqual(
        liveList.json().data.map((t: { uuid: string }) => t.uuid),
        [live.uuid],
      )
      // The same answer the API gives with the merchant's key.
      const one = await dashboard(ctx, 'GET', `/integration/transactions/${mine.uuid}`, {
        mode: 'test',
        cookie: owner.token,
      })
      const byKey = await call(ctx, 'GET', `/integration/transactions/${mine.uuid}`)
      assert.deepEqual(one.json(), byKey.json())
      // Another merchant's payment, or one of the other mode, is not found.
      for (const [mode, uuid] of [
        ['test', theirs.uuid],
        ['test', live.uuid],
        ['live', mine.uuid],
      ] as const) {
        const res = await dashboard(ctx, 'GET', `/integration/transactions/${uuid}`, {
          cookie: owner.token,
          mode,
        })
        assert.equal(res.statusCode, 404, `${mode} ${uuid}`)
        assert.equal(res.json().error.code, 'not_found')
      }
    })

    it('answers 401 without a live session, or with a mode that is not test or live', async () => {
      for (const call of [
        {},
        { cookie: 'f'.repeat(43) },
        { cookie: owner.token, headers: { 'x-dashboard-mode': 'prod' } },
      ]) {
        const res = await dashboard(ctx, 'GET', '/integration/balances', { mode: 'test', ...call })
        assert.equal(res.statusCode, 401, res.body)
        assert.equal(res.json().error.code, 'unauthorized')
      }
    })

    it('an API key is still an API key: with one, the header and the cookie are not looked at', async () => {
      const live = await paidTransaction(ctx, {}, { mode: 'live' })
      const res = await dashboard(ctx, 'GET', `/integration/transactions/${live.uuid}`, {
        mode: 'live',
        cookie: owner.token,
        headers: { 'x-api-key': ctx.merchant.keys.test.secret },
      })
      // The test key reads test mode only, whatever the page header says.
      assert.equal(res.statusCode, 404)
    })

    it('refuses the operations the dashboard has not been given (fail closed), and changes nothing', async () => {
      const refused = [
        [
          'POST',
          '/integration/transactions',
          { amount: 100, currency: 'RUB', payment_method: 'card', external_id: 'x' },
        ],
        ['GET', `/integration/transactions/${crypto.randomUUID()}/h2h`, undefined],
      ] as const
      for (const [method, url, body] of refused) {
        const res = await dashboard(ctx, method, url, {
          mode: 'test',
          cookie: owner.token,
          csrf: owner.csrf,
          body,
        })
        assert.equal(res.statusCode, 403, `${method} ${url}: ${res.body}`)
        assert.match(res.json().error.message, /not available in the dashboard/)
      }
      for (const operation of ['createTransaction', 'getTransactionRequisites'])
        assert.ok(!(operation in DASHBOARD_OPERATIONS))
    })

    describe('a refund from the dashboard', () => {
      const refundBody = { amount_minor: 1000, reason: 'dashboard test' }
      const refund = (
        session: { token: string; csrf: string },
        uuid: string,
        key: string,
        extra: { origin?: string | null; csrf?: string } = {},
      ) =>
        dashboard(ctx, 'POST', '/integration/refunds', {
          mode: 'test',
          cookie: session.token,
          csrf: extra.csrf ?? session.csrf,
          ...(extra.origin !== undefined ? { origin: extra.origin } : {}),
          headers: { 'idempotency-key': key },
          body: { ...refundBody, transaction_uuid: uuid },
        })

      for (const role of USER_ROLES) {
        const allowed = ROLE_PERMISSIONS[role].includes('refund')
        it(`${role}: ${allowed ? 'may refund' : 'is refused (403), and nothing is refunded'}`, async () => {
          const session = await signIn(ctx, await activeUser(ctx, role))
          const paid = await paidTransaction(ctx)
          const res = await refund(session, paid.uuid, `dash-${role}-${paid.uuid}`)
          if (allowed) {
            assert.equal(res.statusCode, 201, res.body)
            assert.equal(res.json().transaction_uuid, paid.uuid)
          } else {
            assert.equal(res.statusCode, 403, res.body)
            assert.equal(res.json().error.code, 'forbidden')
            assert.deepEqual(res.json().error.details, { permission: 'refund' })
          }
          const list = await call(ctx, 'GET', `/integration/refunds?transaction_uuid=${paid.uuid}`)
          assert.equal(list.json().data.length, allowed ? 1 : 0)
        })
      }

      it('needs the session’s CSRF token and the dashboard’s Origin', async () => {
        const paid = await paidTransaction(ctx)
        const other = await signIn(ctx, await activeUser(ctx, 'owner'))
        for (const extra of [
          { csrf: '' },
          { csrf: other.csrf },
          { origin: null },
          { origin: 'http://evil.test' },
        ]) {
          const res = await refund(owner, paid.uuid, `dash-csrf-${paid.uuid}`, extra)
          assert.equal(res.statusCode, 403, JSON.stringify(extra))
        }
        const list = await call(ctx, 'GET', `/integration/refunds?transaction_uuid=${paid.uuid}`)
        assert.equal(list.json().data.length, 0)
      })

      it('is idempotent: a retry with the same key answers the same refund, and is audited once', async () => {
        const paid = await paidTransaction(ctx)
        const key = `dash-retry-${paid.uuid}`
        const first = await refund(owner, paid.uuid, key)
        const again = await refund(owner, paid.uuid, key)
        assert.equal(first.statusCode, 201, first.body)
        assert.equal(again.statusCode, 201)
        assert.equal(again.headers['idempotent-replayed'], 'true')
        assert.equal(again.json().uuid, first.json().uuid)
        const rows = (await auditRows(ctx, 'api_operation')).filter((r) => r.target_id === first.json().uuid)
        assert.equal(rows.length, 1)
        assert.equal(rows[0]?.actor_user_uuid, owner.body.user.uuid)
        assert.equal(rows[0]?.mode, 'test')
        assert.equal(rows[0]?.via, 'dashboard')
      })

      it('answers the API’s own errors: more than what remains is refused as the API refuses it', async () => {
        const paid = await paidTransaction(ctx, { amount: 5000 })
        const body = { transaction_uuid: paid.uuid, amount_minor: 999999 }
        const res = await dashboard(ctx, 'POST', '/integration/refunds', {
          mode: 'test',
          cookie: owner.token,
          csrf: owner.csrf,
          headers: { 'idempotency-key': `dash-over-${paid.uuid}` },
          body,
        })
        const api = await call(ctx, 'POST', '/integration/refunds', body, {
          auth: 'signature',
          idempotencyKey: `api-over-${paid.uuid}`,
        })
        assert.equal(res.statusCode, api.statusCode)
        assert.equal(res.json().error.code, api.json().error.code)
      })
    })
  })
}

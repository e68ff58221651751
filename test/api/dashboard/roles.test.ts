import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { before, describe, it } from 'node:test'
import { USER_ROLES, type UserRole } from '../../../src/db/enums.ts'
import { DASHBOARD_OPERATIONS, TEST_MODE_OPERATIONS } from '../../../src/modules/dashboard/access.ts'
import { can, type Permission } from '../../../src/modules/users/roles.ts'
import { activeUser, dashboard, signIn } from '../../helpers/dashboard.ts'
import { backends, extId, paidTransaction, postTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

/** One request of an action, in a role's session: its method, address, body and extra headers. */
interface Action {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  body?: unknown
  headers?: Record<string, string>
}

interface Fixtures {
  transaction: { uuid: string; external_id: string }
}

let counter = 0
const idempotent = () => ({ 'idempotency-key': `roles-${Date.now()}-${counter++}` })
const TRC20 = { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' }

/** A sandbox report about a transaction or payout that need not exist (an allowed role then gets a 404). */
const sandboxTransaction = (outcome: string) => (): Action => ({
  method: 'POST',
  url: `/integration/sandbox/transactions/${randomUUID()}/${outcome}`,
})
const sandboxPayout = (outcome: string) => (): Action => ({
  method: 'POST',
  url: `/integration/sandbox/payouts/${randomUUID()}/${outcome}`,
})

/**
 * Every operation of DASHBOARD_OPERATIONS as a page would call it, with a valid body where there is one (the
 * objects named may not exist: an allowed role then gets a 404, which is not a refusal).
 */
const OPERATIONS: Record<string, (f: Fixtures) => Action> = {
  listTransactions: () => ({ method: 'GET', url: '/integration/transactions' }),
  getTransaction: (f) => ({ method: 'GET', url: `/integration/transactions/${f.transaction.uuid}` }),
  getTransactionByExternalId: (f) => ({
    method: 'GET',
    url: `/integration/transactions/by-external-id/${f.transaction.external_id}`,
  }),
  listRefunds: () => ({ method: 'GET', url: '/integration/refunds' }),
  getRefund: () => ({ method: 'GET', url: `/integration/refunds/${randomUUID()}` }),
  createRefund: (f) => ({
    method: 'POST',
    url: '/integration/refunds',
    body: { transaction_uuid: f.transaction.uuid, amount_minor: 100 },
    headers: idempotent(),
  }),
  listBalances: () => ({ method: 'GET', url: '/integration/balances' }),
  getBalanceSummary: () => ({ method: 'GET', url: '/integration/balances/summary?from=2026-11-01' }),
  listBalanceTransactions: () => ({ method: 'GET', url: '/integration/balance-transactions' }),
  getBalanceTransaction: () => ({ method: 'GET', url: `/integration/balance-transactions/${randomUUID()}` }),
  listRates: () => ({ method: 'GET', url: '/integration/rates' }),
  listEvents: () => ({ method: 'GET', url: '/integration/events' }),
  getEvent: () => ({ method: 'GET', url: `/integration/events/${randomUUID()}` }),
  listPayouts: () => ({ method: 'GET', url: '/integration/payouts' }),
  getPayout: () => ({ method: 'GET', url: `/integration/payouts/${randomUUID()}` }),
  quotePayout: () => ({
    method: 'GET',
    url: '/integration/payouts/quote?amount=10000&currency=USD&method=usdt_wallet',
  }),
  createPayout: () => ({
    method: 'POST',
    url: '/integration/payouts',
    body: {
      external_id: extId('po'),
      amount: 1000,
      currency: 'USD',
      method: 'usdt_wallet',
      destination: TRC20,
    },
    headers: idempotent(),
  }),
  listWebhookDeliveries: () => ({ method: 'GET', url: '/integration/webhook/deliveries' }),
  getWebhookDelivery: () => ({ method: 'GET', url: `/integration/webhook/deliveries/${randomUUID()}` }),
  getWebhookConfig: () => ({ method: 'GET', url: '/integration/webhook' }),
  updateWebhookConfig: () => ({
    method: 'PUT',
    url: '/integration/webhook',
    body: { url: 'https://shop.example/webhooks', enabled: false },
  }),
  rotateWebhookSecret: () => ({
    method: 'POST',
    url: '/integration/webhook/secret/rotate',
    body: { overlap_seconds: 60 },
  }),
  sendTestWebhook: () => ({ method: 'POST', url: '/integration/webhook/test' }),
  redeliverWebhook: () => ({
    method: 'POST',
    url: `/integration/webhook/deliveries/${randomUUID()}/redeliver`,
  }),
  simulateTransactionPaid: sandboxTransaction('paid'),
  simulateTransactionFailed: sandboxTransaction('failed'),
  simulateTransactionExpired: sandboxTransaction('expired'),
  simulateTransactionFailedThenPaid: sandboxTransaction('failed-then-paid'),
  simulatePayoutCompleted: sandboxPayout('completed'),
  simulatePayoutFailed: sandboxPayout('failed'),
  dashboardStats: () => ({ method: 'GET', url: '/dashboard/api/stats?days=7' }),
  dashboardMerchantProfile: () => ({ method: 'GET', url: '/dashboard/api/merchant' }),
  dashboardDeliveryAttempts: () => ({
    method: 'GET',
    url: `/dashboard/api/webhook/deliveries/${randomUUID()}/attempts`,
  }),
  dashboardSearch: (f) => ({ method: 'GET', url: `/dashboard/api/search?q=${f.transaction.external_id}` }),
  revealWebhookSecret: () => ({ method: 'POST', url: '/dashboard/api/webhook/secret/reveal' }),
}

type Session = Awaited<ReturnType<typeof signIn>> & { role: UserRole }

for (const backend of backends()) {
  describe(`the roles table, for every role and action (${backend})`, () => {
    const ctx = suiteContext(backend)
    const sessions = new Map<UserRole, Session>()
    let fixtures: Fixtures
    before(async () => {
      for (const role of USER_ROLES)
        sessions.set(role, { ...(await signIn(ctx, await activeUser(ctx, role))), role })
      // 1000.00 USD settles 1000 USDT, available at once in test mode: enough for every allowed payout.
      await paidTransaction(ctx, { amount: 100000, currency: 'USD' })
      const paid = await paidTransaction(ctx)
      fixtures = { transaction: { uuid: paid.uuid, external_id: paid.external_id } }
    })

    /** Makes `operation`'s request (with its body and headers, if any) in `role`'s session, in `mode`. */
    const perform = (role: UserRole, operation: string, mode: 'test' | 'live') => {
      const session = sessions.get(role) as Session
      const action = (OPERATIONS[operation] as (f: Fixtures) => Action)(fixtures)
      return dashboard(ctx, action.method, action.url, {
        mode,
        cookie: session.token,
        csrf: session.csrf,
        ...(action.body !== undefined && { body: action.body }),
        ...(action.headers && { headers: action.headers }),
      })
    }

    it('has a request for every operation the dashboard may call, and no other', () => {
      assert.deepEqual(Object.keys(OPERATIONS).sort(), Object.keys(DASHBOARD_OPERATIONS).sort())
    })

    for (const [operation, permission] of Object.entries(DASHBOARD_OPERATIONS))
      it(`${operation} (${permission}): refused exactly to the roles without it`, async () => {
        for (const role of USER_ROLES) {
          const res = await perform(role, operation, 'test')
          const what = `${role} ${operation}: ${res.statusCode} ${res.body.slice(0, 300)}`
          assert.ok(res.statusCode < 500, what)
          if (can(role, permission)) {
            assert.notEqual(res.statusCode, 403, what)
            assert.notEqual(res.statusCode, 401, what)
          } else {
            assert.equal(res.statusCode, 403, what)
            assert.equal(res.json().error.code, 'forbidden', what)
            assert.equal(res.json().error.details.permission, permission, what)
          }
        }
      })

    it('makes a payout and a refund for the roles that may, with valid bodies', async () => {
      for (const role of USER_ROLES) {
        for (const [operation, permission] of [
          ['createPayout', 'payout'],
          ['createRefund', 'refund'],
        ] as const) {
          const res = await perform(role, operation, 'test')
          assert.equal(res.statusCode, can(role, permission) ? 201 : 403, `${role} ${operation}: ${res.body}`)
        }
      }
    })

    it('refuses the sandbox in live mode to every role, and lets the developer tools use it in test mode', async () => {
      for (const operation of TEST_MODE_OPERATIONS) {
        for (const role of USER_ROLES) {
          const res = await perform(role, operation, 'live')
          assert.equal(res.statusCode, 403, `${role} ${operation} live: ${res.body}`)
          if (can(role, 'developer_tools')) assert.equal(res.json().error.details.mode_required, 'test')
        }
      }
      // A developer completes a test payment from the dashboard.
      const created = await postTransaction(ctx, { amount: 1000, currency: 'RUB' })
      assert.equal(created.statusCode, 201, created.body)
      const developer = sessions.get('developer') as Session
      const paid = await dashboard(
        ctx,
        'POST',
        `/integration/sandbox/transactions/${created.json().uuid}/paid`,
        {
          mode: 'test',
          cookie: developer.token,
          csrf: developer.csrf,
        },
      )
      assert.equal(paid.statusCode, 200, paid.body)
      assert.equal(paid.json().status, 'paid')
    })

    describe('the API keys endpoints (developer_tools)', () => {
      const KEY_ACTIONS: [string, (keyId: string) => Action][] = [
        ['list', () => ({ method: 'GET', url: '/dashboard/api/keys' })],
        ['create', () => ({ method: 'POST', url: '/dashboard/api/keys', body: { mode: 'test' } })],
        [
          'rename',
          (keyId) => ({ method: 'PATCH', url: `/dashboard/api/keys/${keyId}`, body: { name: 'Renamed' } }),
        ],
        ['revoke', (keyId) => ({ method: 'DELETE', url: `/dashboard/api/keys/${keyId}` })],
      ]
      for (const [name, make] of KEY_ACTIONS)
        it(`${name}: refused exactly to the roles without developer_tools`, async () => {
          const permission: Permission = 'developer_tools'
          for (const role of USER_ROLES) {
            const session = sessions.get(role) as Session
            const key = await ctx.services.merchants.createKey(ctx.merchant.uuid, 'test')
            assert.ok(key)
            ctx.secrets.push(key.secret)
            const action = make(key.key_id)
            const res = await dashboard(ctx, action.method, action.url, {
              cookie: session.token,
              csrf: session.csrf,
              ...(action.body !== undefined && { body: action.body }),
            })
            const what = `${role} ${name}: ${res.statusCode} ${res.body.slice(0, 300)}`
            if (can(role, permission)) {
              assert.ok(res.statusCode === 200 || res.statusCode === 201, what)
              if (name === 'create') ctx.secrets.push(res.json().secret)
            } else {
              assert.equal(res.statusCode, 403, what)
              assert.equal(res.json().error.details.permission, permission, what)
            }
            // A refused revocation revoked nothing.
            const row = await ctx.db
              .selectFrom('api_keys')
              .select('revoked_at')
              .where('key_id', '=', key.key_id)
              .executeTakeFirstOrThrow()
            assert.equal(row.revoked_at !== null, name === 'revoke' && can(role, permission), what)
          }
        })
    })
  })
}

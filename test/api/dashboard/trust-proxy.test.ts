import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { activeUser, auditRows, dashboard, newEmail, signIn } from '../../helpers/dashboard.ts'
import { backends, createTestContext, type TestContext, testConfig } from '../../helpers/harness.ts'

const PROXY = '10.20.0.1'

for (const backend of backends()) {
  describe(`TRUST_PROXY: the client address of the dashboard behind a proxy (${backend})`, () => {
    let trusting: TestContext
    let direct: TestContext
    before(async () => {
      const dashboard = { ...testConfig().dashboard, loginMaxFailuresPerAddress: 3 }
      trusting = await createTestContext(backend, { trustProxy: [`${PROXY}/32`], dashboard })
      direct = await createTestContext(backend, { dashboard })
    })
    after(async () => {
      await trusting.close()
      await direct.close()
    })

    const lastSignIn = async (ctx: TestContext, userUuid: string) =>
      (await auditRows(ctx, 'login_succeeded')).filter((r) => r.actor_user_uuid === userUuid).at(-1)

    it('takes the address from X-Forwarded-For only when the peer is a trusted proxy', async () => {
      const user = await activeUser(trusting, 'viewer')
      await signIn(trusting, user, { ip: PROXY, headers: { 'x-forwarded-for': '203.0.113.7' } })
      assert.equal((await lastSignIn(trusting, user.uuid))?.ip, '203.0.113.7')
      const session = await trusting.db
        .selectFrom('dashboard_sessions')
        .select('ip')
        .where('user_uuid', '=', user.uuid)
        .executeTakeFirstOrThrow()
      assert.equal(session.ip, '203.0.113.7')
      // A peer that is not the proxy names whatever it likes in the header: it is not believed.
      await signIn(trusting, user, { ip: '198.51.100.9', headers: { 'x-forwarded-for': '203.0.113.8' } })
      assert.equal((await lastSignIn(trusting, user.uuid))?.ip, '198.51.100.9')
    })

    it('is off by default: the header is ignored whoever sends it', async () => {
      const user = await activeUser(direct, 'viewer')
      await signIn(direct, user, { ip: PROXY, headers: { 'x-forwarded-for': '203.0.113.7' } })
      assert.equal((await lastSignIn(direct, user.uuid))?.ip, PROXY)
    })

    it('throttles each client behind the proxy on its own, not everyone behind it together', async () => {
      const fail = (ctx: TestContext, client: string) =>
        dashboard(ctx, 'POST', '/dashboard/api/session', {
          body: { email: newEmail('nobody'), password: 'wrong password' },
          ip: PROXY,
          headers: { 'x-forwarded-for': client },
        })
      for (let i = 0; i < 3; i++) assert.equal((await fail(trusting, '203.0.113.20')).statusCode, 401)
      assert.equal((await fail(trusting, '203.0.113.20')).statusCode, 429)
      assert.equal((await fail(trusting, '203.0.113.21')).statusCode, 401)

      // Without TRUST_PROXY everyone behind the proxy shares its address, and its count.
      for (let i = 0; i < 3; i++) assert.equal((await fail(direct, `203.0.113.${30 + i}`)).statusCode, 401)
      assert.equal((await fail(direct, '203.0.113.40')).statusCode, 429)
    })
  })
}

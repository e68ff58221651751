import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { before, describe, it } from 'node:test'
import Fastify from 'fastify'
import { totpCode } from '../../../src/lib/totp.ts'
import { dashboardRoutes, dashboardViews } from '../../../src/modules/dashboard/routes.ts'
import { responseContract } from '../../helpers/contract.ts'
import {
  activeUser,
  type DashboardCall,
  dashboard,
  forgetLastCode,
  invite,
  signedIn,
} from '../../helpers/dashboard.ts'
import { backends, call, createTestContext } from '../../helpers/harness.ts'
import { assertOperationBasics, ERROR_SCHEMAS, type Json, operations } from '../../helpers/openapi.ts'
import { suiteContext, suiteReceiver } from '../../helpers/suite.ts'
import { putConfig } from '../webhooks/helpers.ts'

/** Every route the dashboard's route plugins register, as `METHOD /path/{param}`, and whether it is hidden. */
async function dashboardApiRoutes(): Promise<{ name: string; hidden: boolean }[]> {
  const probe = Fastify()
  // Registered only: no service is called, and no answer is serialized.
  probe.setSerializerCompiler(() => (data) => JSON.stringify(data))
  const found: { name: string; hidden: boolean }[] = []
  probe.addHook('onRoute', (route) => {
    if (route.method === 'HEAD') return
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
    const hidden = (route.schema as { hide?: boolean } | undefined)?.hide === true
    for (const method of [route.method].flat()) found.push({ name: `${method} ${path}`, hidden })
  })
  await probe.register(dashboardRoutes, {
    publicBaseUrl: 'http://127.0.0.1:3000',
    sessionAbsoluteSeconds: 60,
  } as never)
  await probe.register(dashboardViews, {} as never)
  await probe.close()
  return found
}

describe("the dashboard API's OpenAPI document", () => {
  let doc: Json
  let merchant: Json
  before(async () => {
    const ctx = await createTestContext('pglite')
    doc = ctx.app.dashboardSwagger()
    merchant = ctx.app.swagger() as Json
    await ctx.close()
  })

  it('describes every route of /dashboard/api/, and the merchant document none of them', async () => {
    const documented = new Set(operations(doc).map(([method, path]) => `${method} ${path}`))
    const routes = await dashboardApiRoutes()
    assert.ok(routes.length > 0)
    for (const route of routes) {
      assert.ok(route.name.split(' ')[1]?.startsWith('/dashboard/api/'), route.name)
      assert.ok(!route.hidden, `${route.name} is hidden from the document`)
      assert.ok(documented.has(route.name), `${route.name} is not in the dashboard's document`)
    }
    assert.equal(documented.size, routes.length, 'the document has an operation no dashboard route makes')
    for (const path of Object.keys(merchant.paths)) assert.ok(!path.startsWith('/dashboard/'), path)
  })

  it('gives every operation a unique operationId, declared tags, a summary, a success and the error envelope', () => {
    for (const [name, op] of assertOperationBasics(doc)) {
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (Number(status) < 400) continue
        const ref = response.content?.['application/json']?.schema?.$ref
        assert.ok(ERROR_SCHEMAS.includes(ref), `${name} ${status}: references ${ref}`)
      }
      // Only signing in and accepting an invitation take no session; every other operation can answer 401.
      const open = ['signIn', 'acceptInvitation'].includes(op.operationId)
      assert.deepEqual(op.security?.length ? 'session' : 'none', open ? 'none' : 'session', name)
      if (!open) assert.ok(op.responses['401'], `${name}: 401`)
      assert.ok(op.responses['403'], `${name}: 403`)
    }
    assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), [
      'CsrfToken',
      'DashboardMode',
      'Session',
    ])
  })
})

for (const backend of backends()) {
  describe(`the dashboard API's answers match its document (${backend})`, () => {
    const ctx = suiteContext(backend)
    const receiver = suiteReceiver(ctx)
    let contract: ReturnType<typeof responseContract>
    const violations: string[] = []
    const answered = new Set<string>()

    before(() => {
      contract = responseContract(ctx.app.dashboardSwagger())
    })

    /** A dashboard call, its answer checked against the document; `route` is its Fastify pattern. */
    async function checked(
      method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
      route: string,
      url: string,
      options: DashboardCall = {},
    ) {
      const res = await dashboard(ctx, method, url, options)
      const violation = contract.check({
        method,
        route,
        url,
        status: res.statusCode,
        headers: res.headers,
        body: res.body,
      })
      if (violation) violations.push(violation)
      answered.add(`${method} ${route.replace(/:([A-Za-z0-9_]+)/g, '{$1}')} ${res.statusCode}`)
      return res
    }

    it('answers every operation, its refusals too, as the document says', async () => {
      const owner = await signedIn(ctx, 'owner')
      const as = { cookie: owner.cookie, csrf: owner.csrf }
      const viewer = await signedIn(ctx, 'viewer')

      // Sign-in: a session, a wrong password, an invitation accepted, a bad token.
      const person = await activeUser(ctx, 'developer')
      const credentials = { email: person.email, password: person.password }
      assert.equal(
        (await checked('POST', '/dashboard/api/session', '/dashboard/api/session', { body: credentials }))
          .statusCode,
        200,
      )
      const wrong = { email: person.email, password: 'not the password at all' }
      assert.equal(
        (await checked('POST', '/dashboard/api/session', '/dashboard/api/session', { body: wrong }))
          .statusCode,
        401,
      )
      const invited = await invite(ctx, 'support')
      const accept = { token: invited.token, password: 'a long enough passphrase 42' }
      ctx.secrets.push(accept.password)
      const acceptUrl = '/dashboard/api/invitations/accept'
      assert.equal((await checked('POST', acceptUrl, acceptUrl, { body: accept })).statusCode, 204)
      assert.equal((await checked('POST', acceptUrl, acceptUrl, { body: accept })).statusCode, 409)
      const unknown = { ...accept, token: 'no-such-token' }
      assert.equal((await checked('POST', acceptUrl, acceptUrl, { body: unknown })).statusCode, 404)
      assert.equal((await checked('POST', acceptUrl, acceptUrl, { body: {}, origin: null })).statusCode, 422)
      assert.equal(
        (await checked('POST', acceptUrl, acceptUrl, { body: accept, origin: null })).statusCode,
        403,
      )
      assert.equal((await checked('GET', '/dashboard/api/me', '/dashboard/api/me', as)).statusCode, 200)
      assert.equal((await checked('GET', '/dashboard/api/me', '/dashboard/api/me')).statusCode, 401)

      // People.
      const users = '/dashboard/api/users'
      assert.equal((await checked('GET', users, users, as)).statusCode, 200)
      assert.equal((await checked('GET', users, users, { cookie: viewer.cookie })).statusCode, 403)
      const invitations = '/dashboard/api/users/invitations'
      const made = await checked('POST', invitations, invitations, {
        ...as,
        body: { email: `openapi-${randomUUID()}@example.test`, role: 'viewer' },
      })
      assert.equal(made.statusCode, 201, made.body)
      ctx.secrets.push(new URL(made.json().invite_url).searchParams.get('token') as string)
      const uuid = made.json().user.uuid as string
      const one = '/dashboard/api/users/:uuid'
      assert.equal(
        (await checked('PATCH', one, `${users}/${uuid}`, { ...as, body: { role: 'support' } })).statusCode,
        200,
      )
      assert.equal(
        (await checked('PATCH', one, `${users}/${randomUUID()}`, { ...as, body: { role: 'viewer' } }))
          .statusCode,
        404,
      )
      const disable = '/dashboard/api/users/:uuid/disable'
      assert.equal((await checked('POST', disable, `${users}/${uuid}/disable`, as)).statusCode, 200)
      assert.equal((await checked('POST', disable, `${users}/${uuid}/disable`, as)).statusCode, 409)
      assert.equal(
        (await checked('POST', disable, `${users}/${uuid}/disable`, { cookie: owner.cookie })).statusCode,
        403,
      )
      const audit = '/dashboard/api/audit-log'
      assert.equal((await checked('GET', audit, `${audit}?per_page=2`, as)).statusCode, 200)
      assert.equal((await checked('GET', audit, `${audit}?per_page=1000`, as)).statusCode, 422)

      // The second factor and the merchant's requirement of it.
      const totp = '/dashboard/api/me/totp'
      const started = await checked('POST', totp, totp, as)
      assert.equal(started.statusCode, 200)
      const { secret } = started.json()
      ctx.secrets.push(secret)
      const confirm = '/dashboard/api/me/totp/confirm'
      assert.equal(
        (await checked('POST', confirm, confirm, { ...as, body: { code: '000000' } })).statusCode,
        422,
      )
      assert.equal(
        (await checked('POST', confirm, confirm, { ...as, body: { code: totpCode(secret) } })).statusCode,
        200,
      )
      await forgetLastCode(ctx, owner.uuid)
      assert.equal((await checked('POST', totp, totp, as)).statusCode, 409)
      const security = '/dashboard/api/merchant/security'
      assert.equal((await checked('GET', security, security, as)).statusCode, 200)
      const requireIt = { ...as, body: { require_totp: true } }
      assert.equal((await checked('PUT', security, security, requireIt)).statusCode, 200)
      assert.equal(
        (await checked('PUT', security, security, { cookie: viewer.cookie, csrf: viewer.csrf, body: {} }))
          .statusCode,
        422,
      )
      // The viewer has no second factor: while the merchant requires one, they may only enrol.
      assert.equal((await checked('GET', security, security, { cookie: viewer.cookie })).statusCode, 403)
      assert.equal(
        (await checked('DELETE', totp, totp, { ...as, body: { code: totpCode(secret) } })).statusCode,
        409,
      )
      assert.equal(
        (await checked('PUT', security, security, { ...as, body: { require_totp: false } })).statusCode,
        200,
      )
      assert.equal(
        (await checked('DELETE', totp, totp, { ...as, body: { code: totpCode(secret) } })).statusCode,
        200,
      )

      // API keys.
      const keys = '/dashboard/api/keys'
      assert.equal((await checked('GET', keys, keys, as)).statusCode, 200)
      const key = await checked('POST', keys, keys, { ...as, body: { mode: 'test' } })
      assert.equal(key.statusCode, 201)
      ctx.secrets.push(key.json().secret)
      assert.equal((await checked('POST', keys, keys, { ...as, body: { mode: 'both' } })).statusCode, 422)
      const revoke = '/dashboard/api/keys/:key_id'
      const renamed = await checked('PATCH', revoke, `${keys}/${key.json().key_id}`, {
        ...as,
        body: { name: 'Shop' },
      })
      assert.equal(renamed.statusCode, 200)
      assert.equal(
        (await checked('PATCH', revoke, `${keys}/mk_test_none`, { ...as, body: { name: 'x' } })).statusCode,
        404,
      )
      assert.equal(
        (await checked('PATCH', revoke, `${keys}/${key.json().key_id}`, { ...as, body: {} })).statusCode,
        422,
      )
      assert.equal((await checked('DELETE', revoke, `${keys}/${key.json().key_id}`, as)).statusCode, 200)
      assert.equal((await checked('DELETE', revoke, `${keys}/${key.json().key_id}`, as)).statusCode, 409)
      assert.equal((await checked('DELETE', revoke, `${keys}/mk_test_none`, as)).statusCode, 404)

      // The views a page calls in a mode.
      const inTest = { cookie: owner.cookie, mode: 'test' as const }
      const stats = '/dashboard/api/stats'
      assert.equal((await checked('GET', stats, `${stats}?days=30`, inTest)).statusCode, 200)
      assert.equal((await checked('GET', stats, `${stats}?days=3`, inTest)).statusCode, 422)
      assert.equal((await checked('GET', stats, stats, { mode: 'test' })).statusCode, 401)
      const profile = '/dashboard/api/merchant'
      assert.equal((await checked('GET', profile, profile, inTest)).statusCode, 200)
      const search = '/dashboard/api/search'
      assert.equal((await checked('GET', search, `${search}?q=order-1`, inTest)).statusCode, 200)
      assert.equal((await checked('GET', search, `${search}?q=`, inTest)).statusCode, 422)
      assert.equal((await checked('GET', search, `${search}?q=x`, { mode: 'test' })).statusCode, 401)
      const reveal = '/dashboard/api/webhook/secret/reveal'
      const revealed = await checked('POST', reveal, reveal, { ...inTest, csrf: owner.csrf })
      assert.equal(revealed.statusCode, 200)
      ctx.secrets.push(revealed.json().secret)
      assert.equal(
        (await checked('POST', reveal, reveal, { cookie: viewer.cookie, csrf: viewer.csrf, mode: 'test' }))
          .statusCode,
        403,
      )
      await putConfig(ctx, { url: `${receiver.url}/hooks` })
      const sent = await call(ctx, 'POST', '/integration/webhook/test')
      assert.equal(sent.statusCode, 200, sent.body)
      const attempts = '/dashboard/api/webhook/deliveries/:uuid/attempts'
      const attemptsOf = (id: string) => `/dashboard/api/webhook/deliveries/${id}/attempts`
      assert.equal((await checked('GET', attempts, attemptsOf(sent.json().uuid), inTest)).statusCode, 200)
      assert.equal((await checked('GET', attempts, attemptsOf(randomUUID()), inTest)).statusCode, 404)
      assert.equal(
        (await checked('GET', attempts, attemptsOf(randomUUID()), { cookie: viewer.cookie, mode: 'test' }))
          .statusCode,
        403,
      )

      // Signing out, here and everywhere.
      const admin = await signedIn(ctx, 'admin')
      assert.equal(
        (await checked('DELETE', '/dashboard/api/session', '/dashboard/api/session', as)).statusCode,
        204,
      )
      assert.equal(
        (
          await checked('DELETE', '/dashboard/api/sessions', '/dashboard/api/sessions', {
            cookie: admin.cookie,
          })
        ).statusCode,
        403,
      )
      assert.equal(
        (
          await checked('DELETE', '/dashboard/api/sessions', '/dashboard/api/sessions', {
            cookie: admin.cookie,
            csrf: admin.csrf,
          })
        ).statusCode,
        204,
      )

      assert.deepEqual(violations, [])
      // Every operation of the document was answered at least once.
      for (const [method, path] of operations(ctx.app.dashboardSwagger()))
        assert.ok(
          [...answered].some((seen) => seen.startsWith(`${method} ${path} `)),
          `${method} ${path} was not called`,
        )
    })
  })
}

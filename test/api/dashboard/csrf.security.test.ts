import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { activeUser, dashboard, invite, signIn } from '../../helpers/dashboard.ts'
import { backends } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const CHANGES = [
  ['DELETE', '/dashboard/api/session'],
  ['DELETE', '/dashboard/api/sessions'],
] as const

for (const backend of backends()) {
  describe(`dashboard CSRF and origin checks (${backend})`, () => {
    const ctx = suiteContext(backend)
    let user: { email: string; password: string }
    before(async () => {
      user = await activeUser(ctx, 'owner')
    })

    const forbidden = (response: LightMyRequestResponse, message: RegExp) => {
      assert.equal(response.statusCode, 403)
      assert.equal(response.json().error.code, 'forbidden')
      assert.match(response.json().error.message, message)
      assert.equal(typeof response.json().error.request_id, 'string')
    }

    for (const [method, url] of CHANGES) {
      it(`${method} ${url}: refused without the CSRF token, with a wrong one, and with another session's`, async () => {
        const mine = await signIn(ctx, user)
        const theirs = await signIn(ctx, user)
        for (const csrf of [undefined, '', 'f'.repeat(64), theirs.csrf])
          forbidden(await dashboard(ctx, method, url, { cookie: mine.token, csrf }), /X-CSRF-Token/)
        // Nothing was ended.
        assert.equal(
          (await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: mine.token })).statusCode,
          200,
        )
      })

      it(`${method} ${url}: refused from another origin or with none, even with the right token`, async () => {
        const mine = await signIn(ctx, user)
        for (const origin of [
          null,
          'http://evil.test',
          'https://gateway.test',
          'http://gateway.test:8080',
          'null',
        ])
          forbidden(
            await dashboard(ctx, method, url, { cookie: mine.token, csrf: mine.csrf, origin }),
            /Origin/,
          )
        assert.equal(
          (await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: mine.token })).statusCode,
          200,
        )
      })
    }

    it('refuses a sign-in posted from another origin (login CSRF), and sets no cookie', async () => {
      for (const origin of [null, 'http://evil.test']) {
        const response = await dashboard(ctx, 'POST', '/dashboard/api/session', {
          body: { email: user.email, password: user.password },
          origin,
        })
        forbidden(response, /Origin/)
        assert.equal(response.headers['set-cookie'], undefined)
      }
    })

    it('refuses an invitation accepted from another origin, and leaves the link usable', async () => {
      const invited = await invite(ctx, 'viewer')
      const body = { token: invited.token, password: 'a long enough password' }
      ctx.secrets.push(body.password)
      forbidden(
        await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', {
          body,
          origin: 'http://evil.test',
        }),
        /Origin/,
      )
      assert.equal(
        (await dashboard(ctx, 'POST', '/dashboard/api/invitations/accept', { body })).statusCode,
        204,
      )
    })

    it('a change without a session is 401 before the token is looked at', async () => {
      const response = await dashboard(ctx, 'DELETE', '/dashboard/api/session', {
        cookie: 'nothing',
        csrf: 'x',
      })
      assert.equal(response.statusCode, 401)
    })

    it('keeps the dashboard API out of the merchant OpenAPI document', async () => {
      const doc = (await ctx.app.inject({ method: 'GET', url: '/integration/openapi.json' })).json()
      assert.deepEqual(
        Object.keys(doc.paths).filter((path) => path.startsWith('/dashboard')),
        [],
      )
    })
  })
}

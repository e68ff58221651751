import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { sign } from '../../../src/http/auth.ts'
import { backends, injectToEnd, postTransaction, type TestContext } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'
import { SECURITY_ROUTES } from './routes.ts'

interface Sent {
  requestId: string
  status: number
  /** Credential header values this request carried: none may reach a log line. */
  credentials: string[]
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

/** The log lines written for one request, parsed. */
const linesOf = (ctx: TestContext, requestId: string): Record<string, unknown>[] =>
  ctx.logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.reqId === requestId)

for (const backend of backends()) {
  describe(`credentials never reach the logs (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('requests with X-Api-Key and X-Signature, accepted and refused, log no secret and no credential header', async () => {
      const sent: Sent[] = []
      const key = ctx.merchant.keys.test
      const revoked = await ctx.services.merchants.createKey(ctx.merchant.uuid, 'test')
      assert.ok(revoked)
      ctx.secrets.push(revoked.secret)
      await ctx.services.merchants.revokeKey(revoked.key_id)
      // A plausible secret the server never issued: still a credential, still not for the logs.
      const unknownSecret = `sk_test_${randomBytes(32).toString('hex')}`

      let n = 0
      for (const route of SECURITY_ROUTES) {
        const resource = await route.setup(ctx, ctx.merchant, 'test')
        const attempts: {
          credentials: (payload: string, url: string, idem: string) => Record<string, string>
          status: number
        }[] = [
          {
            credentials: () => ({ 'x-api-key': key.secret }),
            status: route.auth === 'key' ? route.status : 401,
          },
          { credentials: () => ({ 'x-api-key': unknownSecret }), status: 401 },
          { credentials: () => ({ 'x-api-key': revoked.secret }), status: 401 },
          {
            credentials: (payload, url, idem) => {
              const t = nowSeconds()
              return {
                'x-signature': `key_id=${key.key_id},t=${t},v1=${sign(key.secret, t, route.method, url, idem, payload)}`,
              }
            },
            status: route.status,
          },
          {
            // Signed with the right secret over another body: refused, and the header must not be logged.
            credentials: (payload, url, idem) => {
              const t = nowSeconds()
              return {
                'x-signature': `key_id=${key.key_id},t=${t},v1=${sign(key.secret, t, route.method, url, idem, `${payload}x`)}`,
              }
            },
            status: 401,
          },
          {
            credentials: (payload, url, idem) => {
              const t = nowSeconds() - 3600
              return {
                'x-signature': `key_id=${key.key_id},t=${t},v1=${sign(key.secret, t, route.method, url, idem, payload)}`,
              }
            },
            status: 401,
          },
        ]
        for (const attempt of attempts) {
          const body = route.body?.(resource)
          const payload = body === undefined ? '' : JSON.stringify(body)
          const url = route.url(resource)
          const idem = route.idempotency ? `idem-${randomBytes(6).toString('hex')}` : ''
          const requestId = `logs-${backend}-${n++}`
          const credentials = attempt.credentials(payload, url, idem)
          const res = await injectToEnd(ctx, {
            method: route.method,
            url,
            headers: {
              ...credentials,
              'x-request-id': requestId,
              ...(body === undefined ? {} : { 'content-type': 'application/json' }),
              ...(idem ? { 'idempotency-key': idem } : {}),
            },
            ...(body === undefined ? {} : { payload }),
          })
          assert.equal(res.statusCode, attempt.status, `${route.name}: ${res.body}`)
          sent.push({ requestId, status: res.statusCode, credentials: Object.values(credentials) })
        }
      }

      assert.ok(ctx.logs.length > 0, 'the app writes log lines')
      for (const request of sent) {
        const lines = linesOf(ctx, request.requestId)
        // Each request is logged (incoming and completed), so the absence checks below look at real lines.
        assert.ok(lines.length >= 2, `request ${request.requestId} has request log lines`)
        assert.ok(
          lines.some(
            (line) => (line.res as { statusCode?: number } | undefined)?.statusCode === request.status,
          ),
          `request ${request.requestId} logs its status ${request.status}`,
        )
      }

      const forbidden = new Set<string>([...ctx.secrets, unknownSecret])
      for (const request of sent) {
        for (const value of request.credentials) {
          forbidden.add(value)
          for (const hex of value.match(/[0-9a-f]{64}/g) ?? []) forbidden.add(hex)
        }
      }
      const text = ctx.logs.join('')
      for (const value of forbidden) {
        assert.ok(!text.includes(value), `a credential reached the logs: ${value.slice(0, 12)}…`)
      }
    })

    it('a refused request is logged with its error code, not its credentials', async () => {
      const requestId = `logs-refused-${backend}`
      const header = `key_id=${ctx.merchant.keys.test.key_id},t=${nowSeconds()},v1=${'ab'.repeat(32)}`
      const res = await ctx.app.inject({
        method: 'GET',
        url: '/integration/transactions',
        headers: { 'x-signature': header, 'x-request-id': requestId },
      })
      assert.equal(res.statusCode, 401)
      const lines = linesOf(ctx, requestId)
      assert.ok(
        lines.some((line) => line.code === 'signature_invalid' && line.status === 401),
        JSON.stringify(lines),
      )
      const text = JSON.stringify(lines)
      assert.ok(!text.includes(header))
      assert.ok(!text.includes('ab'.repeat(32)))
    })

    it('an accepted request is logged with its merchant, mode and route; page tokens and search terms are not', async () => {
      const requestId = `logs-context-${backend}`
      const res = await ctx.app.inject({
        method: 'GET',
        url: '/integration/transactions?search=alice%40example.com',
        headers: { 'x-api-key': ctx.merchant.keys.test.secret, 'x-request-id': requestId },
      })
      assert.equal(res.statusCode, 200, res.body)
      const lines = linesOf(ctx, requestId)
      const completed = lines.find((line) => line.msg === 'request completed')
      assert.ok(completed, JSON.stringify(lines))
      assert.equal(completed.merchant_uuid, ctx.merchant.uuid)
      assert.equal(completed.mode, 'test')
      assert.equal(completed.route, '/integration/transactions')
      const text = JSON.stringify(lines)
      assert.ok(text.includes('search=[redacted]'), text)
      assert.ok(!text.includes('alice'))

      const created = await postTransaction(ctx, {
        amount: 1000,
        currency: 'USD',
        external_id: `log-${backend}`,
      })
      assert.equal(created.statusCode, 201, created.body)
      const token = new URL(created.json().payment_url).pathname.split('/')[2] as string
      const pageId = `logs-page-${backend}`
      const page = await ctx.app.inject({
        method: 'GET',
        url: `/pay/${token}`,
        headers: { 'x-request-id': pageId },
      })
      assert.equal(page.statusCode, 200)
      const pageText = JSON.stringify(linesOf(ctx, pageId))
      assert.ok(pageText.includes('/pay/[token]'), pageText)
      assert.ok(!pageText.includes(token))
    })
  })
}

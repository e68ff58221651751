import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { before, describe, it, mock } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { Mode } from '../../../src/db/types.ts'
import { sign } from '../../../src/http/auth.ts'
import { backends, injectToEnd, type TestContext, type TestMerchant } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'
import { DOCUMENTED_OPERATIONS, ROUTE_TABLE, SECURITY_ROUTES, type SecurityRoute } from './routes.ts'

interface Key {
  key_id: string
  secret: string
}

/** One request of a route, before credentials: what a signature covers. */
interface Prepared {
  method: SecurityRoute['method']
  url: string
  /** The raw body bytes as sent; undefined for no body. */
  payload: string | undefined
  idempotencyKey: string | undefined
}

type Response = LightMyRequestResponse & { sent: Record<string, string> }

const nowSeconds = () => Math.floor(Date.now() / 1000)
const randomHex = () => randomBytes(32).toString('hex')
const freshIdempotencyKey = () => `idem-${randomBytes(8).toString('hex')}`

function prepare(route: SecurityRoute, resource: unknown): Prepared {
  const body = route.body?.(resource)
  return {
    method: route.method,
    url: route.url(resource),
    payload: body === undefined ? undefined : JSON.stringify(body),
    idempotencyKey: route.idempotency === 'required' ? freshIdempotencyKey() : undefined,
  }
}

/** The v1 HMAC of a request as docs/API.md, Authentication defines it. */
const v1Of = (secret: string, req: Prepared, t: number) =>
  sign(secret, t, req.method, req.url, req.idempotencyKey ?? '', req.payload ?? '')

/** `key_id=…,t=…,v1=…` for `req`, signed with `secret` (default the key's own). */
function signatureHeader(key: Key, req: Prepared, options: { t?: number; secret?: string } = {}): string {
  const t = options.t ?? nowSeconds()
  return `key_id=${key.key_id},t=${t},v1=${v1Of(options.secret ?? key.secret, req, t)}`
}

/** Sends `req` with exactly `credentials` (plus its Idempotency-Key and content type). */
async function send(ctx: TestContext, req: Prepared, credentials: Record<string, string>): Promise<Response> {
  const headers: Record<string, string> = { ...credentials }
  if (req.payload !== undefined) headers['content-type'] = 'application/json'
  if (req.idempotencyKey !== undefined) headers['idempotency-key'] = req.idempotencyKey
  const res = await injectToEnd(ctx, {
    method: req.method,
    url: req.url,
    headers,
    ...(req.payload !== undefined ? { payload: req.payload } : {}),
  })
  return Object.assign(res, { sent: credentials })
}

/** Sends `req` with an X-Signature by `key` computed over `signedOver` (by default `req` itself). */
const sendSigned = (
  ctx: TestContext,
  req: Prepared,
  key: Key,
  signedOver: Prepared = req,
  options: { t?: number; secret?: string } = {},
) => send(ctx, req, { 'x-signature': signatureHeader(key, signedOver, options) })

/** Credential material that must never come back in a response. */
function sentSecrets(ctx: TestContext, res: Response): string[] {
  const values = [...ctx.secrets]
  for (const value of Object.values(res.sent)) {
    values.push(value)
    for (const hex of value.match(/[0-9a-fA-F]{64}/g) ?? []) values.push(hex)
  }
  return values.filter((v) => v.length >= 16)
}

function assertNoEcho(ctx: TestContext, res: Response): void {
  const text = `${res.body}\n${JSON.stringify(res.headers)}`
  for (const secret of sentSecrets(ctx, res)) {
    assert.ok(!text.includes(secret), `the response echoes a credential: ${res.body}`)
  }
}

/** The one error envelope (docs/API.md, Errors), tied to the response's X-Request-Id, echoing no credential. */
function assertError(ctx: TestContext, res: Response, status: number, code?: string | string[]): void {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const body = res.json()
  assert.deepEqual(Object.keys(body), ['error'])
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'details', 'message', 'request_id'])
  assert.equal(typeof body.error.code, 'string')
  assert.equal(typeof body.error.message, 'string')
  assert.ok(body.error.message.length > 0)
  assert.ok(body.error.details === null || typeof body.error.details === 'object')
  assert.ok(res.headers['x-request-id'], 'every response carries X-Request-Id')
  assert.equal(body.error.request_id, res.headers['x-request-id'])
  if (typeof code === 'string') assert.equal(body.error.code, code)
  else if (code) assert.ok(code.includes(body.error.code), `code ${body.error.code} not one of ${code}`)
  assertNoEcho(ctx, res)
}

function assertSuccess(ctx: TestContext, res: Response, route: SecurityRoute): void {
  assert.equal(res.statusCode, route.status, res.body)
  assert.equal(res.headers['idempotent-replayed'], undefined)
  assertNoEcho(ctx, res)
}

/** The code a route gives when X-Signature is absent: signature-only routes never take X-Api-Key. */
const missingCode = (route: SecurityRoute) =>
  route.auth === 'signature' ? 'signature_required' : 'unauthorized'

/** X-Api-Key for key routes, X-Signature for signature-only routes: the usual valid credentials. */
const validCredentials = (route: SecurityRoute, key: Key, req: Prepared): Record<string, string> =>
  route.auth === 'signature' ? { 'x-signature': signatureHeader(key, req) } : { 'x-api-key': key.secret }

describe('the security table and the OpenAPI document', () => {
  it('has an entry for every authenticated operation of the document, and none for another', () => {
    const documented = DOCUMENTED_OPERATIONS.map((operation) => operation.name)
    assert.ok(documented.length >= 20, `only ${documented.length} authenticated operations documented`)
    const missing = documented.filter((name) => !ROUTE_TABLE.some((route) => route.name === name))
    assert.deepEqual(
      missing,
      [],
      'operations of the document without an entry in test/api/security/routes.ts',
    )
    const stale = ROUTE_TABLE.map((route) => route.name).filter((name) => !documented.includes(name))
    assert.deepEqual(stale, [], 'entries of the table for operations the document does not have')
    assert.equal(SECURITY_ROUTES.length, documented.length)
  })

  it('agrees with the document on the credentials and the Idempotency-Key of each operation', () => {
    for (const operation of DOCUMENTED_OPERATIONS) {
      const route = ROUTE_TABLE.find((r) => r.name === operation.name)
      if (!route) continue
      assert.equal(route.auth, operation.auth, `${operation.name}: auth`)
      assert.equal(route.idempotency, operation.idempotency, `${operation.name}: Idempotency-Key`)
    }
  })
})

for (const backend of backends()) {
  describe(`authentication and isolation on every route (${backend})`, () => {
    const ctx = suiteContext(backend)
    let key: Key
    before(async () => {
      key = ctx.merchant.keys.test
    })

    it('GET /integration/health needs no credentials, and ignores bad ones', async () => {
      for (const credentials of [{}, { 'x-api-key': 'sk_test_nope' }, { 'x-signature': 'garbage' }]) {
        const res = await ctx.app.inject({ method: 'GET', url: '/integration/health', headers: credentials })
        assert.equal(res.statusCode, 200, res.body)
        assert.deepEqual(Object.keys(res.json()).sort(), ['database', 'status', 'time', 'version'])
        assert.equal(res.json().status, 'ok')
        assert.ok(res.headers['x-request-id'])
      }
    })

    for (const route of SECURITY_ROUTES) {
      describe(route.name, () => {
        const ready = (merchant: TestMerchant = ctx.merchant, mode: Mode = 'test') =>
          route.setup(ctx, merchant, mode)

        it(`no credentials: 401 ${missingCode(route)}, request_id echoes the client's X-Request-Id`, async () => {
          const req = prepare(route, await ready())
          const res = await send(ctx, req, { 'x-request-id': 'client-req-42' })
          assertError(ctx, res, 401, missingCode(route))
          assert.equal(res.headers['x-request-id'], 'client-req-42')
          assert.equal(res.json().error.request_id, 'client-req-42')
        })

        it('a wrong X-Api-Key: 401', async () => {
          const req = prepare(route, await ready())
          const wrong = [
            `sk_test_${randomBytes(32).toString('base64url').replace(/[-_]/g, 'x')}`,
            key.key_id, // the public half is not a secret
            key.secret.slice(0, -1),
            `${key.secret}x`,
            key.secret.toUpperCase(),
            '',
          ]
          for (const apiKey of wrong) {
            assertError(ctx, await send(ctx, req, { 'x-api-key': apiKey }), 401, missingCode(route))
          }
        })

        it('a revoked key: 401 with X-Api-Key and with X-Signature', async () => {
          const fresh = await ctx.services.merchants.createKey(ctx.merchant.uuid, 'test')
          assert.ok(fresh)
          ctx.secrets.push(fresh.secret)
          // The key works before revocation, so the 401 below is the revocation's doing.
          const withKey = prepare(route, await ready())
          assertSuccess(ctx, await send(ctx, withKey, validCredentials(route, fresh, withKey)), route)
          const signed = prepare(route, await ready())
          assertSuccess(ctx, await sendSigned(ctx, signed, fresh), route)

          assert.ok(await ctx.services.merchants.revokeKey(fresh.key_id))
          const req = prepare(route, await ready())
          assertError(ctx, await send(ctx, req, { 'x-api-key': fresh.secret }), 401, missingCode(route))
          assertError(ctx, await sendSigned(ctx, req, fresh), 401, 'unauthorized')
        })

        it('a malformed X-Signature: 401 signature_invalid', async () => {
          const req = prepare(route, await ready())
          const t = nowSeconds()
          const v1 = v1Of(key.secret, req, t)
          const shapes = [
            '',
            'garbage',
            `key_id=${key.key_id}`,
            `key_id=${key.key_id},t=${t}`,
            `t=${t},v1=${v1}`,
            `key_id=${key.key_id},v1=${v1}`,
            `key_id=${key.key_id},t=abc,v1=${v1}`,
            `key_id=${key.key_id},t=-${t},v1=${v1}`,
            `key_id=${key.key_id},t=${t}.5,v1=${v1}`,
            `key_id=${key.key_id},t=${t},v1=${'z'.repeat(64)}`,
            `key_id=${key.key_id},t=${t},v1=${v1.slice(0, 63)}`,
            `key_id=${key.key_id},t=${t},v1=${v1}00`,
            `key_id=${key.key_id},t=${t},v1=`,
            `key_id=${key.key_id};t=${t};v1=${v1}`,
            `key_id=${key.key_id},t=${t},v1=${v1},garbage`,
            `key_id=${key.key_id},t=${t},${Array.from({ length: 9 }, () => `v1=${v1}`).join(',')}`,
          ]
          for (const shape of shapes) {
            const res = await send(ctx, req, { 'x-signature': shape })
            assertError(ctx, res, 401, 'signature_invalid')
          }
        })

        it('a wrong signature: 401 signature_invalid', async () => {
          const req = prepare(route, await ready())
          const t = nowSeconds()
          const wrong = [
            `key_id=${key.key_id},t=${t},v1=${randomHex()}`,
            // Signed with another merchant's secret, and with the same merchant's live secret.
            signatureHeader(key, req, { t, secret: ctx.other.keys.test.secret }),
            signatureHeader(key, req, { t, secret: ctx.merchant.keys.live.secret }),
            // Signed for t, sent with t + 1.
            `key_id=${key.key_id},t=${t + 1},v1=${v1Of(key.secret, req, t)}`,
          ]
          for (const header of wrong)
            assertError(ctx, await send(ctx, req, { 'x-signature': header }), 401, 'signature_invalid')
        })

        it('an unknown key_id: 401', async () => {
          const req = prepare(route, await ready())
          const header = signatureHeader({ key_id: 'mk_test_doesnotexist000000000', secret: key.secret }, req)
          assertError(ctx, await send(ctx, req, { 'x-signature': header }), 401, [
            'unauthorized',
            'signature_invalid',
          ])
        })

        it('a timestamp more than 300 s away: 401 signature_expired; exactly 300 s: accepted', async () => {
          const late = prepare(route, await ready())
          const early = prepare(route, await ready())
          const edgeLate = prepare(route, await ready())
          const edgeEarly = prepare(route, await ready())
          // The clock stands still for these four requests so the boundary is exact, not racing a second tick.
          const now = Date.now()
          const t = Math.floor(now / 1000)
          mock.timers.enable({ apis: ['Date'], now })
          let responses: Response[]
          try {
            responses = [
              await sendSigned(ctx, late, key, late, { t: t - 301 }),
              await sendSigned(ctx, early, key, early, { t: t + 301 }),
              await sendSigned(ctx, edgeLate, key, edgeLate, { t: t - 300 }),
              await sendSigned(ctx, edgeEarly, key, edgeEarly, { t: t + 300 }),
            ]
          } finally {
            mock.timers.reset()
          }
          const [pastRes, futureRes, edgePast, edgeFuture] = responses as [
            Response,
            Response,
            Response,
            Response,
          ]
          assertError(ctx, pastRes, 401, 'signature_expired')
          assertError(ctx, futureRes, 401, 'signature_expired')
          assertSuccess(ctx, edgePast, route)
          assertSuccess(ctx, edgeFuture, route)
        })

        it(`a valid X-Signature: ${route.status}`, async () => {
          const req = prepare(route, await ready())
          assertSuccess(ctx, await sendSigned(ctx, req, key), route)
          // The live key signs for live mode just the same (and is refused where only test keys may go).
          const live = prepare(route, await ready(ctx.merchant, 'live'))
          const liveKey = ctx.merchant.keys.live
          const liveAnswer = await sendSigned(ctx, live, liveKey)
          if (route.testOnly) assertError(ctx, liveAnswer, 403, 'forbidden')
          else assertSuccess(ctx, liveAnswer, route)
        })

        if (route.auth === 'key') {
          it(`a valid X-Api-Key: ${route.status}`, async () => {
            const req = prepare(route, await ready())
            assertSuccess(ctx, await send(ctx, req, { 'x-api-key': key.secret }), route)
          })
        } else {
          it('a valid X-Api-Key alone: 401 signature_required', async () => {
            const req = prepare(route, await ready())
            assertError(ctx, await send(ctx, req, { 'x-api-key': key.secret }), 401, 'signature_required')
          })
        }

        it('several v1= entries: accepted when any one matches, refused when none does', async () => {
          const t = nowSeconds()
          for (const position of ['first', 'middle', 'last'] as const) {
            const req = prepare(route, await ready())
            const good = v1Of(key.secret, req, t)
            const entries = [randomHex(), randomHex(), randomHex()]
            entries.splice(position === 'first' ? 0 : position === 'middle' ? 2 : 3, 0, good)
            const header = `key_id=${key.key_id},t=${t},${entries.map((v) => `v1=${v}`).join(',')}`
            assertSuccess(ctx, await send(ctx, req, { 'x-signature': header }), route)
          }
          const req = prepare(route, await ready())
          const none = `key_id=${key.key_id},t=${t},${[randomHex(), randomHex()].map((v) => `v1=${v}`).join(',')}`
          assertError(ctx, await send(ctx, req, { 'x-signature': none }), 401, 'signature_invalid')
        })

        it('signed over another method, path or query string than sent: 401 signature_invalid', async () => {
          const req = prepare(route, await ready())
          const join = req.url.includes('?') ? '&' : '?'
          const cases: [signed: Prepared, sent: Prepared][] = [
            [{ ...req, url: `${req.url}${join}tamper=1` }, req],
            [req, { ...req, url: `${req.url}${join}tamper=1` }],
            [
              { ...req, url: `${req.url}${join}tamper=1` },
              { ...req, url: `${req.url}${join}tamper=2` },
            ],
            [{ ...req, method: req.method === 'GET' ? 'DELETE' : 'GET' }, req],
            [{ ...req, url: `${req.url}/` }, req],
          ]
          for (const [signed, sent] of cases) {
            assertError(ctx, await sendSigned(ctx, sent, key, signed), 401, 'signature_invalid')
          }
        })

        it('signed over another body than sent: 401 signature_invalid', async () => {
          const resource = await ready()
          const req = prepare(route, resource)
          const other = prepare(route, resource)
          const cases: [signed: Prepared, sent: Prepared][] = []
          if (req.payload === undefined) {
            cases.push([{ ...req, payload: '{}' }, req])
          } else {
            const parsed = JSON.parse(req.payload)
            // Same JSON, other bytes: the signature is over the raw bytes, not the parsed value.
            cases.push([{ ...req, payload: JSON.stringify(parsed, null, 2) }, req])
            cases.push([{ ...req, payload: `${req.payload} ` }, req])
            cases.push([{ ...req, payload: '' }, req])
            if (other.payload !== req.payload) cases.push([other, req])
            cases.push([
              req,
              { ...req, payload: JSON.stringify({ ...parsed, amount: (parsed.amount ?? 0) + 1 }) },
            ])
          }
          for (const [signed, sent] of cases) {
            assertError(ctx, await sendSigned(ctx, sent, key, signed), 401, 'signature_invalid')
          }
        })

        it('signed over another Idempotency-Key than sent: 401 signature_invalid, and the key stays free', async () => {
          const req = prepare(route, await ready())
          const sentKey = freshIdempotencyKey()
          const cases: [signed: Prepared, sent: Prepared][] = [
            [
              { ...req, idempotencyKey: freshIdempotencyKey() },
              { ...req, idempotencyKey: sentKey },
            ],
            [
              { ...req, idempotencyKey: '' },
              { ...req, idempotencyKey: sentKey },
            ],
          ]
          // Dropping the key the request was signed with is a tampering too (unless the route requires one,
          // where the request would be refused for that anyway).
          if (route.idempotency !== 'required')
            cases.push([
              { ...req, idempotencyKey: sentKey },
              { ...req, idempotencyKey: undefined },
            ])
          for (const [signed, sent] of cases) {
            assertError(ctx, await sendSigned(ctx, sent, key, signed), 401, 'signature_invalid')
          }
          if (route.idempotency) {
            // A request refused by authentication never owns its Idempotency-Key (docs/API.md, Idempotency).
            const owner = { ...req, idempotencyKey: sentKey }
            assertSuccess(ctx, await sendSigned(ctx, owner, key), route)
          }
        })

        it('a wrong X-Signature is not rescued by a valid X-Api-Key', async () => {
          const req = prepare(route, await ready())
          const res = await send(ctx, req, {
            'x-api-key': key.secret,
            'x-signature': `key_id=${key.key_id},t=${nowSeconds()},v1=${randomHex()}`,
          })
          assertError(ctx, res, 401, 'signature_invalid')
        })

        const isolation = route.isolation
        if (isolation.kind === 'resource') {
          it("another merchant's resource: 404 not_found (X-Api-Key and X-Signature)", async () => {
            for (const mode of ['test', 'live'] as const) {
              const theirs = prepare(route, await ready(ctx.other, mode))
              // The owner sees it, so the 404 below is isolation, not a missing resource.
              assertSuccess(
                ctx,
                await send(ctx, theirs, validCredentials(route, ctx.other.keys[mode], theirs)),
                route,
              )
              const mine = ctx.merchant.keys[mode]
              const again = { ...theirs, idempotencyKey: theirs.idempotencyKey && freshIdempotencyKey() }
              assertError(ctx, await send(ctx, again, validCredentials(route, mine, again)), 404, 'not_found')
              const signed = { ...theirs, idempotencyKey: theirs.idempotencyKey && freshIdempotencyKey() }
              assertError(ctx, await sendSigned(ctx, signed, mine), 404, 'not_found')
            }
          })

          it('the other mode: a live resource is 404 to the test key, and a test resource to the live key', async () => {
            for (const [owner, reader] of [
              ['live', 'test'],
              ['test', 'live'],
            ] as const) {
              const req = prepare(route, await ready(ctx.merchant, owner))
              const ownKey = ctx.merchant.keys[owner]
              assertSuccess(ctx, await send(ctx, req, validCredentials(route, ownKey, req)), route)
              const again = { ...req, idempotencyKey: req.idempotencyKey && freshIdempotencyKey() }
              const res = await send(ctx, again, validCredentials(route, ctx.merchant.keys[reader], again))
              assertError(ctx, res, 404, 'not_found')
            }
          })
        }

        if (isolation.kind === 'list') {
          it("lists only the caller's own merchant and mode", async () => {
            const mine = { test: await ready(ctx.merchant, 'test'), live: await ready(ctx.merchant, 'live') }
            const theirs = { test: await ready(ctx.other, 'test'), live: await ready(ctx.other, 'live') }
            for (const mode of ['test', 'live'] as const) {
              const otherMode = mode === 'test' ? 'live' : 'test'
              const req = prepare(route, mine[mode])
              const res = await send(ctx, req, validCredentials(route, ctx.merchant.keys[mode], req))
              assertSuccess(ctx, res, route)
              const json = res.json()
              assert.ok(
                isolation.includes(json, mine[mode]),
                `the ${mode} list shows the caller's own ${mode} resource`,
              )
              assert.ok(
                !isolation.includes(json, mine[otherMode]),
                `the ${mode} list shows a ${otherMode} resource`,
              )
              assert.ok(
                !isolation.includes(json, theirs.test),
                `the ${mode} list shows another merchant's test resource`,
              )
              assert.ok(
                !isolation.includes(json, theirs.live),
                `the ${mode} list shows another merchant's live resource`,
              )
            }
          })
        }
      })
    }
  })
}

import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { before, describe, it } from 'node:test'
import {
  PAYMENT_METHODS,
  PAYOUT_STATUSES,
  REFUND_STATUSES,
  TRANSACTION_STATUSES,
} from '../../src/db/enums.ts'
import { ERROR_STATUS } from '../../src/http/errors.ts'
import { PAYOUT_EVENTS, TRANSACTION_EVENTS } from '../../src/modules/webhooks/schemas.ts'
import { backends, call } from '../helpers/harness.ts'
import { assertOperationBasics, ERROR_SCHEMAS, type Json, operations } from '../helpers/openapi.ts'
import { QUERY_PARAMETERS } from '../helpers/query-parameters.ts'
import { suiteContext } from '../helpers/suite.ts'

/** Every `$ref` value anywhere in the document. */
function refs(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refs(item, found)
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value)
      else refs(value, found)
    }
  }
  return found
}

const schemaRef = (response: Json): string | undefined => response.content?.['application/json']?.schema?.$ref

/** A literal's value: `const`, or the one-value `enum` @fastify/swagger writes for it. */
function literal(schema: Json): unknown {
  if ('const' in schema) return schema.const
  assert.ok(
    Array.isArray(schema.enum) && schema.enum.length === 1,
    `not a literal: ${JSON.stringify(schema)}`,
  )
  return schema.enum[0]
}

/** The values of a literal union (`anyOf` of literals); fails on anything else, a plain `enum` included. */
function literals(schema: Json): unknown[] {
  assert.ok(Array.isArray(schema.anyOf), `not a literal union: ${JSON.stringify(schema)}`)
  return schema.anyOf.map(literal)
}

/** A response's headers, by lower-case name, with `$ref`s to components.headers resolved. */
function headersOf(doc: Json, response: Json): Record<string, Json> {
  const out: Record<string, Json> = {}
  for (const [name, header] of Object.entries<Json>(response.headers ?? {}))
    out[name.toLowerCase()] = header.$ref
      ? doc.components.headers[String(header.$ref).replace('#/components/headers/', '')]
      : header
  return out
}

describe('OpenAPI document lint', () => {
  it("passes Redocly's recommended ruleset with 0 errors and 0 warnings (npm run lint:openapi)", () => {
    const lint = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/lint-openapi.ts'], {
      encoding: 'utf8',
    })
    assert.equal(lint.status, 0, `${lint.stdout}${lint.stderr}`)
    assert.match(lint.stdout, /0 error\(s\), 0 warning\(s\)/)
  })
})

for (const backend of backends()) {
  describe(`OpenAPI document and /docs (${backend})`, () => {
    const ctx = suiteContext(backend)
    let doc: Json
    before(async () => {
      const res = await call(ctx, 'GET', '/integration/openapi.json', undefined, { auth: 'none' })
      assert.equal(res.statusCode, 200, res.body)
      doc = res.json()
    })

    it('is served without credentials as JSON, OpenAPI 3.1', async () => {
      const res = await call(ctx, 'GET', '/integration/openapi.json', undefined, { auth: 'none' })
      assert.equal(res.statusCode, 200)
      assert.match(String(res.headers['content-type']), /^application\/json/)
      assert.ok(res.headers['x-request-id'])
      assert.match(doc.openapi, /^3\.1\.\d+$/)
      assert.ok(doc.info.title)
      assert.ok(doc.info.version)
      assert.ok(doc.info.license?.name)
      assert.equal(doc.servers?.[0]?.url, ctx.config.publicBaseUrl)
      assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['ApiKey', 'Signature'])
    })

    it('lists the operations built so far', () => {
      const present = new Set(operations(doc).map(([method, path]) => `${method} ${path}`))
      for (const expected of [
        'GET /integration/health',
        'POST /integration/transactions',
        'GET /integration/transactions',
        'GET /integration/transactions/{uuid}',
        'GET /integration/transactions/{uuid}/h2h',
        'GET /integration/transactions/by-external-id/{externalId}',
      ]) {
        assert.ok(present.has(expected), `${expected} is missing from the document`)
      }
      for (const path of Object.keys(doc.paths)) {
        assert.ok(path.startsWith('/integration/'), `${path} is outside /integration`)
        assert.doesNotMatch(path, /:/, `${path} uses a Fastify parameter instead of {name}`)
      }
    })

    it('gives every operation a unique operationId, declared tags, a summary and a success response', () => {
      for (const [name, op] of assertOperationBasics(doc))
        for (const [status, response] of Object.entries<Json>(op.responses))
          assert.ok(response.description, `${name} ${status}: description`)
    })

    it('points every error response at ErrorResponse, or ValidationErrorResponse for 422', () => {
      for (const [method, path, op] of operations(doc)) {
        const name = `${method} ${path}`
        const errors = Object.entries<Json>(op.responses).filter(([status]) => Number(status) >= 400)
        // The health check answers 503 with its own body, saying which part is down (docs/API.md, Health).
        const own = path === '/integration/health' ? ['503'] : []
        for (const [status, response] of errors) {
          const ref = schemaRef(response)
          if (own.includes(status)) {
            assert.equal(ref, '#/components/schemas/HealthResponse', `${name} ${status}`)
            continue
          }
          assert.ok(ERROR_SCHEMAS.includes(ref ?? ''), `${name} ${status}: references ${ref}`)
          if (status === '422')
            assert.equal(ref, '#/components/schemas/ValidationErrorResponse', `${name} 422`)
        }
        if (op.security?.length) {
          assert.ok(op.responses['401'], `${name}: an authenticated operation declares 401`)
          assert.ok(op.responses['500'], `${name}: declares 500`)
        } else {
          assert.equal(path, '/integration/health', `${name} has no security requirement`)
        }
      }
    })

    it('creates a transaction with a Location header, and documents it', () => {
      const created = doc.paths['/integration/transactions'].post.responses['201']
      assert.equal(schemaRef(created), '#/components/schemas/TransactionResponse')
      assert.ok(created.headers?.location, 'Location header')
      const params = doc.paths['/integration/transactions'].get.parameters as Json[]
      const names = params.filter((p) => p.in === 'query').map((p) => p.name)
      const listed = QUERY_PARAMETERS['GET /integration/transactions']
      assert.ok(listed)
      for (const name of listed) {
        assert.ok(names.includes(name), `list parameter ${name}`)
      }
    })

    it('defines the shared schemas, and every $ref resolves', () => {
      const schemas = doc.components.schemas as Json
      for (const name of [
        'ErrorResponse',
        'StructuredError',
        'ValidationErrorResponse',
        'TransactionResponse',
        'TransactionCursorPage',
        'H2hTransactionResponse',
        'HealthResponse',
        'CursorMeta',
      ]) {
        assert.ok(schemas[name], `components.schemas.${name}`)
      }
      assert.deepEqual(schemas.StructuredError.required.sort(), ['code', 'details', 'message', 'request_id'])
      assert.ok(schemas.ValidationErrorResponse.properties.error.properties.errors)
      for (const ref of refs(doc)) {
        const match = /^#\/components\/(schemas|headers)\/(.+)$/.exec(ref)
        assert.ok(match, `${ref} is not a local schema or header reference`)
        assert.ok(doc.components[match[1] as string][match[2] as string], `${ref} does not resolve`)
      }
    })

    it('names the request bodies as components, and each operation references its own', () => {
      const schemas = doc.components.schemas as Json
      const bodies = {
        CreateTransactionRequest: 'POST /integration/transactions',
        CreateRefundRequest: 'POST /integration/refunds',
        CreatePayoutRequest: 'POST /integration/payouts',
        UpdateWebhookConfigRequest: 'PUT /integration/webhook',
        RotateWebhookSecretRequest: 'POST /integration/webhook/secret/rotate',
      }
      for (const [name, operation] of Object.entries(bodies)) {
        const [method, path] = operation.split(' ') as [string, string]
        assert.equal(schemas[name]?.type, 'object', `components.schemas.${name}`)
        const body = doc.paths[path][method.toLowerCase()].requestBody
        assert.equal(body.content['application/json'].schema.$ref, `#/components/schemas/${name}`, path)
      }
      assert.deepEqual(schemas.CreateRefundRequest.required, ['transaction_uuid'])
      assert.deepEqual(schemas.CreatePayoutRequest.required.sort(), [
        'amount',
        'currency',
        'destination',
        'external_id',
        'method',
      ])
      // No operation carries an inline request body.
      for (const [method, path, op] of operations(doc))
        if (op.requestBody)
          assert.ok(op.requestBody.content['application/json'].schema.$ref, `${method} ${path}: inline body`)
    })

    it('describes the callbacks in a webhooks section, one entry per event family, with their headers', () => {
      const schemas = doc.components.schemas as Json
      const families: [string, string, readonly string[]][] = [
        ['transaction', 'MerchantTransactionCallback', TRANSACTION_EVENTS],
        ['payout', 'MerchantPayoutCallback', PAYOUT_EVENTS],
        ['test', 'MerchantTestCallback', ['webhook.test']],
      ]
      assert.deepEqual(Object.keys(doc.webhooks).sort(), families.map(([key]) => key).sort())
      for (const [key, name, events] of families) {
        const post = doc.webhooks[key].post
        assert.equal(post.requestBody.content['application/json'].schema.$ref, `#/components/schemas/${name}`)
        const headers = (post.parameters as Json[]).filter((p) => p.in === 'header')
        assert.deepEqual(
          headers.map((h) => [h.name, h.required]),
          [
            ['webhook-id', true],
            ['webhook-timestamp', true],
            ['webhook-signature', true],
          ],
          key,
        )
        assert.ok(post.responses['2XX'] && post.responses['410'], `${key}: 2XX and 410 replies`)
        const schema = schemas[name]
        assert.deepEqual(
          schema.required.sort(),
          [
            'aggregate_version',
            'event',
            'event_id',
            'occurred_at',
            'schema_version',
            key === 'test' ? 'data' : key,
          ].sort(),
        )
        const event = schema.properties.event
        assert.deepEqual(
          events.length === 1 ? [literal(event)] : literals(event),
          [...events],
          `${name}.event`,
        )
        assert.equal(literal(schema.properties.schema_version), '1')
      }
      // Refund events are transaction events: a refund moves its transaction on.
      assert.ok(TRANSACTION_EVENTS.includes('transaction.refunded'))
      assert.equal(
        schemas.MerchantTransactionCallback.properties.transaction.$ref,
        '#/components/schemas/TransactionResponse',
      )
      assert.equal(
        schemas.MerchantPayoutCallback.properties.payout.$ref,
        '#/components/schemas/PayoutResponse',
      )
    })

    it('declares 429 with Retry-After, 503 and the RateLimit-* headers on every rate-limited operation', () => {
      const limited = operations(doc).filter(([, , op]) => op.security?.length)
      assert.ok(limited.length >= 20)
      for (const [method, path, op] of limited) {
        const name = `${method} ${path}`
        for (const status of ['401', '429', '500', '503'])
          assert.ok(op.responses[status], `${name}: declares ${status}`)
        assert.equal(
          headersOf(doc, op.responses['429'])['retry-after']?.required,
          true,
          `${name}: 429 Retry-After`,
        )
        assert.ok(headersOf(doc, op.responses['503'])['retry-after'], `${name}: 503 Retry-After`)
        for (const [status, response] of Object.entries<Json>(op.responses)) {
          const headers = headersOf(doc, response)
          assert.equal(headers['x-request-id']?.required, true, `${name} ${status}: X-Request-Id`)
          for (const header of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
            assert.equal(Boolean(headers[header]), status !== '401', `${name} ${status}: ${header}`)
        }
      }
      // An authenticated GET refuses unknown query parameters: 422.
      for (const [method, path, op] of limited)
        if (method === 'GET') assert.ok(op.responses['422'], `${method} ${path}: declares 422`)
      const health = doc.paths['/integration/health'].get.responses
      for (const response of Object.values<Json>(health)) {
        assert.ok(headersOf(doc, response)['x-request-id'])
        assert.equal(
          headersOf(doc, response)['ratelimit-limit'],
          undefined,
          'the health check is not limited',
        )
      }
    })

    it('declares Location on the 201s, and Idempotent-Replayed and the Idempotency-Key where a replay can happen', () => {
      for (const path of ['/integration/transactions', '/integration/refunds', '/integration/payouts']) {
        assert.ok(headersOf(doc, doc.paths[path].post.responses['201']).location, `${path}: 201 Location`)
        // A 503 after the object was made (its answer could not be stored) still names it.
        assert.ok(headersOf(doc, doc.paths[path].post.responses['503']).location, `${path}: 503 Location`)
      }
      const idempotent = operations(doc).filter(([, , op]) =>
        (op.parameters ?? []).some((p: Json) => p.in === 'header' && p.name === 'idempotency-key'),
      )
      const names = idempotent.map(([method, path]) => `${method} ${path}`)
      for (const name of [
        'POST /integration/transactions',
        'POST /integration/refunds',
        'POST /integration/payouts',
        'POST /integration/webhook/secret/rotate',
        'POST /integration/webhook/test',
        'POST /integration/webhook/deliveries/{uuid}/redeliver',
        ...['paid', 'failed', 'expired', 'failed-then-paid'].map(
          (s) => `POST /integration/sandbox/transactions/{uuid}/${s}`,
        ),
        ...['completed', 'failed'].map((s) => `POST /integration/sandbox/payouts/{uuid}/${s}`),
      ])
        assert.ok(names.includes(name), `${name}: Idempotency-Key parameter`)
      for (const [method, path, op] of idempotent) {
        const name = `${method} ${path}`
        for (const status of ['400', '409', '422'])
          assert.ok(op.responses[status], `${name}: declares ${status}`)
        const success = Object.keys(op.responses).find((s) => s.startsWith('2')) as string
        assert.ok(
          headersOf(doc, op.responses[success])['idempotent-replayed'],
          `${name}: Idempotent-Replayed`,
        )
        assert.ok(headersOf(doc, op.responses['409'])['retry-after'], `${name}: 409 Retry-After`)
      }
      for (const [method, path, op] of operations(doc))
        if (!idempotent.some(([, p, o]) => p === path && o === op))
          for (const response of Object.values<Json>(op.responses))
            assert.equal(headersOf(doc, response)['idempotent-replayed'], undefined, `${method} ${path}`)
    })

    it('gives closed lists as literals: error codes, payment methods, statuses', () => {
      const schemas = doc.components.schemas as Json
      assert.deepEqual(literals(schemas.ErrorCode), Object.keys(ERROR_STATUS))
      assert.equal(schemas.StructuredError.properties.code.$ref, '#/components/schemas/ErrorCode')
      assert.equal(
        schemas.ValidationErrorResponse.properties.error.properties.code.$ref,
        '#/components/schemas/ErrorCode',
      )
      assert.deepEqual(literals(schemas.CreateTransactionRequest.properties.payment_method), [
        ...PAYMENT_METHODS,
      ])
      assert.deepEqual(literals(schemas.H2hTransactionResponse.properties.payment_method), [
        ...PAYMENT_METHODS,
      ])
      assert.deepEqual(literals(schemas.TransactionResponse.properties.payment_method), [...PAYMENT_METHODS])
      assert.deepEqual(literals(schemas.TransactionResponse.properties.status), [...TRANSACTION_STATUSES])
      assert.deepEqual(literals(schemas.H2hTransactionResponse.properties.status), [...TRANSACTION_STATUSES])
      assert.deepEqual(literals(schemas.RefundResponse.properties.status), [...REFUND_STATUSES])
      assert.deepEqual(literals(schemas.PayoutResponse.properties.status), [...PAYOUT_STATUSES])
    })

    it('says in the X-Signature scheme exactly what to sign', () => {
      const description = doc.components.securitySchemes.Signature.description as string
      assert.ok(
        description.includes(
          '<t>.<METHOD>.<path and query as sent>.<Idempotency-Key or empty>.<raw body bytes>',
        ),
        description,
      )
      assert.match(description, /HMAC-SHA256/)
      assert.match(description, /key_id=<key_id>,t=<unix seconds>,v1=<hex>/)
      assert.match(description, /300 s/)
    })

    it('serves /docs as an HTML page whose assets the service serves itself', async () => {
      const res = await call(ctx, 'GET', '/docs', undefined, { auth: 'none' })
      assert.equal(res.statusCode, 200)
      assert.match(String(res.headers['content-type']), /^text\/html/)
      const html = res.body
      assert.match(html, /<html/i)
      assert.doesNotMatch(html, /https?:\/\//i, 'the page loads nothing from another origin')
      assert.doesNotMatch(html, /(src|href)\s*=\s*["']\/\//i, 'no protocol-relative URLs')
      const assets = [...html.matchAll(/(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1] as string)
      assert.ok(
        assets.some((a) => a.endsWith('.js')),
        'the page loads its scripts',
      )
      for (const asset of assets) {
        const url = new URL(asset, 'http://gateway.test/docs/')
        assert.equal(url.host, 'gateway.test', asset)
        const served = await call(ctx, 'GET', url.pathname, undefined, { auth: 'none' })
        assert.equal(served.statusCode, 200, `${asset}: ${served.statusCode}`)
      }
    })
  })
}

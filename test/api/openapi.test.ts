import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { backends, call, createTestContext, type TestContext } from '../helpers/harness.ts'

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON of any shape.
type Json = Record<string, any>

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace']
const ERROR_SCHEMAS = ['#/components/schemas/ErrorResponse', '#/components/schemas/ValidationErrorResponse']

/** Every operation of the document, as [method, path, operation]. */
function operations(doc: Json): [string, string, Json][] {
  const out: [string, string, Json][] = []
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {}))
    for (const method of METHODS) if (item[method]) out.push([method.toUpperCase(), path, item[method]])
  return out
}

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

for (const backend of backends()) {
  describe(`OpenAPI document and /docs (${backend})`, () => {
    let ctx: TestContext
    let doc: Json
    before(async () => {
      ctx = await createTestContext(backend)
      const res = await call(ctx, 'GET', '/integration/openapi.json', undefined, { auth: 'none' })
      assert.equal(res.statusCode, 200, res.body)
      doc = res.json()
    })
    after(() => ctx.close())

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
      const declaredTags = new Set((doc.tags as Json[]).map((t) => t.name))
      const ids = new Set<string>()
      for (const [method, path, op] of operations(doc)) {
        const name = `${method} ${path}`
        assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${name}: operationId`)
        assert.ok(!ids.has(op.operationId), `${name}: operationId ${op.operationId} is used twice`)
        ids.add(op.operationId)
        assert.ok(Array.isArray(op.tags) && op.tags.length > 0, `${name}: tags`)
        for (const tag of op.tags) assert.ok(declaredTags.has(tag), `${name}: tag ${tag} is not declared`)
        assert.ok(typeof op.summary === 'string' && op.summary.length > 0, `${name}: summary`)
        const statuses = Object.keys(op.responses)
        assert.ok(
          statuses.some((s) => /^2\d\d$/.test(s)),
          `${name}: no 2xx response`,
        )
        for (const [status, response] of Object.entries<Json>(op.responses)) {
          assert.ok(response.description, `${name} ${status}: description`)
          assert.notEqual(response.description, 'Default Response', `${name} ${status}: generic description`)
        }
      }
    })

    it('points every error response at ErrorResponse, or ValidationErrorResponse for 422', () => {
      for (const [method, path, op] of operations(doc)) {
        const name = `${method} ${path}`
        const errors = Object.entries<Json>(op.responses).filter(([status]) => Number(status) >= 400)
        // The health check answers 503 with its own body, saying which part is down (contract §7).
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
      for (const name of [
        'cursor',
        'per_page',
        'status',
        'payment_method',
        'currency',
        'date_from',
        'date_to',
        'search',
      ]) {
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
        const match = /^#\/components\/schemas\/(.+)$/.exec(ref)
        assert.ok(match, `${ref} is not a local schema reference`)
        assert.ok(schemas[match[1] as string], `${ref} does not resolve`)
      }
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

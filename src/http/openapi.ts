import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { SIGNATURE_TOLERANCE_SECONDS } from './auth.ts'

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON of any shape.
type Json = Record<string, any>

export interface OpenApiOptions {
  version: string
  publicBaseUrl: string
  /** The OpenAPI 3.1 `webhooks` section: the callbacks the service sends, one entry per event family. */
  webhooks: Json
}

/** The dashboard's own API: its routes make the dashboard's document, and are left out of the merchant's. */
export const DASHBOARD_API_PREFIX = '/dashboard/api/'

declare module 'fastify' {
  interface FastifyInstance {
    /** The dashboard's own API's OpenAPI document (`/dashboard/api/…`), for its generated types. */
    dashboardSwagger(): Json
  }
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const

/** Response headers the shared machinery sends, declared once and referenced by every response that has them. */
const HEADERS: Record<string, Json> = {
  'X-Request-Id': {
    description:
      'The id of this request: the X-Request-Id you sent (1-128 characters of A-Z a-z 0-9 . _ : @ / + = -), or one the gateway made. Every response carries it, and error bodies repeat it as `request_id`.',
    required: true,
    schema: { type: 'string', examples: ['0b6f2c1e-5d7a-4e39-9c1a-2f8e7d6c5b4a'] },
  },
  'RateLimit-Limit': {
    description:
      "The size of the API key's token bucket: how many requests may come at once. On every response counted against a key (every authenticated request that passed authentication).",
    schema: { type: 'integer', examples: [200] },
  },
  'RateLimit-Remaining': {
    description: 'Whole requests left in the bucket now.',
    schema: { type: 'integer', examples: [199] },
  },
  'RateLimit-Reset': {
    description: 'Seconds, rounded up, until the bucket is full again.',
    schema: { type: 'integer', examples: [1] },
  },
  'Retry-After': {
    description:
      'Seconds to wait before retrying: on a 429 until the next request is allowed; on a 409 `idempotency_request_in_progress` and a 503 `unavailable`, 1.',
    schema: { type: 'integer', minimum: 0, examples: [1] },
  },
  'Idempotent-Replayed': {
    description:
      'Present, `true`, when this answer is the stored answer of an earlier request with the same Idempotency-Key (or, for refunds and payouts, the object that key made): the operation did not act again.',
    schema: { type: 'string', enum: ['true'] },
  },
}

const header = (name: string) => ({ $ref: `#/components/headers/${name}` })

/** Every operation of the document, with its method and path. */
function* operations(doc: Json): Generator<[string, string, Json]> {
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {}))
    for (const method of METHODS) if (item[method]) yield [method, path, item[method]]
}

/** An operation whose caller authenticates: the merchant API's rate limits count it. */
const authenticated = (operation: Json) => Array.isArray(operation.security) && operation.security.length > 0

/**
 * Declares the headers the shared machinery puts on answers, where it puts them: X-Request-Id on every answer;
 * the RateLimit-* headers on every answer of a `limited` operation that got past authentication (a 401 is not
 * counted); Retry-After on 429, 503 and, with an Idempotency-Key, 409; Idempotent-Replayed on every answer a
 * replay can repeat (an operation that takes an Idempotency-Key stores its answers below 500, except the
 * refusals made before the key is claimed).
 */
function declareSharedHeaders(doc: Json, limited: (operation: Json) => boolean = authenticated): Json {
  for (const [, , operation] of operations(doc)) {
    const counted = limited(operation)
    const idempotent = (operation.parameters ?? []).some(
      (p: Json) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key',
    )
    for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) {
      const code = Number(status)
      const headers: Json = { 'X-Request-Id': header('X-Request-Id') }
      if (counted && code !== 401)
        for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'])
          headers[name] = header(name)
      if (code === 429 || code === 503 || (idempotent && code === 409))
        headers['Retry-After'] =
          code === 429 ? { ...HEADERS['Retry-After'], required: true } : header('Retry-After')
      if (idempotent && ((code >= 200 && code < 300) || code === 404 || code === 409 || code === 422))
        headers['Idempotent-Replayed'] = header('Idempotent-Replayed')
      response.headers = { ...headers, ...response.headers }
    }
  }
  return doc
}

/** Every `$ref` value in a part of a document. */
function refsIn(node: unknown, found: Set<string>): Set<string> {
  if (Array.isArray(node)) for (const item of node) refsIn(item, found)
  else if (node && typeof node === 'object')
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.add(value)
      else refsIn(value, found)
    }
  return found
}

/**
 * Drops the components no operation, webhook or used component references. The app's shared schemas are all
 * offered to both documents (one set of schemas, one Fastify instance): each keeps the ones it uses.
 */
function dropUnusedComponents(doc: Json): Json {
  const components: Json = doc.components ?? {}
  const { components: _, ...rest } = doc
  const used = refsIn(rest, new Set())
  for (let queue = [...used]; queue.length > 0; ) {
    const [, , kind, name] = String(queue.pop()).split('/')
    const target = kind && name ? components[kind]?.[name] : undefined
    for (const ref of refsIn(target, new Set()))
      if (!used.has(ref)) {
        used.add(ref)
        queue.push(ref)
      }
  }
  for (const kind of ['schemas', 'headers'])
    for (const name of Object.keys(components[kind] ?? {}))
      if (!used.has(`#/components/${kind}/${name}`)) delete components[kind][name]
  return doc
}

/**
 * A request body with an $id is a named component (CreateTransactionRequest…): the operation references it. The
 * route keeps the schema itself, which types the handler's request.body and validates it. `inDocument` says
 * which routes the document describes.
 */
const routesOf =
  (inDocument: (url: string) => boolean) =>
  ({ schema, url }: { schema: Json; url: string }) => {
    if (!inDocument(url)) return { schema: { ...schema, hide: true }, url }
    const body = schema?.body as { $id?: string } | undefined
    return { schema: body?.$id ? { ...schema, body: Type.Ref(body.$id) } : schema, url }
  }

const refResolver = {
  buildLocalReference: (json: Json, _base: unknown, _fragment: unknown, i: number) =>
    (json.$id as string) || `def-${i}`,
}

const SIGNING = `Sign the request with the key's secret instead of sending it: \`X-Signature: key_id=<key_id>,t=<unix seconds>,v1=<hex>\`, where

\`v1 = hex(HMAC-SHA256(key = secret, message = "<t>.<METHOD>.<path and query as sent>.<Idempotency-Key or empty>.<raw body bytes>"))\`

- \`t\`: the current unix time in seconds, the same value as in the header; more than ${SIGNATURE_TOLERANCE_SECONDS} s from the server's clock is \`401 signature_expired\`.
- \`METHOD\`: upper case (\`GET\`, \`POST\`, \`PUT\`).
- path and query as sent: the request target of the HTTP request line, from the first \`/\`, without scheme or host, with the query string exactly as sent (\`/integration/transactions?status=paid&per_page=2\`).
- \`Idempotency-Key\`: the header's value, or nothing when none is sent.
- raw body bytes: the body byte for byte as sent; nothing for a request without a body.
- The four separators are single dots; empty parts stay empty (a GET without an Idempotency-Key ends in \`..\`).

Up to 8 \`v1=\` entries may be sent; one matching suffices. A header that does not parse, or a signature that does not match, is \`401 signature_invalid\`; an unknown or revoked key_id \`401 unauthorized\`. Refunds and payouts accept only this scheme. A worked example: docs/API.md, "Signing: a worked example".`

/** What both documents begin with: the OpenAPI version, the API's title and description, and where it is served. */
const documentHead = (options: OpenApiOptions, title: string, description: string) => ({
  openapi: '3.1.0',
  info: { title, version: options.version, description, license: { name: 'MIT', identifier: 'MIT' } },
  servers: [{ url: options.publicBaseUrl }],
})

/**
 * The OpenAPI 3.1 document, generated from the routes' schemas (`GET /integration/openapi.json`), and /docs,
 * the page that renders it. Registered before the routes, whose schemas it collects as they are added.
 */
export async function registerOpenApi(app: FastifyInstance, options: OpenApiOptions): Promise<void> {
  await app.register(swagger, {
    openapi: {
      ...documentHead(
        options,
        'merchant-gateway: Merchant Integration API',
        'Take payments, refund them, pay out, and receive signed callbacks (the `webhooks` section). The guide: docs/API.md.',
      ),
      tags: [
        { name: 'Health', description: 'Liveness of the API and its database.' },
        { name: 'Transactions', description: 'Payments: create, find, list, and host-to-host requisites.' },
        {
          name: 'Balances',
          description:
            'What the merchant holds, per currency, from the ledger, and every movement of it (balance transactions).',
        },
        { name: 'Rates', description: "FX rates with the merchant's markup." },
        { name: 'Refunds', description: 'Money back to the customer, from the available balance.' },
        {
          name: 'Payouts',
          description: 'USDT to a wallet or money to a card, from the available USDT balance.',
        },
        {
          name: 'Sandbox',
          description: 'Simulated provider callbacks, for test keys (or any key outside production).',
        },
        {
          name: 'Webhooks',
          description:
            'Signed callbacks: configuration, secret rotation, the delivery log, and the callbacks.',
        },
        {
          name: 'Events',
          description:
            'Every event the webhooks carry, kept for at least 30 days with the state of its delivery: catch up after downtime.',
        },
      ],
      webhooks: options.webhooks as never,
      components: {
        securitySchemes: {
          ApiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Api-Key',
            description:
              'Your secret key, sk_test_… or sk_live_…, as is. Not accepted by the operations that move money (refunds, payouts).',
          },
          Signature: { type: 'apiKey', in: 'header', name: 'X-Signature', description: SIGNING },
        },
        headers: HEADERS as never,
      },
    },
    refResolver,
    transform: routesOf((url) => !url.startsWith(DASHBOARD_API_PREFIX)) as never,
    transformObject: (document) =>
      dropUnusedComponents(
        declareSharedHeaders((document as { openapiObject: Json }).openapiObject),
      ) as never,
  })
  await registerDashboardOpenApi(app, options)
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // No page of the service may be framed, by another origin or its own (docs/OPERATIONS.md, Security headers).
    transformStaticCSP: (header: string) =>
      header.replace("frame-ancestors 'self'", "frame-ancestors 'none'"),
    uiConfig: { docExpansion: 'list', deepLinking: true },
  })

  app.get('/integration/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}

/**
 * The dashboard's own API's document (`app.dashboardSwagger()`): every `/dashboard/api/…` route, made at
 * generate time (scripts/openapi.ts) for the dashboard's generated types, and not served. A route declares
 * its session (http/session.ts), which adds the credentials it asks for; the views a page calls in a mode ask
 * for `X-Dashboard-Mode` too, and are rate-limited like the merchant API.
 */
async function registerDashboardOpenApi(app: FastifyInstance, options: OpenApiOptions): Promise<void> {
  await app.register(swagger, {
    decorator: 'dashboardSwagger',
    openapi: {
      ...documentHead(
        options,
        'merchant-gateway: Dashboard API',
        "The dashboard's own endpoints: its sessions, people, second factor, audit log and API keys, and the figures its pages show that the merchant API does not answer. Only the dashboard's pages call them, with the session cookie; a change must come from a page of this service (its Origin) and carry the CSRF token of the session. The guide: docs/DASHBOARD.md.",
      ),
      tags: [
        {
          name: 'Sign-in',
          description: 'Sessions: signing in and out, who is signed in, accepting an invitation.',
        },
        {
          name: 'Security',
          description: "The second factor: each user's own, and the merchant's requirement.",
        },
        { name: 'People', description: "The merchant's dashboard users: invite, change a role, disable." },
        { name: 'Audit log', description: 'What was done in the dashboard and by the operator.' },
        { name: 'API keys', description: "The merchant's API keys: list, make, name, revoke." },
        { name: 'Home', description: "The home page's figures." },
        {
          name: 'Search',
          description: 'One box that finds a payment, refund, payout or event by any of its keys.',
        },
        { name: 'Merchant', description: "The merchant's profile, as the operator set it." },
        {
          name: 'Webhooks',
          description:
            "A webhook delivery's attempts, and the signing secret shown on request, for the webhooks page.",
        },
      ],
      components: {
        securitySchemes: {
          Session: {
            type: 'apiKey',
            in: 'cookie',
            name: 'mg_session',
            description: 'The session cookie that signing in sets (HttpOnly).',
          },
          CsrfToken: {
            type: 'apiKey',
            in: 'header',
            name: 'X-CSRF-Token',
            description: 'The CSRF token of the session (`csrf_token`): sent with every change.',
          },
          DashboardMode: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Dashboard-Mode',
            description: 'The mode the page works in, `test` or `live`.',
          },
        },
        headers: HEADERS as never,
      },
    },
    refResolver,
    transform: routesOf((url) => url.startsWith(DASHBOARD_API_PREFIX)) as never,
    transformObject: (document) =>
      dropUnusedComponents(
        declareSharedHeaders((document as { openapiObject: Json }).openapiObject, (operation) =>
          (operation.security ?? []).some((scheme: Json) => 'DashboardMode' in scheme),
        ),
      ) as never,
  })
}

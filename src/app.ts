import { readFileSync } from 'node:fs'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify'
import pino from 'pino'
import sjson from 'secure-json-parse'
import { Type } from 'typebox'
import type { Config } from './config.ts'
import { SimulatorConnector } from './connectors/simulator/index.ts'
import type { Db } from './db/index.ts'
import { infoEnabled, logContext, registerAuth } from './http/auth.ts'
import { AppError, registerErrorSchemas, renderError } from './http/errors.ts'
import { fingerprintKey, KEY_RELEASING_CODES, registerIdempotency } from './http/idempotency.ts'
import { CursorMeta } from './http/pagination.ts'
import { registerRateLimit } from './http/rate-limit.ts'
import { httpDuration } from './lib/metrics.ts'
import { checkoutRoutes } from './modules/checkout/routes.ts'
import { type CheckoutService, createCheckoutService } from './modules/checkout/service.ts'
import { healthRoutes } from './modules/health/routes.ts'
import { balanceRoutes, IntegrationBalancesResponse, MerchantBalance } from './modules/ledger/routes.ts'
import { createLedgerService, type LedgerService } from './modules/ledger/service.ts'
import { createMerchantService, type MerchantService } from './modules/merchants/service.ts'
import { payoutRoutes } from './modules/payouts/routes.ts'
import { PayoutCursorPage, PayoutQuoteResponse, PayoutResponse } from './modules/payouts/schemas.ts'
import { createPayoutService, type PayoutService, type PayoutTiming } from './modules/payouts/service.ts'
import { RatesResponse, rateRoutes } from './modules/rates/routes.ts'
import { createRateService, type RateService } from './modules/rates/service.ts'
import { refundRoutes } from './modules/refunds/routes.ts'
import { RefundResponse } from './modules/refunds/schemas.ts'
import { createRefundService, type RefundService, type RefundTiming } from './modules/refunds/service.ts'
import { createRequisiteService, type RequisiteService } from './modules/requisites/service.ts'
import { sandboxRoutes } from './modules/sandbox/routes.ts'
import { createSandboxService, type SandboxService } from './modules/sandbox/service.ts'
import { transactionRoutes } from './modules/transactions/routes.ts'
import {
  H2hTransactionResponse,
  TransactionCursorPage,
  TransactionResponse,
} from './modules/transactions/schemas.ts'
import { createTransactionService, type TransactionService } from './modules/transactions/service.ts'
import { createSender, type Sender } from './modules/webhooks/delivery.ts'
import { webhookRoutes } from './modules/webhooks/routes.ts'
import {
  WebhookConfigResponse,
  WebhookDeliveryPage,
  WebhookDeliveryResponse,
} from './modules/webhooks/schemas.ts'
import {
  createWebhookService,
  type DispatchOptions,
  type WebhookService,
} from './modules/webhooks/service.ts'

export const VERSION: string = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
).version

export interface Services {
  merchants: MerchantService
  rates: RateService
  requisites: RequisiteService
  transactions: TransactionService
  webhooks: WebhookService
  sandbox: SandboxService
  ledger: LedgerService
  refunds: RefundService
  payouts: PayoutService
  checkout: CheckoutService
  /** Releases what the services hold open (the webhook HTTP client's connections). */
  close(): Promise<void>
}

export interface ServiceOptions {
  /** The HTTP client for webhook deliveries (tests pass one with a short timeout). */
  sender?: Sender
  /** Retry schedule and jitter source for deliveries (tests scale the schedule down and seed the jitter). */
  dispatch?: Partial<DispatchOptions>
  /** The sandbox provider's payout completion delay, and the payout checks' timing. */
  payouts?: { completionMs?: number; timing?: Partial<PayoutTiming> }
  /** The sandbox provider (tests pass one whose answers they control). */
  simulator?: SimulatorConnector
  /** The refund checks' timing. */
  refunds?: { timing?: Partial<RefundTiming> }
}

export function createServices(db: Db, config: Config, options: ServiceOptions = {}): Services {
  const sender =
    options.sender ??
    createSender({
      allowPrivateNetworks: config.webhookAllowPrivateNetworks,
      requireHttps: config.appEnv === 'production',
      timeoutMs: config.webhook.timeoutMs,
    })
  const simulator =
    options.simulator ?? new SimulatorConnector({ payoutCompletionMs: options.payouts?.completionMs })
  const merchants = createMerchantService({ db, config })
  const rates = createRateService({ db, config })
  const requisites = createRequisiteService({ db })
  const webhooks = createWebhookService({ db, config, sender, dispatch: options.dispatch })
  const ledger = createLedgerService({ db })
  const transactions = createTransactionService({
    db,
    config,
    merchants,
    rates,
    requisites,
    webhooks,
    ledger,
    connectors: { [simulator.name]: simulator },
  })
  // A worker's claim on a refund or payout it asks the provider about: a worker killed mid-claim leaves it
  // in flight this long, so no longer than the recheck itself (and at most 30 s, above a provider's timeout).
  const recoveryLeaseMs = Math.min(30_000, config.providerRecheckMs)
  const refunds = createRefundService({
    db,
    transactions,
    ledger,
    connector: simulator,
    timing: { recheckMs: config.providerRecheckMs, leaseMs: recoveryLeaseMs, ...options.refunds?.timing },
  })
  const payouts = createPayoutService({
    db,
    config,
    rates,
    ledger,
    webhooks,
    connector: simulator,
    timing: {
      submitTimeoutMs: config.providerRecheckMs,
      leaseMs: recoveryLeaseMs,
      ...options.payouts?.timing,
    },
  })
  const sandbox = createSandboxService({ config, simulator, transactions, payouts })
  const checkout = createCheckoutService({ transactions, merchants, sandbox })
  return {
    merchants,
    rates,
    requisites,
    transactions,
    webhooks,
    sandbox,
    ledger,
    refunds,
    payouts,
    checkout,
    close: () => sender.close(),
  }
}

export interface AppDeps {
  db: Db
  config: Config
  services?: Services
  /** A pino logger, pino options, or false. */
  logger?: FastifyServerOptions['loggerInstance'] | FastifyServerOptions['logger']
}

const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/
export const BODY_LIMIT = 64 * 1024

/** Header values that must never reach a log line. */
export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers["x-signature"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
]

/**
 * A request's URL as logged: the hosted page's token is a bearer of the page (and of its test buttons), and a
 * search term may be a customer's data, so neither reaches a log line.
 */
export const logSafeUrl = (url: string): string =>
  url.replace(/^\/pay\/(?!assets\/)[^/?]+/, '/pay/[token]').replace(/([?&]search=)[^&]*/g, '$1[redacted]')

/** The service's logger: pino JSON, credentials redacted, URLs made safe. */
export function createLogger(level: string, stream?: pino.DestinationStream): pino.Logger {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: {
        req: (req: FastifyRequest) => ({
          method: req.method,
          url: logSafeUrl(req.url),
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort,
        }),
      },
    },
    stream,
  )
}

/** Refuses bytes that are not UTF-8 rather than reading them as U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true })
/** With the `u` flag a pair is one code point: only an unpaired surrogate matches. */
const LONE_SURROGATE = /\p{Cs}/u

/**
 * Whether a parsed JSON value holds a lone surrogate in any string, key or value, at any depth (walked with a
 * stack of its own: 64 KiB of `[` nest deeper than the call stack reaches).
 */
function hasLoneSurrogate(value: unknown): boolean {
  const pending = [value]
  while (pending.length) {
    const item = pending.pop()
    if (typeof item === 'string') {
      if (LONE_SURROGATE.test(item)) return true
    } else if (Array.isArray(item)) {
      for (const inner of item) pending.push(inner)
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, inner] of Object.entries(item)) {
        if (LONE_SURROGATE.test(key)) return true
        pending.push(inner)
      }
    }
  }
  return false
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { db, config } = deps
  const services = deps.services ?? createServices(db, config)
  const loggerOption =
    deps.logger && typeof (deps.logger as FastifyBaseLogger).child === 'function'
      ? { loggerInstance: deps.logger as FastifyBaseLogger }
      : { logger: deps.logger ?? false }

  const app = Fastify({
    ...loggerOption,
    bodyLimit: BODY_LIMIT,
    requestIdHeader: false,
    genReqId: (req) => {
      const sent = req.headers['x-request-id']
      return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : crypto.randomUUID()
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // The router's own refusals (a bad %-escape, an over-long path segment) happen before any hook runs:
    // they get the same envelope and X-Request-Id as every other error.
    frameworkErrors: (error, request: FastifyRequest, reply: FastifyReply) => {
      const rendered = renderError(error)
      return reply
        .code(rendered.status)
        .header('x-request-id', request.id)
        .send({
          error: { code: rendered.code, message: rendered.message, request_id: request.id, details: null },
        })
    },
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Bodies are validated strictly (no coercion, unknown fields refused); query and path values arrive as
  // strings, so those are coerced to the declared types.
  const ajvOptions = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false } as const
  const bodyAjv = addFormats.default(new Ajv({ ...ajvOptions, coerceTypes: false }))
  const paramAjv = addFormats.default(new Ajv({ ...ajvOptions, coerceTypes: true }))
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema),
  )

  // JSON only, kept as raw bytes too: X-Signature is computed over the body exactly as sent.
  app.removeAllContentTypeParsers()
  app.decorateRequest('rawBody', null)
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const raw = body as Buffer
    request.rawBody = raw
    // An operation that takes no body, or whose body is optional, accepts an empty one.
    if (raw.length === 0 && !request.routeOptions.schema?.body) return done(null, undefined)
    if (raw.length === 0 && request.routeOptions.config.bodyOptional) return done(null, {})
    if (raw.length === 0)
      return done(
        new AppError('malformed_request', 'The request body is empty: send a JSON object.'),
        undefined,
      )
    let text: string
    try {
      text = utf8.decode(raw)
    } catch {
      return done(new AppError('malformed_request', 'The request body is not valid UTF-8 JSON.'), undefined)
    }
    let parsed: unknown
    try {
      parsed = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
    } catch {
      return done(new AppError('malformed_request', 'The request body is not valid JSON.'), undefined)
    }
    // An escape such as "\ud800" with no pair decodes to a lone surrogate: no character, and no UTF-8 for it
    // (written to the database it would be stored as U+FFFD, not as what the client sent).
    if (hasLoneSurrogate(parsed))
      return done(new AppError('malformed_request', 'The request body is not valid UTF-8 JSON.'), undefined)
    done(null, parsed)
  })

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })
  // While shutting down, every answer closes its connection: a keep-alive client (or a load balancer's pool)
  // would otherwise hold the server open after its last request, and the shutdown would hang.
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close')
  })
  app.addHook('onResponse', async (request, reply) => {
    httpDuration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode },
      reply.elapsedTime / 1000,
    )
  })
  // An optional body that was not sent validates as an empty object.
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.routeOptions.config.bodyOptional) request.body = {}
  })

  registerErrorSchemas(app)
  for (const schema of [
    CursorMeta,
    TransactionResponse,
    TransactionCursorPage,
    H2hTransactionResponse,
    WebhookConfigResponse,
    WebhookDeliveryResponse,
    WebhookDeliveryPage,
    MerchantBalance,
    IntegrationBalancesResponse,
    RatesResponse,
    RefundResponse,
    PayoutQuoteResponse,
    PayoutResponse,
    PayoutCursorPage,
  ])
    app.addSchema(schema)

  app.setErrorHandler((error: Error, request, reply) => {
    const rendered = renderError(error)
    if (request.idempotency && KEY_RELEASING_CODES.has(rendered.code)) request.idempotency.release = true
    if (rendered.status >= 500)
      request.log.error(
        // At `info` and below the request's child logger already carries these fields.
        infoEnabled(request.log) ? { err: error } : { err: error, ...logContext(request) },
        'request failed',
      )
    else request.log.info({ code: rendered.code, status: rendered.status }, 'request refused')
    return reply
      .code(rendered.status)
      .headers(rendered.headers)
      .send({
        error: {
          code: rendered.code,
          message: rendered.message,
          request_id: request.id,
          ...(rendered.errors ? { errors: rendered.errors } : {}),
          details: rendered.details,
        },
      })
  })

  // 405 for a known path with another method, 404 otherwise.
  const routes: { pattern: RegExp; method: string }[] = []
  app.addHook('onRoute', (route) => {
    // Operations that take no query parameters refuse unknown ones too, like unknown body fields.
    if (route.config?.auth && route.method === 'GET' && route.schema && !route.schema.querystring) {
      route.schema.querystring = Type.Object({}, { additionalProperties: false })
    }
    const pattern = new RegExp(`^${route.url.replace(/:[^/]+/g, '[^/]+')}/?$`)
    for (const method of [route.method].flat()) routes.push({ pattern, method })
  })
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? ''
    const allowed = routes.filter((r) => r.pattern.test(path)).map((r) => r.method)
    if (allowed.length) {
      return reply
        .code(405)
        .header('allow', [...new Set(allowed)].join(', '))
        .send({
          error: {
            code: 'method_not_allowed',
            message: `Use ${[...new Set(allowed)].join(' or ')} on this path.`,
            request_id: request.id,
            details: null,
          },
        })
    }
    return reply.code(404).send({
      error: { code: 'not_found', message: 'No such operation.', request_id: request.id, details: null },
    })
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'merchant-gateway: Merchant Integration API',
        version: VERSION,
        description:
          'Take payments, refund them, pay out, and receive signed callbacks. The guide: docs/API.md.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: config.publicBaseUrl }],
      tags: [
        { name: 'Health', description: 'Liveness of the API and its database.' },
        { name: 'Transactions', description: 'Payments: create, find, list, and host-to-host requisites.' },
        { name: 'Balances', description: 'What the merchant holds, per currency, from the ledger.' },
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
          description: 'Signed callbacks: configuration, secret rotation, the delivery log.',
        },
      ],
      components: {
        securitySchemes: {
          ApiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Api-Key',
            description: 'Your secret key, sk_test_… or sk_live_….',
          },
          Signature: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Signature',
            description: 'key_id=<key_id>,t=<unix seconds>,v1=<hex HMAC-SHA256> (see docs/API.md).',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string) || `def-${i}` },
  })
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    uiConfig: { docExpansion: 'list', deepLinking: true },
  })

  app.get('/integration/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  await app.register(healthRoutes, { db, version: VERSION })
  await app.register(checkoutRoutes, { checkout: services.checkout })

  registerAuth(app, services.merchants)
  await registerRateLimit(app, config.rateLimit, config.redisUrl)
  registerIdempotency(app, db, fingerprintKey(config.masterKey), config.idempotencyLeaseMs)
  await app.register(transactionRoutes, { transactions: services.transactions })
  await app.register(sandboxRoutes, { sandbox: services.sandbox })
  await app.register(balanceRoutes, { ledger: services.ledger })
  await app.register(refundRoutes, { refunds: services.refunds })
  await app.register(payoutRoutes, { payouts: services.payouts })
  await app.register(rateRoutes, { rates: services.rates })
  await app.register(webhookRoutes, { webhooks: services.webhooks })

  return app
}

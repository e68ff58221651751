import { readFileSync } from 'node:fs'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify'
import pino from 'pino'
import pinoPretty from 'pino-pretty'
import type { Config } from './config.ts'
import { SimulatorConnector } from './connectors/simulator/index.ts'
import type { Db } from './db/index.ts'
import { registerAuth } from './http/auth.ts'
import { BODY_LIMIT, registerJsonBodyParser } from './http/body-parser.ts'
import { frameworkErrors, registerErrorHandling } from './http/error-handler.ts'
import { fingerprintKey, registerIdempotency } from './http/idempotency.ts'
import { registerOpenApi } from './http/openapi.ts'
import { registerPagination } from './http/pagination.ts'
import { registerRateLimit } from './http/rate-limit.ts'
import { registerRequestId, requestIdOptions } from './http/request-id.ts'
import { registerSecurityHeaders } from './http/security-headers.ts'
import { registerSessionGuard } from './http/session.ts'
import { registerValidators } from './http/validation.ts'
import { httpDuration } from './lib/metrics.ts'
import { checkoutRoutes } from './modules/checkout/routes.ts'
import { type CheckoutService, createCheckoutService } from './modules/checkout/service.ts'
import { dashboardAccess, registerDashboardAnswers } from './modules/dashboard/access.ts'
import { dashboardSessions } from './modules/dashboard/guard.ts'
import { dashboardPages } from './modules/dashboard/pages.ts'
import { dashboardRoutes, dashboardViews } from './modules/dashboard/routes.ts'
import { healthRoutes } from './modules/health/routes.ts'
import { balanceRoutes } from './modules/ledger/routes.ts'
import { createLedgerService, type LedgerService } from './modules/ledger/service.ts'
import { createMerchantService, type MerchantService } from './modules/merchants/service.ts'
import { payoutRoutes } from './modules/payouts/routes.ts'
import { createPayoutService, type PayoutService, type PayoutTiming } from './modules/payouts/service.ts'
import { providerRoutes } from './modules/providers/routes.ts'
import { createProviderService, type ProviderService } from './modules/providers/service.ts'
import { rateRoutes } from './modules/rates/routes.ts'
import { createRateService, type RateService } from './modules/rates/service.ts'
import { refundRoutes } from './modules/refunds/routes.ts'
import { createRefundService, type RefundService, type RefundTiming } from './modules/refunds/service.ts'
import { createRequisiteService, type RequisiteService } from './modules/requisites/service.ts'
import { sandboxRoutes } from './modules/sandbox/routes.ts'
import { createSandboxService, type SandboxService } from './modules/sandbox/service.ts'
import { transactionRoutes } from './modules/transactions/routes.ts'
import { createTransactionService, type TransactionService } from './modules/transactions/service.ts'
import { createUserService, type UserService } from './modules/users/service.ts'
import { createSender, type Sender } from './modules/webhooks/delivery.ts'
import { WEBHOOKS_DOCUMENT } from './modules/webhooks/openapi.ts'
import { webhookRoutes } from './modules/webhooks/routes.ts'
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
  users: UserService
  providers: ProviderService
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
  /** Where the services tell the operator what needs attention and fails no request (an unanswered payout). */
  log?: Pick<FastifyBaseLogger, 'warn'>
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
  const ledger = createLedgerService({ db, config })
  const providers = createProviderService({
    db,
    config,
    payments: () => ({
      apply: (trx, payment, report, before) => transactions.applyReport(trx, payment, report, before),
    }),
    refunds: () => ({ apply: refunds.applyReport, recheck: refunds.recheck }),
    payouts: () => ({ apply: payouts.applyReport, recheck: payouts.recheck }),
  })
  const transactions = createTransactionService({
    db,
    config,
    merchants,
    rates,
    requisites,
    webhooks,
    ledger,
    connectors: { [simulator.name]: simulator },
    providers,
  })
  // A worker's claim on a refund or payout it asks the provider about: a worker killed mid-claim leaves it
  // in flight this long, so no longer than the recheck itself (and at most 30 s, above a provider's timeout).
  const recoveryLeaseMs = Math.min(30_000, config.providerRecheckMs)
  const refunds = createRefundService({
    db,
    config,
    transactions,
    ledger,
    connector: simulator,
    providers,
    timing: { recheckMs: config.providerRecheckMs, leaseMs: recoveryLeaseMs, ...options.refunds?.timing },
  })
  const payouts = createPayoutService({
    db,
    config,
    rates,
    ledger,
    webhooks,
    connector: simulator,
    providers,
    log: options.log,
    timing: {
      submitTimeoutMs: config.providerRecheckMs,
      leaseMs: recoveryLeaseMs,
      ...options.payouts?.timing,
    },
  })
  const sandbox = createSandboxService({ config, simulator, transactions, payouts })
  const checkout = createCheckoutService({ db, transactions, merchants, sandbox, providers })
  const users = createUserService({ db, config, merchants })
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
    users,
    providers,
    close: async () => {
      await Promise.all([sender.close(), providers.accounts.closeConnectors()])
    },
  }
}

export interface AppDeps {
  db: Db
  config: Config
  services?: Services
  /** A pino logger, pino options, or false. */
  logger?: FastifyServerOptions['loggerInstance'] | FastifyServerOptions['logger']
}

/** Header values that must never reach a log line. */
export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers["x-signature"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-dashboard-totp"]',
  'res.headers["set-cookie"]',
]

/**
 * A request's URL as logged: the hosted page's token is a bearer of the page (and of its test buttons), a
 * dashboard invitation's token sets a password, and a search term may be a customer's data, so none of them
 * reaches a log line.
 */
export const logSafeUrl = (url: string): string =>
  url
    .replace(/^\/pay\/(?!assets\/)[^/?]+/, '/pay/[token]')
    .replace(/([?&](?:search|token)=)[^&]*/g, '$1[redacted]')

/**
 * Where the service's log lines go (LOG_FORMAT): undefined for pino's JSON on standard output, one object a
 * line for a collector; else pino-pretty's readable lines (time, level, message, then the fields), in colour on
 * a terminal. Unset, a terminal gets readable lines and anything else JSON. Redaction happens before either.
 */
export function logDestination(
  format: 'json' | 'pretty' | null,
  terminal: boolean,
  destination: number | NodeJS.WritableStream = 1,
): pino.DestinationStream | undefined {
  if (format === 'json' || (format === null && !terminal)) return undefined
  return pinoPretty({
    destination,
    // In order with what the program itself writes to the terminal (its start banner).
    sync: true,
    colorize: terminal,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  })
}

/** The service's logger: pino JSON (or readable lines, see logDestination), credentials redacted, URLs made safe. */
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

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { db, config } = deps
  const services = deps.services ?? createServices(db, config)
  const loggerOption =
    deps.logger && typeof (deps.logger as FastifyBaseLogger).child === 'function'
      ? { loggerInstance: deps.logger as FastifyBaseLogger }
      : { logger: deps.logger ?? false }

  const app = Fastify({
    ...loggerOption,
    ...requestIdOptions,
    bodyLimit: BODY_LIMIT,
    trustProxy: config.trustProxy,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors,
  }).withTypeProvider<TypeBoxTypeProvider>()

  registerValidators(app)
  registerJsonBodyParser(app)
  registerRequestId(app)
  registerSecurityHeaders(app, { hstsMaxAgeSeconds: config.hstsMaxAgeSeconds })
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
  registerErrorHandling(app)
  registerPagination(app)
  await registerOpenApi(app, {
    version: VERSION,
    publicBaseUrl: config.publicBaseUrl,
    webhooks: WEBHOOKS_DOCUMENT,
  })

  await app.register(healthRoutes, { db, version: VERSION })
  await app.register(checkoutRoutes, { checkout: services.checkout })
  // Providers sign their callbacks with the account's secret: no API key, no session, and their own body parser.
  await app.register(providerRoutes, { providers: services.providers })
  // The dashboard's own API signs in with a session cookie, not an API key: registered before the keys' auth
  // and limits, each route declaring the session it needs (`config.session`).
  const sessions = dashboardSessions(services.users, config.publicBaseUrl)
  registerSessionGuard(app, sessions.guard)
  await app.register(dashboardRoutes, {
    users: services.users,
    merchants: services.merchants,
    publicBaseUrl: config.publicBaseUrl,
    sessionAbsoluteSeconds: config.dashboard.sessionAbsoluteSeconds,
  })

  // An API key, or the session of a dashboard page (which calls the same operations).
  registerAuth(
    app,
    services.merchants,
    dashboardAccess({ users: services.users, merchants: services.merchants, sessions }),
  )
  registerDashboardAnswers(app, services.users)
  await registerRateLimit(app, config.rateLimit, config.redisUrl)
  registerIdempotency(app, db, fingerprintKey(config.masterKey), config.idempotencyLeaseMs)
  // Each module registers its own schemas; a module whose routes answer another's resources comes after it.
  await app.register(transactionRoutes, { transactions: services.transactions })
  await app.register(balanceRoutes, { ledger: services.ledger })
  await app.register(refundRoutes, { refunds: services.refunds })
  await app.register(payoutRoutes, { payouts: services.payouts })
  await app.register(sandboxRoutes, { sandbox: services.sandbox })
  await app.register(rateRoutes, { rates: services.rates })
  await app.register(webhookRoutes, { webhooks: services.webhooks })
  await app.register(dashboardViews, {
    transactions: services.transactions,
    webhooks: services.webhooks,
    merchants: services.merchants,
    users: services.users,
    refunds: services.refunds,
    payouts: services.payouts,
    providers: services.providers,
  })
  await app.register(dashboardPages)

  return app
}

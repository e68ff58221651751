import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { AppError } from '../../http/errors.ts'
import { UuidParams } from '../../http/schemas.ts'
import type { MerchantService } from '../merchants/service.ts'
import { PAYMENT_METHODS } from '../transactions/schemas.ts'
import type { TransactionService } from '../transactions/service.ts'
import type { WebhookService } from '../webhooks/service.ts'

/**
 * The dashboard's page policy: scripts, styles, fonts and data only from this origin, no framing, no plugins,
 * forms posting only here. No inline script or style is allowed, so markup a merchant's customer managed to put
 * into a description could not run even if it reached the page as markup.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

/** Where the built pages are: dist/dashboard, from src/ (tsx) or from dist/ (the compiled program). */
function builtPages(): string | null {
  for (const relative of ['../../dashboard/', '../../../dist/dashboard/']) {
    const dir = fileURLToPath(new URL(relative, import.meta.url))
    if (existsSync(`${dir}index.html`)) return dir
  }
  return null
}

const StatsQuery = Type.Object(
  { days: Type.Union([Type.Literal(7), Type.Literal(30)], { default: 7 }) },
  { additionalProperties: false },
)

/**
 * The dashboard's pages at /dashboard/… (the single-page app: every path that is not a file answers its
 * index.html), and the home page's figures. The app's data comes from the merchant API itself
 * (modules/dashboard/access.ts).
 */
export interface DashboardPagesOptions {
  transactions: TransactionService
  webhooks: Pick<WebhookService, 'attempts'>
  merchants: Pick<MerchantService, 'fee'>
}

/** A dashboard page's call (a session with X-Dashboard-Mode), else 404: these are not API operations. */
function sessionCall(request: FastifyRequest) {
  if (!request.dashboardSession) throw new AppError('not_found', 'This is a dashboard page’s call.')
  return authOf(request)
}

export const dashboardPages: FastifyPluginAsyncTypebox<DashboardPagesOptions> = async (
  app,
  { transactions, webhooks, merchants },
) => {
  // Payments per day and currency for the home page's chart: a dashboard session only (X-Dashboard-Mode).
  app.get(
    '/dashboard/api/stats',
    {
      config: { auth: 'key' },
      schema: { hide: true, operationId: 'dashboardStats', querystring: StatsQuery },
    },
    async (request) => {
      const auth = sessionCall(request)
      const since = new Date()
      since.setUTCHours(0, 0, 0, 0)
      since.setUTCDate(since.getUTCDate() - (request.query.days - 1))
      return { data: await transactions.daily(auth, since) }
    },
  )

  // A delivery's request and every attempt's answer, for the webhooks page (developer tools).
  app.get(
    '/dashboard/api/webhook/deliveries/:uuid/attempts',
    {
      config: { auth: 'key' },
      schema: { hide: true, operationId: 'dashboardDeliveryAttempts', params: UuidParams },
    },
    async (request) => webhooks.attempts(sessionCall(request), request.params.uuid),
  )

  // The merchant's profile as the operator set it: read-only in the dashboard.
  app.get(
    '/dashboard/api/merchant',
    { config: { auth: 'key' }, schema: { hide: true, operationId: 'dashboardMerchantProfile' } },
    async (request) => {
      const { merchant } = sessionCall(request)
      const fees = await Promise.all(
        PAYMENT_METHODS.map(async (method) => {
          const fee = await merchants.fee(merchant.uuid, method)
          return {
            payment_method: method,
            fee_bps: fee.fee_bps,
            merchant_fee_share_bps: fee.merchant_fee_share_bps,
          }
        }),
      )
      return {
        uuid: merchant.uuid,
        name: merchant.name,
        settlement_currency: merchant.settlement_currency,
        settlement_hold_seconds: merchant.settlement_hold_seconds,
        transaction_ttl_seconds: merchant.transaction_ttl_seconds,
        fx_markup_bps: merchant.fx_markup_bps,
        payout_fee_bps: merchant.payout_fee_bps,
        payout_fixed_fee_micro: merchant.payout_fixed_fee_micro,
        fees,
      }
    },
  )

  const root = builtPages()
  const security = (reply: { header(name: string, value: string): unknown }) => {
    reply.header('content-security-policy', DASHBOARD_CSP)
    reply.header('x-content-type-options', 'nosniff')
    reply.header('referrer-policy', 'same-origin')
  }
  if (!root) {
    app.get('/dashboard/*', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The dashboard is not built: run `npm run build` (npm install runs it).\n'),
    )
    return
  }
  await app.register(fastifyStatic, {
    root,
    prefix: '/dashboard/',
    index: false,
    wildcard: false,
    decorateReply: true,
    // A file reached by its own name (index.html among them) gets the same policy as the app's paths: a
    // page without frame-ancestors could be framed.
    setHeaders: (res, path) => {
      security(res)
      // Built files have a content hash in their names: they never change.
      if (path.includes('/assets/')) res.header('cache-control', 'public, max-age=31536000, immutable')
    },
  })
  // Every other page path is the app, which routes in the browser (`/dashboard` and `/dashboard/` alike: the
  // router ignores a trailing slash).
  const page = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.url.startsWith('/dashboard/api/') || request.url.startsWith('/dashboard/assets/'))
      throw new AppError('not_found')
    security(reply)
    reply.header('cache-control', 'no-store')
    return reply.sendFile('index.html')
  }
  app.get('/dashboard/*', { schema: { hide: true } }, page)
  app.get('/dashboard', { schema: { hide: true } }, page)
}

import { readFileSync } from 'node:fs'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { notFound } from '../../http/errors.ts'
import { renderNotFound, renderPage } from './page.ts'
import type { CheckoutService } from './service.ts'

const asset = (name: string) => readFileSync(new URL(`./assets/${name}`, import.meta.url))
/** The reset every page of the service starts from (the dashboard's too), then the hosted page's own rules. */
const stylesheet = Buffer.concat([
  readFileSync(new URL('../../http/assets/base.css', import.meta.url)),
  asset('checkout.css'),
])
const ASSETS: Record<string, { body: Buffer; type: string }> = {
  'checkout.css': { body: stylesheet, type: 'text/css; charset=utf-8' },
  'checkout.js': { body: asset('checkout.js'), type: 'text/javascript; charset=utf-8' },
}

/** Nothing but the service itself: no inline script or style, no other origin, no framing. */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': PAGE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
}

// Any string: a token the service never issued is the plain 404 page, whatever its length.
const TokenParams = Type.Object({ token: Type.String() }, { additionalProperties: false })
const hide = { hide: true }

/** Whether the customer is back from the provider's page: `returned=1` (given twice or more, once suffices). */
const isReturned = (query: unknown): boolean => {
  const returned = (query as Record<string, unknown> | undefined)?.returned
  return returned === '1' || (Array.isArray(returned) && returned.includes('1'))
}

/** The hosted payment page (docs/API.md, The hosted payment page): no credentials, reached by its own random token. */
export const checkoutRoutes: FastifyPluginAsyncTypebox<{ checkout: CheckoutService }> = async (
  app,
  { checkout },
) => {
  // Every reply of these routes, errors included, carries the page's security headers and is not cached
  // (the static assets excepted, which say so themselves).
  app.addHook('onSend', async (_request, reply) => {
    reply.headers(SECURITY_HEADERS)
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
  })

  app.get(
    '/pay/assets/:name',
    { schema: { ...hide, params: Type.Object({ name: Type.String() }) } },
    (request, reply) => {
      const file = ASSETS[request.params.name]
      if (!file) return reply.code(404).type('text/plain; charset=utf-8').send('Not found')
      return reply.header('cache-control', 'public, max-age=300').type(file.type).send(file.body)
    },
  )

  app.get('/pay/:token', { schema: { ...hide, params: TokenParams } }, async (request, reply) => {
    const data = await checkout.page(request.params.token)
    // A live payment a provider took is paid on the provider's page: the customer goes there, and the provider
    // sends them back with `returned=1` to follow the status here (docs/API.md, Live payments: the provider's page).
    if (data?.providerPage && !isReturned(request.query)) return reply.redirect(data.providerPage, 303)
    reply.type('text/html; charset=utf-8')
    if (!data) return reply.code(404).send(renderNotFound())
    return reply.send(renderPage(data))
  })

  app.get('/pay/:token/status', { schema: { ...hide, params: TokenParams } }, async (request) => {
    const view = await checkout.status(request.params.token)
    if (!view) throw notFound('payment')
    return view
  })

  for (const outcome of ['paid', 'failed'] as const) {
    app.post(
      `/pay/:token/simulate/${outcome}`,
      { config: { bodyOptional: true }, schema: { ...hide, params: TokenParams } },
      async (request) => {
        const view = await checkout.simulate(request.params.token, outcome)
        if (!view) throw notFound('payment')
        return view
      },
    )
  }
}

import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../../http/errors.ts'

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

/**
 * The dashboard's pages at /dashboard/… (the single-page app: every path that is not a file answers its
 * index.html). Their data comes from the dashboard's own API (routes.ts) and the merchant API itself
 * (access.ts).
 */
export const dashboardPages: FastifyPluginAsync = async (app) => {
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

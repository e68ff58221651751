import type { FastifyInstance } from 'fastify'

export interface SecurityHeadersOptions {
  /** Strict-Transport-Security's max-age; null: not sent (outside production or without https). */
  hstsMaxAgeSeconds: number | null
}

/**
 * What every answer gets, pages, API and /docs alike (docs/OPERATIONS.md, Security headers). A route with a
 * stricter policy of its own (the dashboard's and the hosted page's CSP and referrer policy) keeps it: these
 * fill in only what the route left unset.
 */
export function registerSecurityHeaders(app: FastifyInstance, options: SecurityHeadersOptions): void {
  const hsts = options.hstsMaxAgeSeconds === null ? null : `max-age=${options.hstsMaxAgeSeconds}`
  app.addHook('onSend', async (_request, reply) => {
    if (!reply.hasHeader('x-content-type-options')) reply.header('x-content-type-options', 'nosniff')
    if (!reply.hasHeader('referrer-policy')) reply.header('referrer-policy', 'no-referrer')
    if (hsts) reply.header('strict-transport-security', hsts)
  })
}

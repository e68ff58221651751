import type { FastifyInstance, FastifyServerOptions } from 'fastify'

const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/

/** Fastify's options for request ids: the caller's X-Request-Id when it is one we can log, else a fresh uuid. */
export const requestIdOptions: Pick<FastifyServerOptions, 'requestIdHeader' | 'genReqId'> = {
  requestIdHeader: false,
  genReqId: (req) => {
    const sent = req.headers['x-request-id']
    return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : crypto.randomUUID()
  },
}

/** Every answer carries its X-Request-Id (the router's own refusals set it in `frameworkErrors`). */
export function registerRequestId(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })
}

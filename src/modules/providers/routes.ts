import type { FastifyPluginAsync } from 'fastify'
import { BODY_LIMIT } from '../../http/body-parser.ts'
import type { ProviderService } from './service.ts'

/**
 * `POST /providers/{account}/callbacks`: where a provider posts its callbacks about what the gateway handed to
 * one connector account (docs/OPERATIONS.md, Callback URLs). Outside the merchant API: no API key, no session; the
 * account's callback secret signs each body. The body is read as it came, whatever its media type, so that what
 * is refused is kept in the callback log too; more than 64 KiB is 413 and not kept. Not in the merchant API's
 * OpenAPI document: docs/CONNECTORS.md describes it.
 */
export const providerRoutes: FastifyPluginAsync<{ providers: ProviderService }> = async (
  app,
  { providers },
) => {
  app.removeAllContentTypeParsers()
  const asReceived = (_request: unknown, body: Buffer | string, done: (error: null, body: unknown) => void) =>
    done(null, body)
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, asReceived)
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, asReceived)
  app.post<{ Params: { account: string } }>(
    '/providers/:account/callbacks',
    { schema: { hide: true } },
    async (request) => {
      const raw = request.body instanceof Buffer ? request.body : Buffer.alloc(0)
      const receipt = await providers.callbacks.receive({
        accountUuid: request.params.account,
        headers: request.headers,
        body: raw.toString('utf8'),
      })
      return { received: true, callback_id: receipt.uuid, result: receipt.result }
    },
  )
}

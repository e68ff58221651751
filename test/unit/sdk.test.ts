import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { ConnectionError, MerchantGateway, webhooks } from '../../sdk/src/index.ts'

/** A local HTTP server that records each request and answers as `respond` says. */
async function server(respond: (url: string) => { status: number; headers?: Record<string, string> }) {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = []
  const http = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers })
    const answer = respond(req.url ?? '')
    res
      .writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
      .end('{"data":[],"meta":{}}')
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  }
}

describe('the SDK, without the service', () => {
  let elsewhere: Awaited<ReturnType<typeof server>>
  let gateway: Awaited<ReturnType<typeof server>>
  before(async () => {
    elsewhere = await server(() => ({ status: 200 }))
    gateway = await server((url) =>
      url.startsWith('/integration/balances')
        ? { status: 302, headers: { location: `${elsewhere.url}/steal` } }
        : { status: 200 },
    )
  })
  after(async () => {
    await elsewhere.close()
    await gateway.close()
  })
  const mg = () =>
    new MerchantGateway({ apiKey: 'sk_test_abc', baseUrl: gateway.url, maxRetries: 0, retryBaseMs: 1 })

  it('does not follow a redirect: the key never reaches where it points', async () => {
    await assert.rejects(mg().balances.list(), ConnectionError)
    assert.equal(gateway.seen.at(-1)?.headers['x-api-key'], 'sk_test_abc')
    assert.equal(elsewhere.seen.length, 0)
  })

  it('leaves an empty multi-value filter out of the query instead of sending it empty', async () => {
    await mg().events.list({ type: [] as unknown as string })
    assert.equal(gateway.seen.at(-1)?.url, '/integration/events')
  })

  it('verify() skips an unset or empty secret in the list, and still needs one that matches', () => {
    const secret = webhooks.generateSecret()
    const body = '{"event":"transaction.paid","event_id":"e1"}'
    const headers = webhooks.signHeaders(body, { id: 'e1', secrets: secret })
    new Webhook(secret).verify(body, headers)
    const unset = process.env.MG_NO_SUCH_SECRET as string
    assert.equal(webhooks.verify(body, headers, [secret, unset, '']).event_id, 'e1')
    assert.equal(webhooks.verify(body, headers, ['', secret]).event_id, 'e1')
    assert.throws(() => webhooks.verify(body, headers, [unset, '']), /no secret to verify with/)
    assert.throws(
      () => webhooks.verify(body, headers, [webhooks.generateSecret(), unset]),
      /no signature matches/,
    )
  })
})

import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import {
  type ListLimitError,
  MerchantGateway,
  MerchantGatewayError,
  type UnexpectedResponseError,
  type WebhookVerificationError,
  webhooks,
} from '../../sdk/src/index.ts'

/** What `run` throws or rejects with, checked to be the SDK's error called `name` (by name: see the catch). */
async function sdkError<E extends MerchantGatewayError>(name: string, run: () => unknown): Promise<E> {
  let error: unknown
  try {
    await run()
  } catch (thrown) {
    error = thrown
  }
  assert.ok(error instanceof MerchantGatewayError, `not the SDK's error: ${String(error)}`)
  assert.equal(error.name, name, error.message)
  return error as E
}

interface Answer {
  status: number
  headers?: Record<string, string>
  body?: string
}

/** A local HTTP server that records each request and answers as `respond` says. */
async function server(respond: (url: string) => Answer) {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = []
  const http = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers })
    const answer = respond(req.url ?? '')
    res
      .writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
      .end(answer.body ?? '{"data":[],"meta":{}}')
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
    gateway = await server((url): Answer => {
      if (url.startsWith('/integration/balances'))
        return { status: 302, headers: { location: `${elsewhere.url}/steal` } }
      if (url.startsWith('/integration/rates'))
        return {
          status: 200,
          headers: { 'content-type': 'text/html' },
          body: '<html>Sign in to the Wi-Fi</html>',
        }
      // Three pages of two refunds each: r1 … r6.
      if (url.startsWith('/integration/refunds')) {
        const page = Number(new URL(url, 'http://x').searchParams.get('cursor') ?? '0')
        const data = [1, 2].map((i) => ({ uuid: `r${page * 2 + i}` }))
        const meta = { next_cursor: page < 2 ? String(page + 1) : null }
        return { status: 200, body: JSON.stringify({ data, meta }) }
      }
      return { status: 200 }
    })
  })
  after(async () => {
    await elsewhere.close()
    await gateway.close()
  })
  const mg = () =>
    new MerchantGateway({ apiKey: 'sk_test_abc', baseUrl: gateway.url, maxRetries: 0, retryBaseMs: 1 })

  it('does not follow a redirect, nor retry it: one request, an error naming the status and where it pointed', async () => {
    const before = gateway.seen.length
    const retrying = new MerchantGateway({ apiKey: 'sk_test_abc', baseUrl: gateway.url, retryBaseMs: 1 })
    const error = await sdkError<UnexpectedResponseError>('UnexpectedResponseError', () =>
      retrying.balances.list(),
    )
    assert.equal(error.status, 302)
    assert.match(error.message, new RegExp(`302 \\(a redirect to ${elsewhere.url}/steal\\)`))
    assert.equal(gateway.seen.length - before, 1, 'a 3xx is answered once, not retried')
    assert.equal(gateway.seen.at(-1)?.headers['x-api-key'], 'sk_test_abc')
    assert.equal(elsewhere.seen.length, 0)
  })

  it('a 2xx that is not JSON is an UnexpectedResponseError with the status and the start of the body', async () => {
    const error = await sdkError<UnexpectedResponseError>('UnexpectedResponseError', () => mg().rates.list())
    assert.equal(error.status, 200)
    assert.equal(error.snippet, '<html>Sign in to the Wi-Fi</html>')
    assert.match(
      error.message,
      /GET \/integration\/rates answered 200 with a body that is not JSON \(text\/html\)/,
    )
  })

  it('takes the key, key id and address from the environment variables the CLI reads; options given win', async () => {
    const names = ['MERCHANT_GATEWAY_API_KEY', 'MERCHANT_GATEWAY_KEY_ID', 'MERCHANT_GATEWAY_BASE_URL']
    const saved = names.map((name) => process.env[name])
    try {
      process.env.MERCHANT_GATEWAY_API_KEY = 'sk_test_fromenv'
      process.env.MERCHANT_GATEWAY_KEY_ID = 'mk_test_fromenv'
      process.env.MERCHANT_GATEWAY_BASE_URL = gateway.url
      const fromEnv = new MerchantGateway()
      assert.equal(fromEnv.http.baseUrl, gateway.url)
      assert.equal(fromEnv.http.canSign, true)
      await fromEnv.events.list()
      assert.equal(gateway.seen.at(-1)?.headers['x-api-key'], 'sk_test_fromenv')
      // An option given explicitly wins over its variable.
      const explicit = new MerchantGateway({ apiKey: 'sk_test_explicit', baseUrl: elsewhere.url })
      assert.equal(explicit.http.baseUrl, elsewhere.url)
      await explicit.events.list()
      assert.equal(elsewhere.seen.at(-1)?.headers['x-api-key'], 'sk_test_explicit')
      // No key anywhere: the error names the variable.
      delete process.env.MERCHANT_GATEWAY_API_KEY
      assert.throws(() => new MerchantGateway(), /MERCHANT_GATEWAY_API_KEY/)
    } finally {
      names.forEach((name, i) => {
        if (saved[i] === undefined) delete process.env[name]
        else process.env[name] = saved[i]
      })
    }
  })

  it('toArray() returns every item up to its limit, and throws rather than cut a longer list short', async () => {
    const uuids = async (limit?: number) => (await mg().refunds.list().toArray(limit)).map((r) => r.uuid)
    assert.deepEqual(await uuids(), ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'])
    assert.deepEqual(await uuids(6), ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'])
    for (const limit of [5, 4, 1]) {
      const error = await sdkError<ListLimitError>('ListLimitError', () => mg().refunds.list().toArray(limit))
      assert.equal(error.limit, limit)
      assert.match(error.message, new RegExp(`more than ${limit} items`))
    }
    await assert.rejects(mg().refunds.list().toArray(0), /whole number of 1 or more/)
  })

  it('verify() given a parsed body says to pass the raw one, as a WebhookVerificationError', async () => {
    const secret = webhooks.generateSecret()
    const body = '{"event":"transaction.paid","event_id":"e1"}'
    const headers = webhooks.signHeaders(body, { id: 'e1', secrets: secret })
    for (const parsed of [JSON.parse(body), null, undefined]) {
      const error = await sdkError<WebhookVerificationError>('WebhookVerificationError', () =>
        webhooks.verify(parsed as never, headers, secret),
      )
      assert.match(error.message, /raw body exactly as received, a string or a Buffer/)
      assert.match(error.message, /express\.raw\(\{ type: 'application\/json' \}\)/)
    }
    assert.equal(webhooks.verify(Buffer.from(body), headers, secret).event_id, 'e1')
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

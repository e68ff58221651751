import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { newId } from '../../../src/lib/ids.ts'
import { backends, call, eventually, newTransaction, postTransaction } from '../../helpers/harness.ts'
import { suiteContext, suiteReceiver, suiteWorkers } from '../../helpers/suite.ts'
import { attemptRows } from './helpers.ts'

/** Targets that must never be reached from the gateway, as a merchant might write them. */
const PRIVATE_TARGETS: [string, string][] = [
  ['loopback', 'http://127.0.0.1/hooks'],
  ['loopback with a port', 'http://127.0.0.1:8080/hooks'],
  ['RFC 1918 10/8', 'http://10.0.0.1/hooks'],
  ['RFC 1918 172.16/12', 'http://172.16.0.1/hooks'],
  ['RFC 1918 192.168/16', 'http://192.168.1.1/hooks'],
  ['cloud metadata (link-local)', 'http://169.254.169.254/latest/meta-data/'],
  ['carrier-grade NAT', 'http://100.64.0.1/hooks'],
  ['unspecified', 'http://0.0.0.0/hooks'],
  ['IPv6 loopback', 'http://[::1]/hooks'],
  ['IPv6 unique-local', 'http://[fd00::1]/hooks'],
  ['IPv6 link-local', 'http://[fe80::1]/hooks'],
  ['IPv4-mapped IPv6 loopback', 'http://[::ffff:127.0.0.1]/hooks'],
  ['NAT64 of loopback', 'http://[64:ff9b::7f00:1]/hooks'],
  ['a name resolving to 127.0.0.1', 'http://localhost/hooks'],
  ['a name resolving to 127.0.0.1, with a port', 'http://localhost:3000/hooks'],
  ['decimal spelling of 127.0.0.1', 'http://2130706433/hooks'],
  ['hexadecimal spelling of 127.0.0.1', 'http://0x7f000001/hooks'],
  ['short spelling of 127.0.0.1', 'http://127.1/hooks'],
]

for (const backend of backends()) {
  describe(`SSRF: private targets are refused when private networks are not allowed (${backend})`, () => {
    // A refused attempt is retried a minute later: long after the suite ends.
    const ctx = suiteContext(backend, {
      config: { webhookAllowPrivateNetworks: false },
      services: { dispatch: { schedule: [60] } },
    })
    const workers = suiteWorkers(ctx)
    const receiver = suiteReceiver(ctx)

    it('PUT /integration/webhook refuses each private target with 422 naming url, and stores nothing', async () => {
      for (const [what, url] of PRIVATE_TARGETS) {
        const res = await call(ctx, 'PUT', '/integration/webhook', { url })
        assert.equal(res.statusCode, 422, `${what}: ${url} → ${res.body}`)
        const { error } = res.json()
        assert.equal(error.code, 'validation_failed')
        assert.deepEqual(Object.keys(error.errors), ['url'], `${what}: ${res.body}`)
        assert.match(error.errors.url[0], /non-public address/, `${what}: ${res.body}`)
      }
      const config = (await call(ctx, 'GET', '/integration/webhook')).json()
      assert.equal(config.url, null)
    })

    it('the refusal names the address that was found', async () => {
      const res = await call(ctx, 'PUT', '/integration/webhook', { url: 'http://localhost/hooks' })
      assert.match(
        res.json().error.errors.url[0],
        /localhost resolves to a non-public address \((127\.0\.0\.1|::1)\)/,
      )
      const literal = await call(ctx, 'PUT', '/integration/webhook', { url: 'http://[::ffff:127.0.0.1]/' })
      assert.match(literal.json().error.errors.url[0], /non-public address \(::ffff:7f00:1\)/)
    })

    it('a host that does not resolve is refused too (it cannot be checked)', async () => {
      const res = await call(ctx, 'PUT', '/integration/webhook', { url: 'http://no-such-host.invalid/hooks' })
      assert.equal(res.statusCode, 422, res.body)
      assert.match(res.json().error.errors.url[0], /does not resolve/)
    })

    it('a public target is accepted', async () => {
      const res = await call(ctx, 'PUT', '/integration/webhook', { url: 'http://8.8.8.8/hooks' })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().url, 'http://8.8.8.8/hooks')
      await call(ctx, 'PUT', '/integration/webhook', { url: null })
    })

    it('transaction create refuses each private callback_url with 422 naming callback_url, and creates nothing', async () => {
      for (const [what, url] of PRIVATE_TARGETS) {
        const body = newTransaction({ callback_url: url })
        const res = await call(ctx, 'POST', '/integration/transactions', body)
        assert.equal(res.statusCode, 422, `${what}: ${url} → ${res.body}`)
        const { error } = res.json()
        assert.equal(error.code, 'validation_failed')
        assert.deepEqual(Object.keys(error.errors), ['callback_url'], `${what}: ${res.body}`)
        const lookup = await call(ctx, 'GET', `/integration/transactions/by-external-id/${body.external_id}`)
        assert.equal(lookup.statusCode, 404)
      }
      const ok = await postTransaction(ctx, { callback_url: 'http://8.8.8.8/cb' })
      assert.equal(ok.statusCode, 201, ok.body)
    })

    it('at delivery time the attempt is refused, the error recorded, and the receiver gets nothing', async () => {
      // Rows that slipped past the configuration check (stored before the policy changed, or a name whose DNS
      // answer changed since): the dispatcher must refuse them on its own.
      const port = new URL(receiver.url).port
      const urls = [
        `${receiver.url}/hooks`,
        `http://localhost:${port}/hooks`,
        `http://[::ffff:127.0.0.1]:${port}/hooks`,
        `http://2130706433:${port}/hooks`,
      ]
      const now = new Date()
      const uuids: string[] = []
      for (const url of urls) {
        const uuid = newId()
        const eventId = newId()
        uuids.push(uuid)
        await ctx.db
          .insertInto('webhook_deliveries')
          .values({
            uuid,
            event_id: eventId,
            merchant_uuid: ctx.merchant.uuid,
            mode: 'test',
            event: 'transaction.paid',
            url,
            target: new URL(url).host,
            body: JSON.stringify({ event: 'transaction.paid', event_id: eventId }),
            status: 'pending',
            attempts: 0,
            next_attempt_at: now,
            is_test: false,
            created_at: now,
            updated_at: now,
          })
          .execute()
      }
      workers.dispatcher.wake()
      const rows = await eventually(async () => {
        const found = await ctx.db
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('uuid', 'in', uuids)
          .execute()
        return found.every((r) => r.attempts === 1) ? found : null
      })
      for (const row of rows) {
        assert.equal(row.status, 'pending', row.url)
        assert.equal(row.response_status, null, row.url)
        assert.match(row.error ?? '', /^refused: the target .*non-public address/, `${row.url}: ${row.error}`)
        const view = (await call(ctx, 'GET', `/integration/webhook/deliveries/${row.uuid}`)).json()
        assert.equal(view.error, row.error)
        const attempts = await attemptRows(ctx, row.uuid)
        assert.deepEqual(
          attempts.map((x) => x.error),
          [row.error],
        )
      }
      assert.equal(receiver.received.length, 0)
    })
  })

  describe(`SSRF: production requires https (${backend})`, () => {
    const ctx = suiteContext(backend, {
      config: { appEnv: 'production', webhookAllowPrivateNetworks: false },
    })

    it('an http webhook URL is 422, an https one to a public address is accepted', async () => {
      const http = await call(ctx, 'PUT', '/integration/webhook', { url: 'http://8.8.8.8/hooks' })
      assert.equal(http.statusCode, 422, http.body)
      assert.deepEqual(http.json().error.errors, { url: ['must use https'] })
      const https = await call(ctx, 'PUT', '/integration/webhook', { url: 'https://8.8.8.8/hooks' })
      assert.equal(https.statusCode, 200, https.body)
      const local = await call(ctx, 'PUT', '/integration/webhook', { url: 'https://127.0.0.1/hooks' })
      assert.equal(local.statusCode, 422, local.body)
      assert.match(local.json().error.errors.url[0], /non-public address/)
    })

    it('an http callback_url is 422', async () => {
      const http = await postTransaction(ctx, { callback_url: 'http://8.8.8.8/cb' })
      assert.equal(http.statusCode, 422, http.body)
      assert.deepEqual(http.json().error.errors, { callback_url: ['must use https'] })
      const https = await postTransaction(ctx, { callback_url: 'https://8.8.8.8/cb' })
      assert.equal(https.statusCode, 201, https.body)
    })
  })
}

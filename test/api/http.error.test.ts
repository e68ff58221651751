import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { backends, call, newTransaction } from '../helpers/harness.ts'
import { suiteContext } from '../helpers/suite.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The one error envelope (docs/API.md, Errors), its request_id the response's X-Request-Id. */
function assertError(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const { error } = res.json()
  assert.equal(error.code, code)
  assert.equal(typeof error.message, 'string')
  assert.ok(error.message.length > 0)
  assert.ok(error.request_id, 'request_id is set')
  assert.equal(error.request_id, res.headers['x-request-id'])
  assert.ok('details' in error, 'details is present (null or an object)')
  return error
}

for (const backend of backends()) {
  describe(`HTTP framework behaviour (${backend})`, () => {
    const ctx = suiteContext(backend)

    const create = (rawBody: string | undefined, headers: Record<string, string> = {}) =>
      call(ctx, 'POST', '/integration/transactions', undefined, {
        ...(rawBody !== undefined && { rawBody }),
        headers,
      })

    describe('request bodies', () => {
      it('answers 400 malformed_request for JSON that does not parse', async () => {
        for (const raw of ['{"amount":', '{amount: 1}', "{'a':1}", '{"a":1}}', 'nul']) {
          const res = await create(raw)
          assertError(res, 400, 'malformed_request')
        }
      })

      it('answers 400 malformed_request for an empty JSON body', async () => {
        const res = await create('')
        assertError(res, 400, 'malformed_request')
      })

      it('refuses a prototype-poisoning body with 400, not a 500', async () => {
        const res = await create(
          JSON.stringify({ ...newTransaction() }).replace(/^\{/, '{"__proto__":{"x":1},'),
        )
        assertError(res, 400, 'malformed_request')
        const ctor = await create('{"constructor":{"prototype":{"x":1}}}')
        assertError(ctor, 400, 'malformed_request')
      })

      it('answers 400 malformed_request for a body that is not valid UTF-8, and stores nothing', async () => {
        const tx = newTransaction()
        const json = Buffer.from(JSON.stringify({ ...tx, description: 'DESC' }))
        const at = json.indexOf('DESC')
        const invalid = [
          Buffer.from([0xff]), // never in UTF-8
          Buffer.from([0xc3]), // a sequence cut short
          Buffer.from([0xc0, 0xaf]), // an overlong "/"
          Buffer.from([0xed, 0xa0, 0x80]), // a surrogate (U+D800) encoded as UTF-8 (CESU-8)
          Buffer.from([0xf4, 0x90, 0x80, 0x80]), // past U+10FFFF
        ]
        for (const bytes of invalid) {
          const payload = Buffer.concat([json.subarray(0, at), bytes, json.subarray(at)])
          const res = await ctx.app.inject({
            method: 'POST',
            url: '/integration/transactions',
            headers: { 'content-type': 'application/json', 'x-api-key': ctx.merchant.keys.test.secret },
            payload,
          })
          const error = assertError(res, 400, 'malformed_request')
          assert.match(error.message, /UTF-8/, bytes.toString('hex'))
        }
        const lookup = await call(ctx, 'GET', `/integration/transactions/by-external-id/${tx.external_id}`)
        assert.equal(lookup.statusCode, 404, 'nothing was stored with a replacement character')
        // Valid multi-byte UTF-8, and a pair of surrogate escapes (one character), are read as sent.
        const ok = await create(
          JSON.stringify({ ...newTransaction(), description: 'Заказ ✓ 😀 PAIR' }).replace(
            'PAIR',
            '\\ud83d\\ude00',
          ),
        )
        assert.equal(ok.statusCode, 201, ok.body)
        assert.equal(ok.json().description, 'Заказ ✓ 😀 😀')
      })

      it('answers 400 malformed_request for a lone surrogate escape in a value or a key, at any depth', async () => {
        const tx = newTransaction()
        const raw = (description: string, metadata = '{"order":"1"}') =>
          JSON.stringify({ ...tx, description: 'DESC' })
            .replace('"DESC"', `"${description}"`)
            .replace(/}$/, `,"metadata":${metadata}}`)
        // Each string below is JSON text: '\\ud800' is the six characters of the escape.
        const sent = [
          raw('a\\ud800'), // a lone high surrogate
          raw('\\udc00 b'), // a lone low surrogate
          raw('\\ude00\\ud83d'), // a pair in the wrong order
          raw('x\\ud83dy'), // a high surrogate followed by a character
          raw('\\ud83d\\u0041'), // a high surrogate followed by another escape
          raw('ok', '{"order":"\\udfff"}'), // a nested value
          raw('ok', '{"k\\ud800":"1"}'), // a key
          raw('ok', '{"list":[["\\udbff"]]}'), // inside arrays
        ]
        for (const body of sent) {
          const error = assertError(await create(body), 400, 'malformed_request')
          assert.match(error.message, /UTF-8/, body)
        }
        const lookup = await call(ctx, 'GET', `/integration/transactions/by-external-id/${tx.external_id}`)
        assert.equal(lookup.statusCode, 404)
        // An escaped backslash before "ud800" ("\\ud800" in the JSON) is the text \ud800: accepted as sent.
        const text = await create(JSON.stringify({ ...newTransaction(), description: '\\ud800' }))
        assert.equal(text.statusCode, 201, text.body)
        assert.equal(text.json().description, '\\ud800')
      })

      it('answers 422 when the JSON is valid but not an object', async () => {
        for (const raw of ['[]', '"text"', '42', 'null']) {
          const res = await create(raw)
          const error = assertError(res, 422, 'validation_failed')
          assert.ok(error.errors && Object.keys(error.errors).length > 0, raw)
        }
      })

      it('answers 415 for a body that is not application/json', async () => {
        const tx = newTransaction()
        const plain = await create(JSON.stringify(tx), { 'content-type': 'text/plain' })
        assertError(plain, 415, 'unsupported_media_type')
        const form = await create('amount=1000&currency=RUB', {
          'content-type': 'application/x-www-form-urlencoded',
        })
        assertError(form, 415, 'unsupported_media_type')
        const multipart = await create('--b\r\n\r\nx\r\n--b--', {
          'content-type': 'multipart/form-data; boundary=b',
        })
        assertError(multipart, 415, 'unsupported_media_type')
        // The JSON one, sent as text, was not created.
        const lookup = await call(ctx, 'GET', `/integration/transactions/by-external-id/${tx.external_id}`)
        assert.equal(lookup.statusCode, 404)
      })

      it('accepts application/json with a charset parameter', async () => {
        const res = await create(JSON.stringify(newTransaction()), {
          'content-type': 'application/json; charset=utf-8',
        })
        assert.equal(res.statusCode, 201, res.body)
      })

      it('answers 413 for a body over 64 KiB, and reads one of exactly 64 KiB', async () => {
        const body = (size: number) => {
          const base = JSON.stringify({ ...newTransaction(), description: '' })
          return base.replace('"description":""', `"description":"${'x'.repeat(size - base.length)}"`)
        }
        const atLimit = body(64 * 1024)
        assert.equal(Buffer.byteLength(atLimit), 65536)
        // Read and validated: the description is too long, but the size is allowed.
        const read = await create(atLimit)
        const error = assertError(read, 422, 'validation_failed')
        assert.ok(error.errors.description)

        const over = body(64 * 1024 + 1)
        assert.equal(Buffer.byteLength(over), 65537)
        assertError(await create(over), 413, 'payload_too_large')
      })
    })

    describe('X-Request-Id', () => {
      it('echoes a valid client value on success and in the error envelope', async () => {
        const ok = await call(ctx, 'GET', '/integration/transactions', undefined, {
          headers: { 'x-request-id': 'req-1:a/b+c=d@e.f_g' },
        })
        assert.equal(ok.statusCode, 200, ok.body)
        assert.equal(ok.headers['x-request-id'], 'req-1:a/b+c=d@e.f_g')

        const id = 'x'.repeat(128)
        const failed = await create('{', { 'x-request-id': id })
        assert.equal(failed.headers['x-request-id'], id)
        assert.equal(assertError(failed, 400, 'malformed_request').request_id, id)
      })

      it('replaces an invalid client value with a generated one', async () => {
        for (const sent of ['x'.repeat(129), 'has spaces in it', 'semi;colon', '']) {
          const res = await call(ctx, 'GET', '/integration/transactions/unknown', undefined, {
            headers: { 'x-request-id': sent },
          })
          const error = assertError(res, 404, 'not_found')
          assert.notEqual(res.headers['x-request-id'], sent)
          assert.match(String(res.headers['x-request-id']), UUID)
          assert.equal(error.request_id, res.headers['x-request-id'])
        }
      })

      it('generates a distinct id for every request without one', async () => {
        const a = await call(ctx, 'GET', '/integration/transactions')
        const b = await call(ctx, 'GET', '/integration/transactions')
        assert.match(String(a.headers['x-request-id']), UUID)
        assert.match(String(b.headers['x-request-id']), UUID)
        assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id'])
      })
    })

    describe('routing', () => {
      it('answers 405 with Allow for a wrong method on a known path', async () => {
        const collection = await call(ctx, 'DELETE', '/integration/transactions')
        assertError(collection, 405, 'method_not_allowed')
        const allow = String(collection.headers.allow).split(/,\s*/)
        assert.ok(allow.includes('GET') && allow.includes('POST'), String(collection.headers.allow))
        assert.ok(!allow.includes('DELETE'))

        const one = await call(ctx, 'PUT', '/integration/transactions/01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10', {
          amount: 1,
        })
        assertError(one, 405, 'method_not_allowed')
        assert.ok(String(one.headers.allow).split(/,\s*/).includes('GET'))
        assert.ok(!String(one.headers.allow).split(/,\s*/).includes('PUT'))

        const h2h = await call(
          ctx,
          'POST',
          '/integration/transactions/01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10/h2h',
          {},
        )
        assertError(h2h, 405, 'method_not_allowed')
      })

      it('answers the 404 envelope for an unknown path', async () => {
        for (const url of ['/integration/nope', '/nope', '/integration/transactions/a/b/c/d']) {
          assertError(await call(ctx, 'GET', url), 404, 'not_found')
        }
        const post = await call(ctx, 'POST', '/integration/unknown', {})
        assertError(post, 404, 'not_found')
      })

      it('answers the envelope for paths the router itself refuses', async () => {
        // Longer than the router's parameter limit: no identifier is that long, so 404 (not a bare 414).
        const long = await call(ctx, 'GET', `/integration/transactions/${'a'.repeat(300)}`, undefined, {
          headers: { 'x-request-id': 'long-path' },
        })
        assert.equal(assertError(long, 404, 'not_found').request_id, 'long-path')
        // A broken %-escape in a path parameter is a malformed request.
        const badEscape = await call(ctx, 'GET', '/integration/transactions/%E0%A4%A')
        assertError(badEscape, 400, 'malformed_request')
      })
    })
  })
}

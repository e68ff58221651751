import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { signature, signatureHeader, stringToSign } from '../../examples/sign.mjs'
import { parseSignatureHeader, sign, signingPayload } from '../../src/http/auth.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)

/** The worked example of docs/API.md ("Signing: a worked example"). */
const EXAMPLE = {
  keyId: 'mk_test_Q7wX2bN9kLm4Vt8RcZ1pHs3J',
  secret: 'sk_test_51Hx9QdXkV2pLrT7mZcN4wYbF8sJ3gKeA6uRoP0iDtM',
  t: 1795342530,
  method: 'POST',
  path: '/integration/transactions',
  idempotencyKey: 'order-1001-create',
  body: '{"amount":150000,"currency":"RUB","payment_method":"card","external_id":"order-1001"}',
}
const EXAMPLE_STRING =
  '1795342530.POST./integration/transactions.order-1001-create.{"amount":150000,"currency":"RUB","payment_method":"card","external_id":"order-1001"}'
const EXAMPLE_V1 = 'fc2f6a24c716000cb024f49dd69793faffbe61377214400ae1e1aede3a997b22'

/** The second, smaller example: a GET with a query string, no key, no body. */
const QUERY_EXAMPLE = {
  t: 1795342530,
  method: 'GET',
  path: '/integration/transactions?status=paid&per_page=2',
}
const QUERY_STRING = '1795342530.GET./integration/transactions?status=paid&per_page=2..'
const QUERY_V1 = '25d715719639dc059a7e30c17a30a7ef5928e2521b12ce820a882abdf1d66b7e'

const server = (r: {
  secret: string
  t: number
  method: string
  path: string
  idempotencyKey?: string
  body?: string | Buffer
}) => sign(r.secret, r.t, r.method, r.path, r.idempotencyKey ?? '', r.body ?? '')

describe('examples/sign.mjs', () => {
  it('reproduces the worked example of docs/API.md', () => {
    assert.equal(stringToSign(EXAMPLE).toString('utf8'), EXAMPLE_STRING)
    assert.equal(signature(EXAMPLE.secret, EXAMPLE), EXAMPLE_V1)
    assert.equal(signatureHeader(EXAMPLE), `key_id=${EXAMPLE.keyId},t=${EXAMPLE.t},v1=${EXAMPLE_V1}`)
    assert.equal(signature(EXAMPLE.secret, QUERY_EXAMPLE), QUERY_V1)
    assert.equal(stringToSign(QUERY_EXAMPLE).toString('utf8'), QUERY_STRING)
  })

  it('agrees with the server: the worked example is what src/http/auth.ts computes', () => {
    assert.equal(server(EXAMPLE), EXAMPLE_V1)
    assert.equal(server({ secret: EXAMPLE.secret, ...QUERY_EXAMPLE }), QUERY_V1)
    assert.deepEqual(
      stringToSign(EXAMPLE),
      signingPayload(EXAMPLE.t, EXAMPLE.method, EXAMPLE.path, EXAMPLE.idempotencyKey, EXAMPLE.body),
    )
    assert.deepEqual(parseSignatureHeader(signatureHeader(EXAMPLE)), {
      keyId: EXAMPLE.keyId,
      timestamp: EXAMPLE.t,
      signatures: [EXAMPLE_V1],
    })
  })

  it('agrees with the server on other requests: bytes, Unicode, query strings, lower-case methods', () => {
    const cases = [
      { method: 'get', path: '/integration/transactions/by-external-id/order-1001' },
      { method: 'POST', path: '/integration/refunds', idempotencyKey: 'r-1', body: '{"reason":"Возврат ✓"}' },
      { method: 'PUT', path: '/integration/webhook', body: Buffer.from([0x7b, 0xc3, 0xa9, 0x7d]) },
      { method: 'GET', path: '/integration/transactions?search=%D0%B0%20b&per_page=100' },
      { method: 'POST', path: '/integration/transactions', idempotencyKey: 'k with spaces ~!', body: '' },
    ]
    for (const [i, request] of cases.entries()) {
      const input = { ...request, t: 1_700_000_000 + i, secret: `sk_test_${'x'.repeat(40)}${i}` }
      assert.equal(signature(input.secret, input), server(input), request.path)
      assert.equal(
        signatureHeader({ ...input, keyId: 'mk_test_k' }),
        `key_id=mk_test_k,t=${input.t},v1=${server(input)}`,
      )
    }
  })

  it('stamps the current time when no t is given', () => {
    const before = Math.floor(Date.now() / 1000)
    const parsed = parseSignatureHeader(signatureHeader({ ...EXAMPLE, t: undefined }))
    const after = Math.floor(Date.now() / 1000)
    assert.ok(parsed)
    assert.ok(parsed.timestamp >= before && parsed.timestamp <= after)
    assert.equal(parsed.signatures[0], server({ ...EXAMPLE, t: parsed.timestamp }))
  })

  it('prints the same header from the command line', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        'examples/sign.mjs',
        '--key-id',
        EXAMPLE.keyId,
        '--method',
        EXAMPLE.method,
        '--path',
        EXAMPLE.path,
        '--idempotency-key',
        EXAMPLE.idempotencyKey,
        '--body',
        EXAMPLE.body,
        '--t',
        String(EXAMPLE.t),
      ],
      { cwd: ROOT, env: { ...process.env, MERCHANT_GATEWAY_SECRET: EXAMPLE.secret } },
    )
    assert.equal(stdout, `key_id=${EXAMPLE.keyId},t=${EXAMPLE.t},v1=${EXAMPLE_V1}\n`)
  })

  it('docs/API.md shows exactly these values', () => {
    const guide = readFileSync(new URL('../../docs/API.md', import.meta.url), 'utf8')
    for (const value of [
      EXAMPLE.secret,
      EXAMPLE.keyId,
      EXAMPLE_STRING,
      EXAMPLE_V1,
      `key_id=${EXAMPLE.keyId},t=${EXAMPLE.t},v1=${EXAMPLE_V1}`,
      QUERY_STRING,
      QUERY_V1,
      'examples/sign.mjs',
    ]) {
      assert.ok(guide.includes(value), `docs/API.md does not show ${value}`)
    }
  })
})

#!/usr/bin/env node
// Signs a merchant-gateway request: returns the value of the X-Signature header.
// Plain Node (>= 18), no dependencies: copy this file into your project. The scheme is in docs/API.md.
//
//   import { signatureHeader } from './sign.mjs'
//   const body = JSON.stringify({ transaction_uuid, amount_minor: 500 })
//   const headers = {
//     'Content-Type': 'application/json',
//     'Idempotency-Key': key,
//     'X-Signature': signatureHeader({ keyId, secret, method: 'POST', path: '/integration/refunds',
//                                      idempotencyKey: key, body }),
//   }
//   await fetch(`${baseUrl}/integration/refunds`, { method: 'POST', headers, body })
//
// Sign the body string you send, byte for byte: serialize once and send that same string.
//
// From the command line (the secret may come from MERCHANT_GATEWAY_SECRET instead of --secret):
//
//   node sign.mjs --key-id mk_test_… --secret sk_test_… --method POST --path /integration/transactions \
//     --idempotency-key order-1001-create --body '{"amount":150000,…}' [--t 1795342530] [--verbose]

import { createHmac } from 'node:crypto'
import { readFileSync, realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

/**
 * The exact bytes that are signed:
 * `<t>.<METHOD>.<path and query as sent>.<Idempotency-Key or empty>.<raw body bytes>`.
 *
 * @param {{ t: number, method: string, path: string, idempotencyKey?: string, body?: string | Uint8Array }} input
 * @returns {Buffer}
 */
export function stringToSign({ t, method, path, idempotencyKey = '', body = '' }) {
  if (!Number.isInteger(t) || t < 0) throw new TypeError('t must be unix seconds, a whole number')
  if (!path.startsWith('/'))
    throw new TypeError('path must be the path and query as sent, e.g. /integration/refunds')
  return Buffer.concat([
    Buffer.from(`${t}.${method.toUpperCase()}.${path}.${idempotencyKey}.`),
    Buffer.from(body),
  ])
}

/**
 * hex(HMAC-SHA256(secret, stringToSign(input))).
 *
 * @param {string} secret the key's secret, sk_test_… or sk_live_…
 * @param {{ t: number, method: string, path: string, idempotencyKey?: string, body?: string | Uint8Array }} input
 * @returns {string}
 */
export function signature(secret, input) {
  return createHmac('sha256', secret).update(stringToSign(input)).digest('hex')
}

/**
 * The X-Signature header value: `key_id=<key_id>,t=<unix seconds>,v1=<hex>`.
 * `t` defaults to now; the server accepts it within 300 s of its clock.
 *
 * @param {{ keyId: string, secret: string, method: string, path: string, idempotencyKey?: string,
 *           body?: string | Uint8Array, t?: number }} input
 * @returns {string}
 */
export function signatureHeader({ keyId, secret, t = Math.floor(Date.now() / 1000), ...request }) {
  return `key_id=${keyId},t=${t},v1=${signature(secret, { t, ...request })}`
}

function main(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      'key-id': { type: 'string' },
      secret: { type: 'string' },
      method: { type: 'string', default: 'GET' },
      path: { type: 'string' },
      'idempotency-key': { type: 'string', default: '' },
      body: { type: 'string' },
      'body-file': { type: 'string' },
      t: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  const secret = values.secret ?? process.env.MERCHANT_GATEWAY_SECRET
  if (values.help || !values['key-id'] || !secret || !values.path) {
    process.stderr.write(
      'usage: node sign.mjs --key-id <mk_…> --secret <sk_…> --method <METHOD> --path </integration/…?query>\n' +
        '                     [--idempotency-key <key>] [--body <json> | --body-file <file>] [--t <unix seconds>]\n' +
        '                     [--verbose]\n' +
        'Prints the X-Signature header value. The secret may come from MERCHANT_GATEWAY_SECRET.\n',
    )
    return values.help ? 0 : 2
  }
  const body = values['body-file'] !== undefined ? readFileSync(values['body-file']) : (values.body ?? '')
  const input = {
    keyId: values['key-id'],
    secret,
    method: values.method,
    path: values.path,
    idempotencyKey: values['idempotency-key'],
    body,
    ...(values.t !== undefined ? { t: Number(values.t) } : {}),
  }
  const header = signatureHeader(input)
  if (values.verbose) {
    const t = Number(/,t=(\d+),/.exec(header)?.[1])
    process.stderr.write(`string to sign: ${stringToSign({ ...input, t }).toString('utf8')}\n`)
  }
  process.stdout.write(`${header}\n`)
  return 0
}

// Run as a program (not imported): node sign.mjs …
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.exitCode = main(process.argv.slice(2))
  } catch (error) {
    process.stderr.write(`sign.mjs: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 2
  }
}

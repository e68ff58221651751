/**
 * A fuzz request from its index: the target, credentials and mutations drawn from the request's own seeded
 * stream (generate), then finalized into what app.inject sends, signed where it should be (finalize).
 */

import type { InjectOptions } from 'fastify'
import { sign } from '../../src/http/auth.ts'
import { seededRandom } from '../helpers/random.ts'
import { serialize } from './json.ts'
import { type Credentials, type Draft, MUTATORS, type Mutator } from './mutators.ts'
import type { FuzzContext } from './targets.ts'
import { chance, hex, pick, type Rng, randomText, SEED } from './values.ts'

function chooseCredentials(r: Rng, d: Draft, fc: FuzzContext): Credentials {
  const { merchant, other } = fc.ctx
  const t = d.target
  if (t.auth === 'none')
    return chance(r, 0.85) ? { kind: 'none' } : { kind: 'apiKey', value: pick(r, ['garbage', 'sk_test_x']) }
  const mode = chance(r, 0.1) ? 'live' : 'test'
  const key = merchant.keys[mode]
  if (chance(r, 0.75)) {
    if (t.auth === 'signature' || chance(r, 0.5)) return { kind: 'signature', key }
    return { kind: 'apiKey', value: key.secret }
  }
  d.tags.push('credentials')
  const now = Math.floor(Date.now() / 1000)
  const v1 = hex(r, 64)
  return pick(r, [
    (): Credentials => ({ kind: 'none' }),
    (): Credentials => ({ kind: 'apiKey', value: `sk_test_${randomText(r, 43)}` }),
    (): Credentials => ({ kind: 'apiKey', value: fc.revoked.secret }),
    (): Credentials => ({ kind: 'apiKey', value: '' }),
    (): Credentials => ({ kind: 'apiKey', value: 'k'.repeat(10_000) }),
    (): Credentials => ({ kind: 'apiKey', value: `${key.secret}\u0000` }),
    (): Credentials => ({ kind: 'apiKey', value: 'ключ' }),
    (): Credentials => ({ kind: 'apiKey', value: [key.secret, 'second'] }),
    (): Credentials => ({ kind: 'apiKey', value: key.key_id }),
    // A valid key of another merchant: authenticated, but sees none of this merchant's resources.
    (): Credentials => ({ kind: 'apiKey', value: other.keys.test.secret }),
    // A valid X-Api-Key on a money route is signature_required.
    (): Credentials => ({ kind: 'apiKey', value: key.secret }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'expired' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'future' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'body' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'url' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'idempotency' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'method' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'secret' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'many' }),
    (): Credentials => ({ kind: 'signature', key: fc.revoked }),
    (): Credentials => ({ kind: 'signature', key: { key_id: key.key_id, secret: other.keys.test.secret } }),
    // A valid X-Api-Key does not rescue a broken X-Signature.
    (): Credentials => ({ kind: 'signature', key, tamper: 'body', apiKey: key.secret }),
    (): Credentials => ({
      kind: 'rawSignature',
      value: pick(r, [
        '',
        'garbage',
        'key_id=,t=,v1=',
        `key_id=${key.key_id}`,
        `key_id=${key.key_id},t=abc,v1=${v1}`,
        `key_id=${key.key_id},t=${now},v1=zz`,
        `key_id=${key.key_id},t=99999999999999999999,v1=${v1}`,
        `key_id=${key.key_id},t=999999999999,v1=${v1}`,
        `key_id=${key.key_id},t=-1,v1=${v1}`,
        `key_id=${key.key_id},t=1e9,v1=${v1}`,
        `t=${now},v1=${v1}`,
        `key_id=${key.key_id},t=${now},v1=${v1.slice(1)}`,
        `key_id=${key.key_id};t=${now};v1=${v1}`,
        `key_id=${'k'.repeat(10_000)},t=${now},v1=${v1}`,
        `key_id=' OR 1=1--,t=${now},v1=${v1}`,
        `key_id=mk_test_\u0000,t=${now},v1=${v1}`,
        `key_id=ключ,t=${now},v1=${v1}`,
        `key_id=${key.key_id},t=${now},v0=${v1}`,
        `key_id=${key.key_id},t=${now},${Array.from({ length: 9 }, () => `v1=${v1}`).join(',')}`,
        `key_id=${key.key_id},t=${now},t=${now},v1=${v1}`,
        `key_id=${key.key_id},t=${now},v1=${v1}\r\nX-Injected: 1`,
        '=,=,=',
        ',,,,',
      ]),
    }),
    (): Credentials => ({ kind: 'rawSignature', value: ['garbage', 'more'], apiKey: key.secret }),
  ])()
}

export function generate(index: number, fc: FuzzContext): Draft {
  const r = seededRandom((SEED ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0)
  const target = pick(r, fc.targets)
  const d: Draft = {
    index,
    target,
    method: target.method,
    segments: [...target.segments],
    query: target.query,
    body: target.body?.(),
    headers: {},
    credentials: { kind: 'none' },
    uniqueKey: false,
    tags: [],
  }
  d.credentials = chooseCredentials(r, d, fc)
  if (target.idempotency === 'required' || (target.idempotency === 'optional' && chance(r, 0.5))) {
    d.idempotencyKey = `fz-${SEED}-${index}`
    d.uniqueKey = true
  }
  if (!chance(r, 0.07)) {
    const applicable = MUTATORS.filter((m) => m.applies(d))
    const total = applicable.reduce((sum, m) => sum + m.weight, 0)
    const times = chance(r, 0.6) ? 1 : chance(r, 0.75) ? 2 : 3
    for (let i = 0; i < times; i++) {
      let roll = r() * total
      let mutator = applicable[0] as Mutator
      for (const candidate of applicable) {
        mutator = candidate
        roll -= candidate.weight
        if (roll < 0) break
      }
      mutator.apply(r, d, fc)
      d.tags.push(mutator.name)
    }
  }
  // An expectation holds only for a request whose one change is the one that sets it.
  if (d.tags.length !== 1 || d.method !== target.method) {
    delete d.expect
    delete d.forbid
  }
  if (!d.tags.length) d.tags.push('valid')
  return d
}

export interface Sent {
  options: InjectOptions & { url: string; headers: Record<string, string | string[]> }
  /** Printable, with credentials named rather than shown. */
  describe(): string
}

export function finalize(d: Draft): Sent {
  const path = `/${d.segments.join('/')}`
  const url = d.query ? `${path}?${d.query}` : path
  const payload = d.payload ?? (d.body === undefined ? undefined : serialize(d.body))
  const headers: Record<string, string | string[]> = {}
  if (d.contentType === undefined) {
    if (payload !== undefined) headers['content-type'] = 'application/json'
  } else if (d.contentType !== null) headers['content-type'] = d.contentType
  if (d.idempotencyKey !== undefined) headers['idempotency-key'] = d.idempotencyKey
  Object.assign(headers, d.headers)

  const c = d.credentials
  let credentialNote: string = c.kind
  if (c.kind === 'apiKey') headers['x-api-key'] = c.value
  if (c.kind === 'rawSignature') {
    headers['x-signature'] = c.value
    if (c.apiKey) headers['x-api-key'] = c.apiKey
  }
  if (c.kind === 'signature') {
    // What the server sees as the URL: light-my-request sends it WHATWG-normalized.
    const sent = new URL(url, 'http://localhost')
    const signedUrl = c.tamper === 'url' ? `${sent.pathname}x${sent.search}` : sent.pathname + sent.search
    const now = Math.floor(Date.now() / 1000)
    const t = c.tamper === 'expired' ? now - 301 : c.tamper === 'future' ? now + 301 : now
    const key = Array.isArray(d.idempotencyKey) ? (d.idempotencyKey[0] ?? '') : (d.idempotencyKey ?? '')
    const body = payload ?? ''
    const v1 = sign(
      c.tamper === 'secret' ? `${c.key.secret}x` : c.key.secret,
      t,
      c.tamper === 'method' ? (d.method === 'GET' ? 'POST' : 'GET') : d.method,
      signedUrl,
      c.tamper === 'idempotency' ? `${key}x` : key,
      c.tamper === 'body' ? Buffer.concat([Buffer.from(body), Buffer.from(' ')]) : body,
    )
    const entries = c.tamper === 'many' ? [...Array.from({ length: 8 }, () => '0'.repeat(64)), v1] : [v1]
    headers['x-signature'] = `key_id=${c.key.key_id},t=${t},${entries.map((e) => `v1=${e}`).join(',')}`
    if (c.apiKey) headers['x-api-key'] = c.apiKey
    credentialNote = `signature${c.tamper ? `(${c.tamper})` : ''}`
  }
  const options = {
    method: d.method as InjectOptions['method'],
    url,
    headers,
    ...(payload !== undefined && { payload }),
  }
  return {
    options,
    describe() {
      const shown: Record<string, unknown> = {}
      for (const [name, value] of Object.entries(headers)) {
        const text = Array.isArray(value) ? value.join(' | ') : value
        // Real keys and signatures are named, not shown; a made-up X-Signature is shown as sent.
        shown[name] =
          name === 'x-api-key' || (name === 'x-signature' && c.kind !== 'rawSignature')
            ? `<${credentialNote}: ${text.length} chars>`
            : text.length > 120
              ? `${text.slice(0, 120)}…(${text.length} chars)`
              : text
      }
      const bodyText =
        payload === undefined
          ? 'none'
          : `${Buffer.byteLength(payload)} bytes: ${JSON.stringify(Buffer.from(payload).toString('utf8').slice(0, 300))}`
      return `#${d.index} ${d.method} ${url.length > 300 ? `${url.slice(0, 300)}…` : url} [${d.tags.join(', ')}] headers=${JSON.stringify(shown)} body=${bodyText}`
    },
  }
}

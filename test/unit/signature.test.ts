import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { describe, it } from 'node:test'
import {
  parseSignatureHeader,
  SIGNATURE_TOLERANCE_SECONDS,
  sign,
  signingPayload,
} from '../../src/http/auth.ts'

const HEX_A = 'a'.repeat(64)
const HEX_B = '0123456789abcdef'.repeat(4)

describe('parseSignatureHeader', () => {
  it('accepts key_id, t and one v1', () => {
    assert.deepEqual(parseSignatureHeader(`key_id=mk_test_abc,t=1700000000,v1=${HEX_A}`), {
      keyId: 'mk_test_abc',
      timestamp: 1700000000,
      signatures: [HEX_A],
    })
  })

  it('accepts the parts in any order, with spaces around them', () => {
    assert.deepEqual(parseSignatureHeader(` v1=${HEX_A} , t=1700000000 ,key_id=mk_live_xyz`), {
      keyId: 'mk_live_xyz',
      timestamp: 1700000000,
      signatures: [HEX_A],
    })
  })

  it('accepts several v1 entries and lower-cases them', () => {
    const parsed = parseSignatureHeader(`key_id=mk_test_k,t=1,v1=${HEX_A},v1=${HEX_B.toUpperCase()}`)
    assert.deepEqual(parsed?.signatures, [HEX_A, HEX_B])
    const eight = Array.from({ length: 8 }, () => `v1=${HEX_A}`).join(',')
    assert.equal(parseSignatureHeader(`key_id=mk_test_k,t=1,${eight}`)?.signatures.length, 8)
  })

  it('rejects malformed shapes', () => {
    const nine = Array.from({ length: 9 }, () => `v1=${HEX_A}`).join(',')
    for (const header of [
      '',
      'garbage',
      `t=1700000000,v1=${HEX_A}`,
      `key_id=,t=1700000000,v1=${HEX_A}`,
      // A key id the service could not have issued never reaches the database (a NUL byte there was a 500).
      `key_id=k,t=1700000000,v1=${HEX_A}`,
      `key_id=mk_prod_abc,t=1700000000,v1=${HEX_A}`,
      `key_id=mk_test_\u0000,t=1700000000,v1=${HEX_A}`,
      `key_id=mk_test_${'a'.repeat(65)},t=1700000000,v1=${HEX_A}`,
      `key_id=mk_test_k,v1=${HEX_A}`,
      'key_id=mk_test_k,t=1700000000',
      `key_id=mk_test_k,t=abc,v1=${HEX_A}`,
      `key_id=mk_test_k,t=-1,v1=${HEX_A}`,
      `key_id=mk_test_k,t=1.5,v1=${HEX_A}`,
      `key_id=mk_test_k,t=1234567890123,v1=${HEX_A}`,
      `key_id=mk_test_k,t=1700000000,v1=${'a'.repeat(63)}`,
      `key_id=mk_test_k,t=1700000000,v1=${'a'.repeat(65)}`,
      `key_id=mk_test_k,t=1700000000,v1=${'g'.repeat(64)}`,
      `key_id=mk_test_k,t=1700000000,v1=${HEX_A},v1=short`,
      `key_id=mk_test_k,t=1700000000,v1`,
      `key_id=mk_test_k;t=1700000000;v1=${HEX_A}`,
      `key_id=mk_test_k,t=1,${nine}`,
    ]) {
      assert.equal(parseSignatureHeader(header), null, header)
    }
  })
})

describe('sign', () => {
  const secret = 'sk_test_0123456789abcdefghijABCDEFGHIJ0123456'
  const independent = (message: string | Buffer) => createHmac('sha256', secret).update(message).digest('hex')

  it('is HMAC-SHA256 over "<t>.<METHOD>.<path and query>.<idempotency key>.<body>"', () => {
    const body = '{"amount":150000,"currency":"RUB"}'
    const expected = independent(`1700000000.POST./integration/refunds?x=1&y=2.idem-42.${body}`)
    assert.equal(sign(secret, 1700000000, 'POST', '/integration/refunds?x=1&y=2', 'idem-42', body), expected)
    assert.match(expected, /^[0-9a-f]{64}$/)
  })

  it('upper-cases the method and leaves an empty slot for a missing key or body', () => {
    assert.equal(
      sign(secret, 1700000000, 'get', '/integration/transactions', '', ''),
      independent('1700000000.GET./integration/transactions..'),
    )
  })

  it('signs the raw body bytes, not a re-serialisation', () => {
    const raw = Buffer.from('{ "description" : "Café ☕" }', 'utf8')
    const expected = independent(
      Buffer.concat([Buffer.from('1700000000.POST./integration/transactions.k.'), raw]),
    )
    assert.equal(sign(secret, 1700000000, 'POST', '/integration/transactions', 'k', raw), expected)
    assert.equal(
      sign(secret, 1700000000, 'POST', '/integration/transactions', 'k', raw.toString('utf8')),
      expected,
    )
    assert.deepEqual(
      signingPayload(1700000000, 'post', '/integration/transactions', 'k', raw),
      Buffer.concat([Buffer.from('1700000000.POST./integration/transactions.k.'), raw]),
    )
  })

  it('changes with every signed part', () => {
    const base = sign(secret, 1700000000, 'POST', '/a', 'k', '{}')
    assert.notEqual(sign(secret, 1700000001, 'POST', '/a', 'k', '{}'), base)
    assert.notEqual(sign(secret, 1700000000, 'PUT', '/a', 'k', '{}'), base)
    assert.notEqual(sign(secret, 1700000000, 'POST', '/b', 'k', '{}'), base)
    assert.notEqual(sign(secret, 1700000000, 'POST', '/a', 'k2', '{}'), base)
    assert.notEqual(sign(secret, 1700000000, 'POST', '/a', 'k', '{ }'), base)
    assert.notEqual(sign(`${secret}x`, 1700000000, 'POST', '/a', 'k', '{}'), base)
  })

  it('tolerates 300 seconds of clock skew (docs/API.md, Authentication)', () => {
    assert.equal(SIGNATURE_TOLERANCE_SECONDS, 300)
  })
})

import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import {
  constantTimeEqual,
  decryptSecret,
  encryptSecret,
  hmacSha256Hex,
  sha256Hex,
} from '../../src/lib/crypto.ts'

const masterKey = randomBytes(32)

/** Flips one bit of one base64url part of a sealed secret. */
function tamper(sealed: string, index: number): string {
  const parts = sealed.split('.')
  const bytes = Buffer.from(parts[index] as string, 'base64url')
  bytes[0] = (bytes[0] as number) ^ 1
  parts[index] = bytes.toString('base64url')
  return parts.join('.')
}

describe('encryptSecret / decryptSecret', () => {
  it('round-trips', () => {
    for (const plaintext of ['sk_test_abc123', '', 'ünïcødé ☕', 'x'.repeat(1000)]) {
      assert.equal(decryptSecret(masterKey, encryptSecret(masterKey, plaintext)), plaintext)
    }
  })

  it('seals as v1.<iv>.<tag>.<ciphertext> with a fresh IV each time, never the plaintext', () => {
    const a = encryptSecret(masterKey, 'sk_test_secret_value')
    const b = encryptSecret(masterKey, 'sk_test_secret_value')
    assert.match(a, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/)
    assert.notEqual(a, b)
    assert.ok(!a.includes('sk_test_secret_value'))
  })

  it('refuses tampered iv, tag or ciphertext', () => {
    const sealed = encryptSecret(masterKey, 'sk_live_do_not_touch')
    for (const index of [1, 2, 3]) assert.throws(() => decryptSecret(masterKey, tamper(sealed, index)))
  })

  it('refuses the wrong master key', () => {
    const sealed = encryptSecret(masterKey, 'sk_live_do_not_touch')
    assert.throws(() => decryptSecret(randomBytes(32), sealed))
  })

  it('refuses an unknown format', () => {
    const sealed = encryptSecret(masterKey, 'x')
    assert.throws(() => decryptSecret(masterKey, sealed.replace(/^v1/, 'v2')), /format/)
    assert.throws(() => decryptSecret(masterKey, 'v1.abc'), /format/)
    assert.throws(() => decryptSecret(masterKey, ''), /format/)
  })
})

describe('constantTimeEqual', () => {
  it('is true only for equal strings', () => {
    assert.equal(constantTimeEqual('abc', 'abc'), true)
    assert.equal(constantTimeEqual('', ''), true)
    assert.equal(constantTimeEqual('abc', 'abd'), false)
    assert.equal(constantTimeEqual('abc', 'ab'), false)
    assert.equal(constantTimeEqual('ab', 'abc'), false)
    assert.equal(constantTimeEqual('abc', ''), false)
    assert.equal(constantTimeEqual('é', 'e'), false)
  })
})

describe('digests', () => {
  it('sha256Hex and hmacSha256Hex match known vectors', () => {
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    // RFC 4231 test case 2
    assert.equal(
      hmacSha256Hex('Jefe', 'what do ya want for nothing?'),
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    )
  })
})

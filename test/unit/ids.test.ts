import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isUuid, newId, newPaymentToken, randomBase62, SECRET_LENGTH } from '../../src/lib/ids.ts'

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('newId', () => {
  it('is a lower-case UUIDv7', () => {
    for (let i = 0; i < 100; i++) assert.match(newId(), UUID_V7)
  })

  it('carries the current time in its first 48 bits', () => {
    const before = Date.now()
    const id = newId()
    const after = Date.now()
    const ms = Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)
    assert.ok(ms >= before && ms <= after, `${ms} not in [${before}, ${after}]`)
  })

  it('is unique and strictly increasing in generation order, even within one millisecond', () => {
    const ids = Array.from({ length: 5000 }, () => newId())
    assert.equal(new Set(ids).size, ids.length)
    for (let i = 1; i < ids.length; i++) assert.ok((ids[i - 1] as string) < (ids[i] as string), `at ${i}`)
  })
})

describe('randomBase62', () => {
  it('has the requested length and only base62 characters', () => {
    for (const length of [0, 1, 24, SECRET_LENGTH, 200]) {
      const value = randomBase62(length)
      assert.equal(value.length, length)
      assert.match(value, /^[0-9A-Za-z]*$/)
    }
  })

  it('uses the whole alphabet and does not repeat', () => {
    const sample = Array.from({ length: 200 }, () => randomBase62(SECRET_LENGTH))
    assert.equal(new Set(sample).size, sample.length)
    assert.equal(new Set(sample.join('')).size, 62)
  })

  it('a secret carries at least 256 bits', () => {
    assert.ok(SECRET_LENGTH * Math.log2(62) >= 256)
  })
})

describe('newPaymentToken and isUuid', () => {
  it('a payment token is 128 random bits, URL-safe', () => {
    const token = newPaymentToken()
    assert.match(token, /^[A-Za-z0-9_-]{22}$/)
    assert.equal(Buffer.from(token, 'base64url').length, 16)
    assert.notEqual(newPaymentToken(), token)
  })

  it('tokens stay distinct across many refills of their random pool (256 tokens a refill)', () => {
    const tokens = Array.from({ length: 2000 }, () => newPaymentToken())
    assert.equal(new Set(tokens).size, tokens.length)
    // Every byte value turns up in about equal measure: no zeroed or repeated pool slices.
    const counts = new Array<number>(256).fill(0)
    for (const token of tokens)
      for (const byte of Buffer.from(token, 'base64url')) counts[byte] = (counts[byte] ?? 0) + 1
    const expected = (tokens.length * 16) / 256
    for (const count of counts)
      assert.ok(count > expected / 2 && count < expected * 2, `${count} vs ${expected}`)
  })

  it('isUuid accepts lower-case hyphenated UUIDs only', () => {
    assert.equal(isUuid(newId()), true)
    assert.equal(isUuid('00000000-0000-0000-0000-000000000000'), true)
    assert.equal(isUuid(newId().toUpperCase()), false)
    assert.equal(isUuid(newId().replace(/-/g, '')), false)
    assert.equal(isUuid(`${newId()}x`), false)
    assert.equal(isUuid(''), false)
  })
})

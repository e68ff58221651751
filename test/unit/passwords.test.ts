import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DEFAULT_SCRYPT, hashPassword, verifyPassword } from '../../src/lib/passwords.ts'
import { DECOY_HASH } from '../../src/modules/users/sessions.ts'

describe('password hashing (scrypt)', () => {
  it('stores the scheme, its memory-hard parameters, a salt and the hash', async () => {
    const stored = await hashPassword('correct horse battery staple')
    const [scheme, n, r, p, salt, hash] = stored.split('$')
    assert.equal(scheme, 'scrypt')
    assert.deepEqual(
      [Number(n), Number(r), Number(p)],
      [DEFAULT_SCRYPT.N, DEFAULT_SCRYPT.r, DEFAULT_SCRYPT.p],
    )
    // At least 16 MiB of memory per hash: 128 × N × r bytes.
    assert.ok(128 * Number(n) * Number(r) >= 16 * 1024 * 1024)
    assert.equal(Buffer.from(salt as string, 'base64url').length, 16)
    assert.equal(Buffer.from(hash as string, 'base64url').length, 32)
    assert.ok(!stored.includes('correct horse'))
  })

  it('verifies the right password and refuses any other', async () => {
    const stored = await hashPassword('correct horse battery staple')
    assert.equal(await verifyPassword('correct horse battery staple', stored), true)
    assert.equal(await verifyPassword('correct horse battery stapl', stored), false)
    assert.equal(await verifyPassword('', stored), false)
  })

  it('salts every hash: one password twice gives two different strings, both verifiable', async () => {
    const a = await hashPassword('same password here')
    const b = await hashPassword('same password here')
    assert.notEqual(a, b)
    assert.equal(await verifyPassword('same password here', a), true)
    assert.equal(await verifyPassword('same password here', b), true)
  })

  it('verifies with the parameters stored in the hash, so they can be raised later', async () => {
    const cheaper = await hashPassword('an older password', { N: 2 ** 14, r: 8, p: 1 })
    assert.match(cheaper, /^scrypt\$16384\$8\$1\$/)
    assert.equal(await verifyPassword('an older password', cheaper), true)
  })

  it('never matches a string of another form', async () => {
    // Empty, no scheme, another scheme, and scrypt whose cost N is no positive number.
    const badCosts = ['0', 'x'].map((n) => `scrypt$${n}$8$1$c2FsdA$aGFzaA`)
    for (const stored of ['', 'plain', 'bcrypt$10$abc', ...badCosts])
      assert.equal(await verifyPassword('plain', stored), false)
  })

  it('the sign-in decoy hash has the default parameters, so checking it costs what a real one does', () => {
    const [, n, r, p] = DECOY_HASH.split('$')
    assert.deepEqual(
      [Number(n), Number(r), Number(p)],
      [DEFAULT_SCRYPT.N, DEFAULT_SCRYPT.r, DEFAULT_SCRYPT.p],
    )
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { passwordWeakness } from '../../src/lib/password-strength.ts'

describe('passwordWeakness', () => {
  it('refuses common, repetitive, sequential and keyboard-walk passwords of any length, saying why', () => {
    for (const [password, why] of [
      ['aaaaaaaaaaaa', /repeated/i],
      ['abcabcabcabcabc', /repeat/i],
      ['password1234', /common/i],
      ['Password1234!', /common/i],
      ['123456789012', /common|sequence/i],
      ['qwertyuiop12', /common|keyboard/i],
      ['iloveyou2024', /common|easy to guess|year|date/i],
    ] as const) {
      const weakness = passwordWeakness(password)
      assert.ok(weakness, `${password} is refused`)
      assert.match(weakness, why, password)
    }
  })

  it('accepts a passphrase and a random string', () => {
    assert.equal(passwordWeakness('a long enough password'), null)
    assert.equal(passwordWeakness('correct-horse-battery-staple'), null)
    assert.equal(passwordWeakness('Xk3p9vQ2mLw7Zr'), null)
  })
})

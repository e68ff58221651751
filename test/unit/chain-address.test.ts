import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkPayoutAddress, type PayoutAddressRefusal } from '../../src/chain/address.ts'

/** EIP-55's own examples, each in its checksummed form. */
const CHECKSUMMED = [
  '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
  '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
  '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
  '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
] as const
const TOKEN = '0xdAC17F958D2ee523a2206206994597C13D831ec7' // Tether's USDT on Ethereum

function assertRefused(input: string, reason: PayoutAddressRefusal, token: `0x${string}` = TOKEN) {
  const check = checkPayoutAddress(input, token)
  assert.equal(check.ok, false, `${input} accepted`)
  if (check.ok) return
  assert.equal(check.reason, reason, input)
  assert.ok(check.message.length > 10)
}

describe('checkPayoutAddress', () => {
  it('accepts a checksummed address as it is', () => {
    for (const address of CHECKSUMMED)
      assert.deepEqual(checkPayoutAddress(address, TOKEN), { ok: true, address })
  })

  it('accepts an address in one case, and gives its checksummed form', () => {
    for (const address of CHECKSUMMED) {
      for (const input of [address.toLowerCase(), `0x${address.slice(2).toUpperCase()}`])
        assert.deepEqual(checkPayoutAddress(input, TOKEN), { ok: true, address }, input)
    }
  })

  it('refuses a mixed-case address with any one letter in the wrong case', () => {
    let flips = 0
    for (const address of CHECKSUMMED) {
      for (let i = 2; i < address.length; i++) {
        const c = address.charAt(i)
        if (!/[a-fA-F]/.test(c)) continue
        const flipped = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()
        assertRefused(address.slice(0, i) + flipped + address.slice(i + 1), 'bad_checksum')
        flips++
      }
    }
    assert.equal(flips, 74) // every letter of the four addresses
  })

  it('refuses what is not 0x and 40 hex digits', () => {
    const address = CHECKSUMMED[0]
    for (const input of [
      '',
      '0x',
      address.slice(0, -1),
      `${address}0`,
      address.slice(2),
      `0X${address.slice(2)}`,
      ` ${address}`,
      `${address}\n`,
      `${address.slice(0, -1)}g`,
      'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE',
      'vitalik.eth',
    ])
      assertRefused(input, 'not_an_address')
  })

  it('refuses the zero address', () => {
    assertRefused(`0x${'0'.repeat(40)}`, 'zero_address')
  })

  it('refuses the token contract, however either is written', () => {
    assertRefused(TOKEN, 'token_contract')
    assertRefused(TOKEN.toLowerCase(), 'token_contract')
    assertRefused(TOKEN, 'token_contract', TOKEN.toLowerCase() as `0x${string}`)
    // another token's contract is an address like any other
    assert.equal(checkPayoutAddress(TOKEN, CHECKSUMMED[0]).ok, true)
  })

  it('gives each refusal its own message', () => {
    const messages = new Set(
      [
        checkPayoutAddress('0x1', TOKEN),
        checkPayoutAddress(CHECKSUMMED[0].replace('a', 'A'), TOKEN),
        checkPayoutAddress(`0x${'0'.repeat(40)}`, TOKEN),
        checkPayoutAddress(TOKEN, TOKEN),
      ].map((check) => (check.ok ? 'accepted' : check.message)),
    )
    assert.equal(messages.size, 4)
    assert.ok(!messages.has('accepted'))
  })
})

import assert from 'node:assert/strict'
import { pbkdf2Sync } from 'node:crypto'
import { describe, it } from 'node:test'
import { HDKey } from '@scure/bip32'
import { mnemonicToAccount } from 'viem/accounts'
import { DepositKeyError, depositAddress, depositAddressAt, depositBranch } from '../../src/chain/deposits.ts'

const MNEMONIC = 'test test test test test test test test test test test junk'
const OTHER_MNEMONIC =
  'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about'

/** The BIP-39 seed (PBKDF2, RFC 8018), then the BIP-44 account key m/44'/60'/0' of Ethereum. */
function accountKey(mnemonic: string): HDKey {
  const seed = pbkdf2Sync(mnemonic.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512')
  return HDKey.fromMasterSeed(seed).derive("m/44'/60'/0'")
}

describe('deposit addresses from an extended public key', () => {
  const xpub = accountKey(MNEMONIC).publicExtendedKey

  it("are the addresses of the mnemonic's accounts (m/44'/60'/0'/0/i), as viem derives them", () => {
    for (const index of [0, 1, 2, 9, 1000, 2 ** 31 - 1])
      assert.equal(
        depositAddress(xpub, index),
        mnemonicToAccount(MNEMONIC, { addressIndex: index }).address,
        `index ${index}`,
      )
    const other = accountKey(OTHER_MNEMONIC).publicExtendedKey
    assert.equal(depositAddress(other, 3), mnemonicToAccount(OTHER_MNEMONIC, { addressIndex: 3 }).address)
  })

  it("give Hardhat's well-known first account at index 0", () => {
    assert.equal(depositAddress(xpub, 0), '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266')
  })

  it('are different for each index and each key, and the same from a branch', () => {
    const branch = depositBranch(xpub)
    const addresses = Array.from({ length: 50 }, (_, i) => depositAddressAt(branch, i))
    assert.equal(new Set(addresses).size, 50)
    assert.equal(addresses[7], depositAddress(xpub, 7))
    const other = accountKey(OTHER_MNEMONIC).publicExtendedKey
    assert.ok(!addresses.includes(depositAddress(other, 0)))
  })

  it('refuse a private extended key', () => {
    const xprv = accountKey(MNEMONIC).privateExtendedKey
    assert.throws(() => depositBranch(xprv), DepositKeyError)
    assert.throws(() => depositAddress(xprv, 0), /private extended key/)
  })

  it('refuse what is not an extended key', () => {
    // one character changed breaks the base58 checksum
    const last = xpub.at(-1) === 'a' ? 'b' : 'a'
    for (const key of [
      '',
      'xpub',
      `${xpub.slice(0, -1)}${last}`,
      '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    ])
      assert.throws(() => depositBranch(key), DepositKeyError, key)
  })

  it('refuse an index that is not a non-hardened child number', () => {
    const branch = depositBranch(xpub)
    for (const index of [-1, 0.5, 2 ** 31, Number.NaN, Number.POSITIVE_INFINITY])
      assert.throws(() => depositAddressAt(branch, index), RangeError, String(index))
  })
})

import { secp256k1 } from '@noble/curves/secp256k1.js'
import { HARDENED_OFFSET, HDKey } from '@scure/bip32'
import { type Address, bytesToHex } from 'viem'
import { publicKeyToAddress } from 'viem/accounts'

/**
 * Deposit addresses derived from an extended public key (BIP-32): the gateway holds the xpub of an account (for a
 * wallet that follows BIP-44, the key at m/44'/60'/0'), never a private key, and gives deposit i the address of
 * xpub/0/i, the account's external branch. The wallet that holds the mnemonic finds the same addresses
 * (m/44'/60'/0'/0/i) and can move the funds; the gateway cannot.
 */

/** An extended key that cannot be used to derive deposit addresses, and why. */
export class DepositKeyError extends Error {
  override name = 'DepositKeyError'
}

/**
 * The external branch (xpub/0) of the account key `xpub`, from which deposit addresses are derived. Refuses what
 * is not a valid extended key, and a private extended key: the gateway must never hold one.
 */
export function depositBranch(xpub: string): HDKey {
  let account: HDKey
  try {
    account = HDKey.fromExtendedKey(xpub)
  } catch (error) {
    throw new DepositKeyError(`not an extended public key: ${(error as Error).message}`)
  }
  if (account.privateKey) {
    account.wipePrivateData()
    throw new DepositKeyError('a private extended key: deposits take the extended public key (xpub) only')
  }
  return account.deriveChild(0)
}

/** The address of deposit `index` (0 ≤ index < 2³¹) on `branch`, as `depositBranch` gives it. */
export function depositAddressAt(branch: HDKey, index: number): Address {
  if (!Number.isSafeInteger(index) || index < 0 || index >= HARDENED_OFFSET)
    throw new RangeError(`a deposit index is an integer from 0 to ${HARDENED_OFFSET - 1}, not ${index}`)
  const compressed = branch.deriveChild(index).publicKey
  if (!compressed) throw new DepositKeyError('the derived key has no public key')
  // BIP-32 keeps public keys compressed (33 bytes); an Ethereum address hashes the uncompressed point.
  const uncompressed = secp256k1.Point.fromBytes(compressed).toBytes(false)
  return publicKeyToAddress(bytesToHex(uncompressed))
}

/** The address of deposit `index` of the account key `xpub` (xpub/0/index). */
export const depositAddress = (xpub: string, index: number): Address =>
  depositAddressAt(depositBranch(xpub), index)

import { type Address, checksumAddress, zeroAddress } from 'viem'

/**
 * Where an ERC-20 payout may be sent. The gateway signs and broadcasts the transfer itself, so a mistyped or
 * pointless destination loses the money for good: such an address is refused before a payout is taken.
 *
 * Case (EIP-55): an address written in mixed case carries a checksum in its letters' case, and must match it; one
 * written in a single case (all lower, or all upper) carries none and is taken as it is. That is what MetaMask,
 * ethers and viem do and what exchanges accept, since explorers and many wallets print addresses in lower case:
 * refusing those would turn away good addresses, while accepting a mixed-case one with a wrong checksum would
 * accept the one case where a typo is detectable.
 */

/** Why an address is refused as an ERC-20 payout destination. */
export type PayoutAddressRefusal = 'not_an_address' | 'bad_checksum' | 'zero_address' | 'token_contract'

export type PayoutAddressCheck =
  | {
      ok: true
      /** The address in its EIP-55 form, as it is shown and put into the transfer. */
      address: Address
    }
  | { ok: false; reason: PayoutAddressRefusal; message: string }

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/

const refused = (reason: PayoutAddressRefusal, message: string): PayoutAddressCheck => ({
  ok: false,
  reason,
  message,
})

/** Checks `input` as an address tokens may be sent to: well formed, its checksum right, not the zero address. */
export function checkAddress(input: string): PayoutAddressCheck {
  if (!HEX_ADDRESS.test(input))
    return refused('not_an_address', 'An address is 0x followed by 40 hexadecimal digits.')
  const digits = input.slice(2)
  const mixedCase = /[a-f]/.test(digits) && /[A-F]/.test(digits)
  const address = checksumAddress(`0x${digits.toLowerCase()}`)
  if (mixedCase && address !== input)
    return refused(
      'bad_checksum',
      'The address is in mixed case but its EIP-55 checksum does not match: a character is probably mistyped.',
    )
  if (address === zeroAddress)
    return refused('zero_address', 'The zero address belongs to no one: tokens sent to it are lost.')
  return { ok: true, address }
}

/** Checks `input` as the destination of a transfer of the token at `token`. */
export function checkPayoutAddress(input: string, token: Address): PayoutAddressCheck {
  const checked = checkAddress(input)
  if (checked.ok && checked.address.toLowerCase() === token.toLowerCase())
    return refused('token_contract', 'This is the token contract itself: tokens sent to it are lost.')
  return checked
}

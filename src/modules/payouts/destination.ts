import cardValidator from 'card-validator'
import luhn10 from 'card-validator/dist/luhn-10.js'
import { checkAddress } from '../../chain/address.ts'
import { AppError } from '../../http/errors.ts'
import { decryptSecret, encryptSecret } from '../../lib/crypto.ts'
import { newId } from '../../lib/ids.ts'
import { WALLET_NETWORKS } from './schemas.ts'

type Network = (typeof WALLET_NETWORKS)[number]

/** Address shapes per network: TRON base58check (T + 33), Ethereum hex (0x + 40). */
const ADDRESS: Record<Network, RegExp> = {
  TRC20: /^T[1-9A-HJ-NP-Za-km-z]{33}$/,
  ERC20: /^0x[0-9a-fA-F]{40}$/,
}

const FIELDS = {
  usdt_wallet: ['address', 'network'],
  card: ['card_number', 'holder_name'],
} as const

/** 411111******1111: the first six and last four digits, the rest hidden. */
export const maskCardNumber = (digits: string): string =>
  `${digits.slice(0, 6)}${'*'.repeat(digits.length - 10)}${digits.slice(-4)}`

/** A destination as it is kept and shown, and, for the provider only, as it was given. */
export interface CheckedDestination {
  /** What is stored and shown: a card number only masked. */
  shown: Record<string, string>
  /** What the provider is sent (in memory only): the full card number, without spaces. */
  order: Record<string, string>
  cardBrand: string | null
  walletUuid: string | null
}

/**
 * Checks a payout destination for its method (docs/API.md, Payouts) and returns it masked. Every problem is reported
 * under its field; a card number is never echoed back.
 */
export function checkDestination(
  method: 'usdt_wallet' | 'card',
  destination: Record<string, string>,
): CheckedDestination {
  const errors: Record<string, string[]> = {}
  const fail = (field: string, message: string) => {
    errors[`destination.${field}`] = [message]
  }
  const allowed: readonly string[] = FIELDS[method]
  for (const key of Object.keys(destination))
    if (!allowed.includes(key))
      fail(key, `is not a field of a ${method} destination (use ${allowed.join(', ')})`)
  for (const key of allowed) if (destination[key] === undefined) fail(key, 'is required')

  let checked: CheckedDestination | null = null
  if (method === 'usdt_wallet') {
    const network = destination.network as Network | undefined
    const address = destination.address
    if (network !== undefined && !WALLET_NETWORKS.includes(network))
      fail('network', `must be one of ${WALLET_NETWORKS.join(', ')}`)
    else if (network && address !== undefined && !ADDRESS[network].test(address))
      fail('address', `is not a ${network} address`)
    else if (network === 'ERC20' && address !== undefined) {
      // The gateway may sign this transfer itself: a mistyped or ownerless address is refused now.
      const erc20 = checkAddress(address)
      if (!erc20.ok) fail('address', erc20.message)
    }
    if (network && address)
      checked = {
        shown: { address, network },
        order: { address, network },
        cardBrand: null,
        walletUuid: newId(),
      }
  } else {
    const digits = destination.card_number?.replace(/[ -]/g, '')
    const holder = destination.holder_name?.trim()
    if (digits !== undefined && !(/^\d{12,19}$/.test(digits) && luhn10(digits)))
      fail('card_number', 'is not a valid card number (12-19 digits passing the Luhn check)')
    if (
      holder !== undefined &&
      (holder.length < 1 || holder.length > 100 || !cardValidator.cardholderName(holder).isValid)
    )
      fail('holder_name', 'must be the name on the card, 1-100 characters')
    if (digits && holder)
      checked = {
        shown: { card_number: maskCardNumber(digits), holder_name: holder },
        order: { card_number: digits, holder_name: holder },
        cardBrand: cardValidator.number(digits).card?.type ?? 'unknown',
        walletUuid: null,
      }
  }
  if (Object.keys(errors).length || !checked)
    throw new AppError('validation_failed', 'The request is invalid.', null, errors)
  return checked
}

/**
 * The destination as the provider needs it (a full card number) is kept only sealed, and only until the
 * provider has taken the payout.
 */
export const sealDestination = (key: Buffer, order: Record<string, string>): string =>
  encryptSecret(key, JSON.stringify(order))

export const unsealDestination = (key: Buffer, sealed: string): Record<string, string> =>
  JSON.parse(decryptSecret(key, sealed)) as Record<string, string>

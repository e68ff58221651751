import {
  type Address,
  type BlockNumber,
  type Client,
  encodeFunctionData,
  erc20Abi,
  getAbiItem,
  type Hash,
  type Hex,
  maxUint256,
} from 'viem'
import { getLogs, readContract } from 'viem/actions'
import { currencyExponent } from '../lib/money.ts'

/**
 * An ERC-20 token as the gateway uses it: amounts converted exactly between the gateway's minor units and the
 * token's units, a balance read, a transfer's calldata built (signing and sending are the caller's), and the
 * Transfer logs to a set of addresses.
 */

/** The gateway counts USDT in micro units (6 digits), as Tether's ERC-20 contract on Ethereum does. */
export const USDT_EXPONENT = currencyExponent('USDT')

const pow10 = (n: number): bigint => 10n ** BigInt(n)

function checkDigits(what: string, digits: number) {
  if (!Number.isInteger(digits) || digits < 0 || digits > 36)
    throw new RangeError(`${what} is an integer from 0 to 36, not ${digits}`)
}

function toBigint(amount: bigint | number): bigint {
  if (typeof amount === 'bigint') return amount
  if (!Number.isSafeInteger(amount)) throw new RangeError(`not a whole number of minor units: ${amount}`)
  return BigInt(amount)
}

/**
 * `minor` units of the gateway's currency (10^-exponent) in units of a token with `decimals` decimals: exact,
 * and refused (RangeError) when negative or when the token cannot carry it (a fraction of its smallest unit).
 */
export function minorToTokenUnits(
  minor: bigint | number,
  decimals: number,
  exponent: number = USDT_EXPONENT,
): bigint {
  checkDigits('decimals', decimals)
  checkDigits('exponent', exponent)
  const amount = toBigint(minor)
  if (amount < 0n) throw new RangeError(`a negative amount: ${amount}`)
  if (decimals >= exponent) return amount * pow10(decimals - exponent)
  const divisor = pow10(exponent - decimals)
  if (amount % divisor !== 0n)
    throw new RangeError(
      `${amount} minor units are a fraction of the token's smallest unit (${decimals} decimals)`,
    )
  return amount / divisor
}

/**
 * `units` of a token with `decimals` decimals in the gateway's minor units (10^-exponent): exact, and refused
 * (RangeError) when negative or when it is not a whole number of minor units (a deposit of dust below them).
 */
export function tokenUnitsToMinor(units: bigint, decimals: number, exponent: number = USDT_EXPONENT): bigint {
  checkDigits('decimals', decimals)
  checkDigits('exponent', exponent)
  if (units < 0n) throw new RangeError(`a negative amount: ${units}`)
  if (exponent >= decimals) return units * pow10(exponent - decimals)
  const divisor = pow10(decimals - exponent)
  if (units % divisor !== 0n)
    throw new RangeError(`${units} token units (${decimals} decimals) are not a whole number of minor units`)
  return units / divisor
}

/** The token balance of `owner`, in token units, at `blockNumber` (the latest block when absent). */
export function tokenBalance(
  client: Client,
  token: Address,
  owner: Address,
  blockNumber?: bigint,
): Promise<bigint> {
  return readContract(client, {
    address: token,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [owner],
    blockNumber,
  })
}

/**
 * The calldata of `transfer(to, amount)`: what a transaction to the token's address carries (with no value) to
 * move `amount` token units. `to` must have passed `checkPayoutAddress`; a zero amount moves nothing and is refused.
 */
export function transferCalldata(to: Address, amount: bigint): Hex {
  if (amount <= 0n || amount > maxUint256) throw new RangeError(`not a transferable amount: ${amount}`)
  return encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] })
}

/** One Transfer event of the token, as its log says it. */
export interface TokenTransfer {
  from: Address
  to: Address
  /** Token units. */
  value: bigint
  blockNumber: bigint
  blockHash: Hash
  transactionHash: Hash
  logIndex: number
}

const TRANSFER_EVENT = getAbiItem({ abi: erc20Abi, name: 'Transfer' })

/**
 * The token's Transfer events to any of `to` (every one of them when `to` is null) in blocks `fromBlock` to
 * `toBlock` (both included), in chain order. The node filters on the indexed `to` topic, so one call covers every
 * deposit address. `toBlock` must not be past the head: some nodes (anvil) refuse such a range rather than clamp it.
 */
export async function transfersTo(
  client: Client,
  token: Address,
  to: readonly Address[] | null,
  fromBlock: BlockNumber,
  toBlock: BlockNumber,
): Promise<TokenTransfer[]> {
  if (to?.length === 0) return []
  const logs = await getLogs(client, {
    address: token,
    event: TRANSFER_EVENT,
    args: to ? { to: [...to] } : undefined,
    fromBlock,
    toBlock,
    strict: true,
  })
  return logs.map((log) => ({
    from: log.args.from,
    to: log.args.to,
    value: log.args.value,
    blockNumber: log.blockNumber,
    blockHash: log.blockHash,
    transactionHash: log.transactionHash,
    logIndex: log.logIndex,
  }))
}

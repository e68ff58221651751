import type { Address, Hex } from 'viem'
import { erc20Abi, getAbiItem, keccak256, parseEther, toHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Mode } from '../../src/db/types.ts'
import type { TestContext } from './context.ts'
import type { SuiteEvm } from './evm.ts'

/** A key derived from a label: a suite's wallets and recipients are the same on every run. */
export const keyOf = (label: string): Hex => keccak256(toHex(label))
export const addressOf = (label: string): Address => privateKeyToAccount(keyOf(label)).address

/** Sends `hot` gas (10 ETH) and `units` of TestUSDT from the node's deployer, and waits for both. */
export async function fundHotWallet(evm: SuiteEvm, hot: Address, units: bigint): Promise<void> {
  const { node, usdt } = evm
  await node.public.waitForTransactionReceipt({
    hash: await node.wallet.sendTransaction({ to: hot, value: parseEther('10') }),
  })
  await node.public.waitForTransactionReceipt({
    hash: await node.wallet.writeContract({
      address: usdt.address,
      abi: usdt.abi,
      functionName: 'transfer',
      args: [hot, units],
    }),
  })
}

/**
 * An `evm-erc20` account on the suite's node and TestUSDT, paying from the wallet of `key`, and the operator's
 * default route of `mode`'s ERC20 payouts to it (unless `route` is false). `rpcUrl` stands in for the node's own
 * URL (a proxy in front of it, or one that does not answer); `timeoutMs` is how long a call to it may take (5 s by
 * default). Returns the account's uuid.
 */
export async function addEvmAccount(
  ctx: TestContext,
  evm: SuiteEvm,
  options: {
    name: string
    mode: Mode
    key: Hex
    confirmations: number
    replaceAfterBlocks: number
    rpcUrl?: string
    /** Whether the operator's default route of the mode's ERC20 payouts goes to it (true unless said). */
    route?: boolean
    timeoutMs?: number
    /** The extended public key its deposit addresses are derived from, when it takes deposits. */
    depositXpub?: string
  },
): Promise<string> {
  const added = await ctx.services.providers.accounts.add({
    name: options.name,
    kind: 'evm-erc20',
    mode: options.mode,
    settings: {
      rpc_url: options.rpcUrl ?? evm.node.url,
      chain_id: String(evm.node.chain.id),
      token_contract: evm.usdt.address,
      confirmations: String(options.confirmations),
      replace_after_blocks: String(options.replaceAfterBlocks),
      timeout_ms: String(options.timeoutMs ?? 5000),
    },
    secrets: {
      hot_wallet_key: options.key,
      ...(options.depositXpub !== undefined && { deposit_xpub: options.depositXpub }),
    },
  })
  ctx.secrets.push(options.key)
  if (options.route === false) return added.account.uuid
  await ctx.services.providers.routes.set(
    { merchantUuid: null, mode: options.mode, subject: 'payout', method: 'usdt_wallet', network: 'ERC20' },
    [options.name],
  )
  return added.account.uuid
}

const TRANSFER = getAbiItem({ abi: erc20Abi, name: 'Transfer' })

/** TestUSDT's Transfer events from `from` (to `to` only, when given), over the whole chain, in chain order. */
export const transfersFrom = (evm: SuiteEvm, from: Address, to?: Address) =>
  evm.node.public.getLogs({
    address: evm.usdt.address,
    event: TRANSFER,
    args: { from, ...(to && { to }) },
    fromBlock: 0n,
    toBlock: 'latest',
  })

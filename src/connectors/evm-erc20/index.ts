import {
  type Address,
  type Chain,
  createPublicClient,
  defineChain,
  formatUnits,
  getAddress,
  type Hex,
  http,
  keccak256,
  type PrivateKeyAccount,
  type PublicClient,
  parseGwei,
  parseTransaction,
  TransactionReceiptNotFoundError,
  type Transport,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { checkPayoutAddress } from '../../chain/address.ts'
import { depositAddressAt, depositBranch } from '../../chain/deposits.ts'
import { minorToTokenUnits, tokenBalance, transferCalldata, transfersTo } from '../../chain/token.ts'
import type * as types from '../types.ts'
import type { EvmErc20Settings } from './settings.ts'
import type { ChainDepositStore, ChainTransactionStore, Signed, SignedTransaction } from './store.ts'

/** Where an `evm-erc20` account keeps what it signs and the deposit addresses it gives, and which account it is. */
export interface EvmErc20Stores {
  accountUuid: string
  transactions: ChainTransactionStore
  deposits: ChainDepositStore
}

/** A replacement offers at least this much more per gas than the one it replaces (geth's and Hardhat's rule: 10 %). */
const BUMP_PERCENT = 125n

/** Node errors that say the bytes broadcast are already known to it or already mined: nothing to do. */
const ALREADY_KNOWN =
  /already known|known transaction|nonce too low|already imported|transaction already exists/i

const refused = (code: string, message: string) => ({ kind: 'refused', code, message }) as const
const noAnswer = (error: unknown) =>
  ({
    kind: 'no_answer',
    reason: error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error),
  }) as const

/**
 * The `evm-erc20` kind (docs/CONNECTORS.md, The evm-erc20 kind): payouts in an ERC-20 token, paid by the gateway
 * itself from the account's hot wallet on an EVM chain, through the chain's JSON-RPC.
 *
 * A payout's transfer is signed under the hot wallet's nonce lock and kept (`ChainTransactionStore`) before it is
 * broadcast; a repeat of the hand-over (after a crash, a lost answer) broadcasts the same bytes again, never a new
 * transaction. The payout's reference is its first transaction's hash. Its status is the chain's: processing until
 * one of its transactions is mined and has the account's confirmations, then completed (or failed, reverted). One
 * not mined within `replace_after_blocks` is replaced by the same nonce with higher fees; whichever is mined
 * counts. A transaction dropped by a reorganisation is broadcast again at the next status check.
 */
export class EvmErc20Connector implements types.AccountConnector {
  readonly kind = 'evm-erc20'
  readonly #settings: EvmErc20Settings
  readonly #client: PublicClient<Transport, Chain>
  readonly #wallet: PrivateKeyAccount
  readonly #token: Address
  readonly #store: ChainTransactionStore
  readonly #stores: EvmErc20Stores
  /** The external branch of the deposit key, when the account takes deposits. */
  readonly #depositBranch: ReturnType<typeof depositBranch> | null
  readonly deposits: types.DepositChain | undefined

  constructor(settings: EvmErc20Settings, secrets: Record<string, string>, stores: EvmErc20Stores) {
    this.#settings = settings
    this.#stores = stores
    this.#depositBranch = secrets.deposit_xpub ? depositBranch(secrets.deposit_xpub) : null
    const key = secrets.hot_wallet_key ?? ''
    if (!/^0x[0-9a-fA-F]{64}$/.test(key))
      throw new Error('the hot wallet key is not 0x and 64 hexadecimal digits')
    this.#wallet = privateKeyToAccount(key as Hex)
    this.#token = settings.token_contract as Address
    this.#store = stores.transactions
    const chain = defineChain({
      id: settings.chain_id,
      name: `chain ${settings.chain_id}`,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [settings.rpc_url] } },
    })
    this.#client = createPublicClient({
      chain,
      transport: http(settings.rpc_url, { retryCount: 0, timeout: settings.timeout_ms }),
      cacheTime: 0,
    })
    this.deposits = this.#depositBranch ? this.#depositChain() : undefined
  }

  /** The hot wallet's address: where the operator sends the token and the gas. */
  get hotWallet(): Address {
    return this.#wallet.address
  }

  /**
   * A USDT deposit (docs/CONNECTORS.md, Deposits): the payment is given the address at the account's next
   * derivation index, once (a repeat answers the same one), and the exact amount the customer sends, in token units.
   * Its outcome comes from the chain watcher, not from an answer here.
   */
  async createPayment(order: types.PaymentOrder): Promise<types.HandOverAnswer<types.ProviderPayment>> {
    const branch = this.#depositBranch
    if (!branch)
      return refused('method_unsupported', 'This evm-erc20 account has no deposit key: it takes no payments.')
    if (order.method !== 'usdt_erc20' || order.currency !== 'USDT')
      return refused('method_unsupported', 'An evm-erc20 account takes usdt_erc20 payments in USDT only.')
    const amount = this.#tokenUnits(order.grossAmount)
    if (typeof amount !== 'bigint') return amount
    try {
      const deposit = await this.#stores.deposits.depositFor({
        accountUuid: this.#stores.accountUuid,
        paymentUuid: order.paymentUuid,
        amount,
        address: (index) => depositAddressAt(branch, index),
        // The watcher starts `confirmations` below the head: a block that deep is no reorganisation's.
        start: async () => {
          const head = await this.#client.getBlockNumber()
          const depth = BigInt(this.#settings.confirmations)
          const block = await this.#client.getBlock({ blockNumber: head > depth ? head - depth : 0n })
          return { number: block.number, hash: block.hash }
        },
      })
      return {
        kind: 'accepted',
        reference: deposit.address,
        redirectUrl: null,
        requisites: {
          network: 'ERC20',
          chain_id: String(this.#settings.chain_id),
          token_contract: getAddress(this.#token),
          address: deposit.address,
          amount: formatUnits(deposit.amount, this.#settings.decimals),
          amount_units: deposit.amount.toString(),
        },
      }
    } catch (error) {
      return noAnswer(error)
    }
  }

  /** A deposit's outcome is the chain watcher's to apply: asked, the account answers it pending. */
  async paymentStatus(): Promise<types.ProviderPaymentStatus> {
    return { kind: 'known', status: 'pending', amount: 0, currency: 'USDT' }
  }

  async refund(): Promise<types.HandOverAnswer<types.ProviderObject<types.ProviderRefundStatus>>> {
    return refused('refund_unsupported', 'A transfer on a chain cannot be taken back by the gateway.')
  }

  async refundStatus(): Promise<types.ProviderObjectStatus<types.ProviderRefundStatus>> {
    return { kind: 'unknown' }
  }

  async submitPayout(
    order: types.PayoutOrder,
  ): Promise<types.HandOverAnswer<types.ProviderObject<types.PayoutOutcome>>> {
    if (order.method !== 'usdt_wallet' || order.destination.network !== 'ERC20')
      return refused('destination_unsupported', 'An evm-erc20 account pays only to USDT wallets on ERC20.')
    const to = checkPayoutAddress(order.destination.address ?? '', this.#token)
    if (!to.ok) return refused(`destination_${to.reason}`, to.message)
    const amount = this.#tokenUnits(order.amountUsdtMicro)
    if (typeof amount !== 'bigint') return amount
    try {
      const kept = await this.#store.ofPayout(order.payoutUuid)
      const first = kept[0] ?? (await this.#signFirst(order.payoutUuid, to.address, amount))
      if (first === null)
        return noAnswer(
          new Error(
            `the hot wallet ${this.#wallet.address} cannot cover ${amount} token units and their gas: the payout waits until it is funded`,
          ),
        )
      // The latest of its transactions: the one a repeat of the hand-over must not undercut. Once signed and kept,
      // the payout is the wallet's to pay: a broadcast the node refuses or does not answer (a nonce ahead of one
      // still on its way from another worker, a node down) is made again at each status check.
      await this.#broadcast((kept.at(-1) ?? first).raw).catch(() => {})
      return { kind: 'accepted', reference: first.hash, status: 'processing', transactionHash: first.hash }
    } catch (error) {
      return noAnswer(error)
    }
  }

  async payoutStatus(reference: string): Promise<types.ProviderObjectStatus<types.PayoutOutcome>> {
    try {
      const first = await this.#store.byHash(reference)
      if (!first) return { kind: 'unknown' }
      const kept = await this.#store.ofPayout(first.payoutUuid)
      const head = Number(await this.#client.getBlockNumber())
      for (const tx of kept) {
        const receipt = await this.#receipt(tx.hash)
        if (!receipt) continue
        const confirmations = head - Number(receipt.blockNumber) + 1
        const transactionHash = tx.hash
        if (confirmations < this.#settings.confirmations)
          return { kind: 'known', status: 'processing', transactionHash }
        return {
          kind: 'known',
          status: receipt.status === 'success' ? 'completed' : 'failed',
          transactionHash,
        }
      }
      // None is mined: the latest goes out again (a node that dropped it, a block reorganised away), or, when it
      // has waited too long, a replacement with higher fees.
      const latest = kept.at(-1) as SignedTransaction
      const replacement =
        head - latest.signedAtBlock >= this.#settings.replace_after_blocks
          ? await this.#replace(latest, head)
          : null
      await this.#broadcast((replacement ?? latest).raw)
      return { kind: 'known', status: 'processing' }
    } catch (error) {
      return { kind: 'no_answer', reason: noAnswer(error).reason }
    }
  }

  async close(): Promise<void> {}

  /** `micro` USDT in the token's units; refused when the token cannot carry it (a fraction of its smallest unit). */
  #tokenUnits(micro: number): bigint | ReturnType<typeof refused> {
    try {
      return minorToTokenUnits(micro, this.#settings.decimals)
    } catch (error) {
      return refused('amount_unsupported', (error as Error).message)
    }
  }

  /** The chain as the deposit watcher reads it, through this account's node. */
  #depositChain(): types.DepositChain {
    const client = this.#client
    const token = this.#token
    return {
      confirmations: this.#settings.confirmations,
      decimals: this.#settings.decimals,
      head: () => client.getBlockNumber(),
      async block(number) {
        const block = await client.getBlock({ blockNumber: number })
        return { number, hash: block.hash, parentHash: block.parentHash }
      },
      transfers: (from, to) => transfersTo(client, token, null, from, to),
    }
  }

  /** Signs the payout's first transfer, unless the hot wallet cannot cover it: null then. */
  async #signFirst(payoutUuid: string, to: Address, amount: bigint): Promise<SignedTransaction | null> {
    const [held, gasHeld, firstNonce, head, fees] = await Promise.all([
      tokenBalance(this.#client, this.#token, this.#wallet.address),
      this.#client.getBalance({ address: this.#wallet.address }),
      this.#client.getTransactionCount({ address: this.#wallet.address, blockTag: 'pending' }),
      this.#client.getBlockNumber(),
      this.#fees(),
    ])
    if (held < amount || gasHeld < BigInt(this.#settings.gas_limit) * fees.maxFeePerGas) return null
    const data = transferCalldata(to, amount)
    return this.#store.signFirst({
      payoutUuid,
      chainId: this.#settings.chain_id,
      wallet: this.#wallet.address,
      firstNonce,
      signedAtBlock: Number(head),
      sign: (nonce) => this.#sign(nonce, data, fees),
    })
  }

  /** The replacement of `latest`: its nonce and data, fees up by at least the node's minimum, kept first. */
  async #replace(latest: SignedTransaction, head: number): Promise<SignedTransaction | null> {
    const current = await this.#fees()
    const bumped = (paid: bigint, now: bigint) => {
      const least = (paid * BUMP_PERCENT + 99n) / 100n
      return least > now ? least : now
    }
    const fees = {
      maxFeePerGas: bumped(latest.maxFeePerGas, current.maxFeePerGas),
      maxPriorityFeePerGas: bumped(latest.maxPriorityFeePerGas, current.maxPriorityFeePerGas),
    }
    // Past the operator's caps there is no replacement: the one kept waits (and goes out again).
    if (fees.maxFeePerGas > this.#caps().maxFeePerGas) return null
    if (fees.maxPriorityFeePerGas > fees.maxFeePerGas) fees.maxPriorityFeePerGas = fees.maxFeePerGas
    const { data } = parseTransaction(latest.raw)
    if (!data) throw new Error(`the kept transaction ${latest.hash} carries no transfer`)
    const signed = await this.#sign(latest.nonce, data, fees)
    return this.#store.keepReplacement(latest, signed, head)
  }

  #caps() {
    return {
      maxFeePerGas: parseGwei(String(this.#settings.max_fee_per_gas_gwei)),
      maxPriorityFeePerGas: parseGwei(String(this.#settings.max_priority_fee_per_gas_gwei)),
    }
  }

  /** What a new transaction offers: twice the latest base fee and the node's suggested tip, within the caps. */
  async #fees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
    const caps = this.#caps()
    const [block, tip] = await Promise.all([
      this.#client.getBlock({ blockTag: 'latest' }),
      this.#client.estimateMaxPriorityFeePerGas().catch(() => caps.maxPriorityFeePerGas),
    ])
    const priority = tip < caps.maxPriorityFeePerGas ? tip : caps.maxPriorityFeePerGas
    const wanted = (block.baseFeePerGas ?? 0n) * 2n + priority
    return {
      maxFeePerGas: wanted < caps.maxFeePerGas ? wanted : caps.maxFeePerGas,
      maxPriorityFeePerGas: priority,
    }
  }

  async #sign(
    nonce: number,
    data: Hex,
    fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
  ): Promise<Signed> {
    const raw = await this.#wallet.signTransaction({
      type: 'eip1559',
      chainId: this.#settings.chain_id,
      nonce,
      to: this.#token,
      data,
      value: 0n,
      gas: BigInt(this.#settings.gas_limit),
      ...fees,
    })
    return { raw, hash: keccak256(raw), ...fees }
  }

  /** Sends the signed bytes; a node that has them already, or has mined their nonce, is no failure. */
  async #broadcast(raw: Hex): Promise<void> {
    try {
      await this.#client.sendRawTransaction({ serializedTransaction: raw })
    } catch (error) {
      if (!ALREADY_KNOWN.test(String((error as Error).message))) throw error
    }
  }

  async #receipt(hash: Hex) {
    try {
      return await this.#client.getTransactionReceipt({ hash })
    } catch (error) {
      if (error instanceof TransactionReceiptNotFoundError) return null
      throw error
    }
  }
}

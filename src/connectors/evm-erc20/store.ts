import type { Hex } from 'viem'

/** A payout's signed transaction, as it was kept before it was broadcast. */
export interface SignedTransaction {
  uuid: string
  payoutUuid: string
  chainId: number
  wallet: string
  nonce: number
  hash: Hex
  raw: Hex
  maxFeePerGas: bigint
  maxPriorityFeePerGas: bigint
  /** The transaction this one replaces (the same nonce, higher fees); null for a payout's first. */
  replacesUuid: string | null
  /** The chain's height when it was signed: how long it has waited is counted from there. */
  signedAtBlock: number
}

/** What signing gives, for the store to keep. */
export type Signed = Pick<SignedTransaction, 'hash' | 'raw' | 'maxFeePerGas' | 'maxPriorityFeePerGas'>

/**
 * Where an `evm-erc20` account keeps the transactions it signs, in the gateway's database (the connector itself
 * holds no state): each is kept before it is broadcast, so that after a crash the same bytes go out again.
 */
export interface ChainTransactionStore {
  /** The payout's transactions, its first first, then its replacements in order. */
  ofPayout(payoutUuid: string): Promise<SignedTransaction[]>
  /** The transaction with this hash, any of a payout's. */
  byHash(hash: string): Promise<SignedTransaction | null>
  /**
   * The payout's first transaction: the one kept before, or else, under the hot wallet's lock, the wallet's next
   * nonce (`firstNonce` for a wallet not seen before) signed by `sign`, kept, and the nonce moved on, in one
   * database transaction: nonces are never taken twice nor skipped, whatever the number of workers.
   */
  signFirst(input: {
    payoutUuid: string
    chainId: number
    wallet: string
    firstNonce: number
    signedAtBlock: number
    sign: (nonce: number) => Promise<Signed>
  }): Promise<SignedTransaction>
  /** Keeps a replacement of `replaced` (its nonce, new fees), signed as `signed`. */
  keepReplacement(
    replaced: SignedTransaction,
    signed: Signed,
    signedAtBlock: number,
  ): Promise<SignedTransaction>
}

/** A payment's deposit address, as it was given. */
export interface Deposit {
  address: string
  index: number
  /** What the customer is asked to send, in token units. */
  amount: bigint
}

/** A block the chain watcher stands on or read up to. */
export interface ChainPoint {
  number: bigint
  hash: string
}

/**
 * Where an `evm-erc20` account keeps the deposit addresses it gives, in the gateway's database: one per payment,
 * each at a derivation index never given before.
 */
export interface ChainDepositStore {
  /**
   * The payment's deposit: the one given before, or else a new one at the account's next index (`address` derives
   * it). The account's chain watcher starts where `start` says (the head as the first deposit is given) when it
   * has never run, so that no transfer to the new address can be before it.
   */
  depositFor(input: {
    accountUuid: string
    paymentUuid: string
    amount: bigint
    address: (index: number) => string
    start: () => Promise<ChainPoint>
  }): Promise<Deposit>
  /** The payment's deposit, if it has one. */
  depositOf(paymentUuid: string): Promise<Deposit | null>
}

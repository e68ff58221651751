/** What a payment provider can say about a payment. */
export type ProviderOutcome = 'paid' | 'failed' | 'expired'

/** A provider's word about a payment, once its own format is parsed. */
export interface ProviderCallback {
  connector: string
  transactionUuid: string
  outcome: ProviderOutcome
  /** The provider's own id for the event, when it sends one. */
  reference: string | null
}

/**
 * What the provider a payment was handed to reported about it (a verified callback, or status sync's answer):
 * the outcome, and the amount it took when it says so.
 */
export interface ProviderReport {
  outcome: ProviderOutcome
  amount: number | null
  currency: string | null
  /** The connector account's name, and the provider's id for the report (its callback's id). */
  connector: string
  reference: string | null
  accountUuid: string
}

/** What a report did to the payment: a `paid` for another amount or currency opens a review instead. */
export type ReportResult = 'applied' | 'duplicate' | 'stale' | 'review'

/** What a provider says of a payout: taken, done, refused, or (asked about one it never got) unknown. */
export type PayoutOutcome = 'processing' | 'completed' | 'failed'

export interface ProviderPayoutResult {
  status: PayoutOutcome | 'unknown'
  reference: string | null
  message: string
}

/** A provider's callback about a payout, once parsed. */
export interface ProviderPayoutCallback {
  connector: string
  payoutUuid: string
  outcome: PayoutOutcome
  reference: string | null
  message: string
}

/** What is sent to the provider to pay out. The card number is here in full, in memory only, never stored. */
export interface PayoutOrder {
  payoutUuid: string
  method: 'usdt_wallet' | 'card'
  amount: number
  currency: string
  amountUsdtMicro: number
  destination: Record<string, string>
}

/**
 * What the gateway needs from a payment provider. A real provider implements the same interface the
 * sandbox simulator does, and its callbacks enter through the same handlers.
 */
export interface PaymentConnector {
  readonly name: string
  /** Turns the provider's callback request body into a ProviderCallback; throws on a body it does not know. */
  parseCallback(body: unknown): ProviderCallback
  /** Asks the provider to return money to the customer. */
  refund(input: {
    refundUuid: string
    transactionUuid: string
    amountMinor: number
    currency: string
  }): Promise<ProviderRefundResult>
  /** Hands a payout to the provider (idempotent on payoutUuid). */
  submitPayout(order: PayoutOrder): Promise<ProviderPayoutResult>
  /** How a payout stands at the provider; `unknown` when it never received it. */
  payoutStatus(input: {
    payoutUuid: string
    reference: string | null
    submittedAt: Date | null
  }): Promise<ProviderPayoutResult>
  /** Turns the provider's payout callback body into a ProviderPayoutCallback; throws on one it does not know. */
  parsePayoutCallback(body: unknown): ProviderPayoutCallback
}

export interface ProviderRefundResult {
  status: 'succeeded' | 'failed' | 'pending'
  reference: string | null
  message: string
}

/**
 * What a provider answered when handed a payment, refund or payout: it took it, it refused it (final at this
 * provider), or it gave no usable answer (a time-out, a 5xx), after which it may or may not have it.
 */
export type HandOverAnswer<T> =
  | ({ kind: 'accepted' } & T)
  | { kind: 'refused'; code: string; message: string }
  | { kind: 'no_answer'; reason: string }

/** A payment as it is handed to a provider. `paymentUuid` is the idempotency key of the hand-over. */
export interface PaymentOrder {
  paymentUuid: string
  amount: number
  /** What the customer pays: the amount and the customer's part of the fee (the same minor units). */
  grossAmount: number
  currency: string
  method: string
  /** Where the provider's payment page sends the customer back: the hosted page. */
  returnUrl: string
  description: string | null
}

/** The provider's payment, as it answered when it took it. */
export interface ProviderPayment {
  reference: string
  /** The provider's payment page, for a card payment. */
  redirectUrl: string | null
  /** Where the customer sends the money, for a host-to-host method. */
  requisites: Record<string, string> | null
}

/** How a payment stands at its provider; `unknown` when the provider never received it. */
export type ProviderPaymentStatus =
  | {
      kind: 'known'
      status: 'pending' | ProviderOutcome
      amount: number
      currency: string
    }
  | { kind: 'unknown' }
  | { kind: 'no_answer'; reason: string }

/** A refund as it is handed to the provider that has its payment. `refundUuid` is the hand-over's idempotency key. */
export interface RefundOrder {
  refundUuid: string
  /** The provider's reference of the payment to refund, as it answered when it took the payment. */
  paymentReference: string
  /** Minor units of `currency`, the payment's currency. */
  amount: number
  currency: string
}

/** Where a refund stands at its provider. */
export type ProviderRefundStatus = 'pending' | 'succeeded' | 'failed'

/** A refund or payout as its provider answered it: its reference there, and where it stands. */
export interface ProviderObject<S extends string> {
  reference: string
  status: S
  /** The chain transaction that moves the money, for a connector that pays on a chain itself. */
  transactionHash?: string
}

/** A connector account's verified report on the refund or payout it has under `reference`. */
export interface ObjectReport<Outcome extends string> {
  accountUuid: string
  reference: string
  outcome: Outcome
  connector: string
  message: string
}

/** What a report did to the refund or payout it was about: applied it, or found it there already or past it. */
export interface ObjectReportResult {
  uuid: string
  result: 'applied' | 'duplicate' | 'stale'
}

/** How a refund or payout with the provider's reference stands; `unknown` when the provider never received it. */
export type ProviderObjectStatus<S extends string> =
  | {
      kind: 'known'
      status: S
      /** The chain transaction that moves the money (the one mined, once one is), for an on-chain connector. */
      transactionHash?: string
    }
  | { kind: 'unknown' }
  | { kind: 'no_answer'; reason: string }

/**
 * One configured connector account's way to its provider (docs/CONNECTORS.md, Writing a connector kind). Every
 * call that hands something over is idempotent on the gateway's id: made again after a lost answer, it answers
 * the same object and never makes a second one.
 */
export interface AccountConnector {
  readonly kind: string
  /** Hands a payment over; a repeat with the same `paymentUuid` answers the same payment. */
  createPayment(order: PaymentOrder): Promise<HandOverAnswer<ProviderPayment>>
  /** How the payment with the provider's `reference` stands. */
  paymentStatus(reference: string): Promise<ProviderPaymentStatus>
  /** Asks for (part of) a payment back; a repeat with the same `refundUuid` answers the same refund. */
  refund(order: RefundOrder): Promise<HandOverAnswer<ProviderObject<ProviderRefundStatus>>>
  /** How the refund with the provider's `reference` stands. */
  refundStatus(reference: string): Promise<ProviderObjectStatus<ProviderRefundStatus>>
  /** Hands a payout over; a repeat with the same `payoutUuid` answers the same payout. */
  submitPayout(order: PayoutOrder): Promise<HandOverAnswer<ProviderObject<PayoutOutcome>>>
  /** How the payout with the provider's `reference` stands. */
  payoutStatus(reference: string): Promise<ProviderObjectStatus<PayoutOutcome>>
  /** Lets go of the connections it holds. */
  close(): Promise<void>
  /** For a kind whose payments are deposits on a chain: what the gateway's chain watcher reads it through. */
  readonly deposits?: DepositChain
}

/** A Transfer of a token to one of an account's deposit addresses, as its log says it. */
export interface ReadTransfer {
  transactionHash: string
  logIndex: number
  blockNumber: bigint
  blockHash: string
  from: string
  to: string
  /** Token units. */
  value: bigint
}

/** A block as the chain watcher compares it: its height, its hash and its parent's. */
export interface ChainBlock {
  number: bigint
  hash: string
  parentHash: string
}

/**
 * The chain an account takes deposits on, as its watcher reads it (docs/CONNECTORS.md, Deposits): the head, any
 * block by height, and the token's transfers in a range of blocks.
 */
export interface DepositChain {
  /** Blocks from a transfer's to the head, that one included, before it counts. */
  readonly confirmations: number
  /** The token's decimals: its units in the gateway's minor units. */
  readonly decimals: number
  head(): Promise<bigint>
  block(number: bigint): Promise<ChainBlock>
  /** The token's Transfer events in blocks `from` to `to` (both included, not past the head), in chain order. */
  transfers(from: bigint, to: bigint): Promise<ReadTransfer[]>
}

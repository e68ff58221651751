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

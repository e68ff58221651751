import type { ProviderOutcome } from '../modules/transactions/state-machine.ts'

/** A provider's word about a payment, once its own format is parsed. */
export interface ProviderCallback {
  connector: string
  transactionUuid: string
  outcome: ProviderOutcome
  /** The provider's own id for the event, when it sends one. */
  reference: string | null
}

/**
 * What the gateway needs from a payment provider. A real provider implements the same interface the
 * sandbox simulator does, and its callbacks enter through the same handler.
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
}

export interface ProviderRefundResult {
  status: 'succeeded' | 'failed' | 'pending'
  reference: string | null
  message: string
}

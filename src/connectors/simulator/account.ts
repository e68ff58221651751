import type {
  AccountConnector,
  HandOverAnswer,
  PaymentOrder,
  PayoutOutcome,
  ProviderObject,
  ProviderObjectStatus,
  ProviderOutcome,
  ProviderPayment,
  ProviderPaymentStatus,
  ProviderRefundStatus,
} from '../types.ts'

interface HeldPayment {
  status: 'pending' | ProviderOutcome
  amount: number
  currency: string
}
/** The simulator's refunds and payouts are the sandbox's: an account of this kind is never handed one. */
const SANDBOX_ONLY = {
  kind: 'refused',
  code: 'not_supported',
  message: "the simulator's refunds and payouts go through the sandbox",
} as const

/**
 * A `simulator` connector account: it takes every payment at once, with no payment page of its own (the hosted
 * page's sandbox buttons and the sandbox API decide the outcome). It remembers what it took for the life of its
 * process: it answers the status of those, and gives no answer about any other (it may have held it before a
 * restart), so that status sync never fails a payment on the simulator's word.
 */
export class SimulatorAccountConnector implements AccountConnector {
  readonly kind = 'simulator'
  readonly #held = new Map<string, HeldPayment>()

  async createPayment(order: PaymentOrder): Promise<HandOverAnswer<ProviderPayment>> {
    const reference = `sim_${order.paymentUuid}`
    if (!this.#held.has(reference))
      this.#held.set(reference, { status: 'pending', amount: order.amount, currency: order.currency })
    return { kind: 'accepted', reference, redirectUrl: null, requisites: null }
  }

  async paymentStatus(reference: string): Promise<ProviderPaymentStatus> {
    const held = this.#held.get(reference)
    if (!held) return { kind: 'no_answer', reason: 'the simulator holds no such payment in this process' }
    return { kind: 'known', ...held }
  }

  /** The sandbox's decision about a payment the simulator holds; false when it holds none by that reference. */
  decide(reference: string, outcome: ProviderOutcome): boolean {
    const held = this.#held.get(reference)
    if (!held) return false
    if (held.status === 'pending') held.status = outcome
    return true
  }

  refund = async (): Promise<HandOverAnswer<ProviderObject<ProviderRefundStatus>>> => SANDBOX_ONLY

  refundStatus = async (): Promise<ProviderObjectStatus<ProviderRefundStatus>> => ({
    kind: 'no_answer',
    reason: SANDBOX_ONLY.message,
  })

  submitPayout = async (): Promise<HandOverAnswer<ProviderObject<PayoutOutcome>>> => SANDBOX_ONLY

  payoutStatus = async (): Promise<ProviderObjectStatus<PayoutOutcome>> => ({
    kind: 'no_answer',
    reason: SANDBOX_ONLY.message,
  })

  close = async () => {}
}

import type {
  AccountConnector,
  HandOverAnswer,
  PaymentOrder,
  PayoutOutcome,
  ProviderObject,
  ProviderObjectStatus,
  ProviderPayment,
  ProviderPaymentStatus,
  ProviderRefundStatus,
} from '../types.ts'

/** The simulator's refunds and payouts are the sandbox's: an account of this kind is never handed one. */
const SANDBOX_ONLY = {
  kind: 'refused',
  code: 'not_supported',
  message: "the simulator's refunds and payouts go through the sandbox",
} as const

/**
 * A `simulator` connector account: it takes every payment at once, with no payment page of its own (the hosted
 * page's sandbox buttons and the sandbox API decide the outcome), and answers `pending` until they do.
 */
export class SimulatorAccountConnector implements AccountConnector {
  readonly kind = 'simulator'

  async createPayment(order: PaymentOrder): Promise<HandOverAnswer<ProviderPayment>> {
    return { kind: 'accepted', reference: `sim_${order.paymentUuid}`, redirectUrl: null, requisites: null }
  }

  async paymentStatus(_reference: string): Promise<ProviderPaymentStatus> {
    return { kind: 'no_answer', reason: 'the simulator reports outcomes through the sandbox only' }
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

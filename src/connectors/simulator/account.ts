import type {
  AccountConnector,
  HandOverAnswer,
  PaymentOrder,
  ProviderPayment,
  ProviderPaymentStatus,
} from '../types.ts'

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

  close = async () => {}
}

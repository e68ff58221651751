import { newId } from '../../lib/ids.ts'
import type { ProviderOutcome } from '../../modules/transactions/state-machine.ts'
import type { PaymentConnector, ProviderCallback, ProviderRefundResult } from '../types.ts'

/** The body the simulated provider posts back, shaped like a provider's own callback. */
export interface SimulatorCallbackBody {
  provider: 'simulator'
  event_id: string
  payment_id: string
  status: 'succeeded' | 'declined' | 'timeout'
}

const STATUS_OF: Record<ProviderOutcome, SimulatorCallbackBody['status']> = {
  paid: 'succeeded',
  failed: 'declined',
  expired: 'timeout',
}
const OUTCOME_OF: Record<SimulatorCallbackBody['status'], ProviderOutcome> = {
  succeeded: 'paid',
  declined: 'failed',
  timeout: 'expired',
}

/** The sandbox provider: it answers at once and produces callbacks on request. */
export class SimulatorConnector implements PaymentConnector {
  readonly name = 'simulator'

  /** The callback the provider would send for `outcome` of a payment. */
  callbackFor(transactionUuid: string, outcome: ProviderOutcome): SimulatorCallbackBody {
    return {
      provider: 'simulator',
      event_id: newId(),
      payment_id: transactionUuid,
      status: STATUS_OF[outcome],
    }
  }

  parseCallback(body: unknown): ProviderCallback {
    const b = body as Partial<SimulatorCallbackBody> | null
    if (
      b?.provider !== 'simulator' ||
      typeof b.payment_id !== 'string' ||
      !b.status ||
      !(b.status in OUTCOME_OF)
    ) {
      throw new Error('not a simulator callback')
    }
    return {
      connector: this.name,
      transactionUuid: b.payment_id,
      outcome: OUTCOME_OF[b.status],
      reference: b.event_id ?? null,
    }
  }

  /** The sandbox provider refunds at once. */
  async refund(input: {
    refundUuid: string
    amountMinor: number
    currency: string
  }): Promise<ProviderRefundResult> {
    return {
      status: 'succeeded',
      reference: `sim_rf_${input.refundUuid}`,
      message: 'Refund accepted by the sandbox provider.',
    }
  }
}

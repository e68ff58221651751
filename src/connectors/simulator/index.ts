import { newId } from '../../lib/ids.ts'
import type {
  PaymentConnector,
  PayoutOrder,
  PayoutOutcome,
  ProviderCallback,
  ProviderOutcome,
  ProviderPayoutCallback,
  ProviderPayoutResult,
  ProviderRefundResult,
} from '../types.ts'

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

/** The body the simulated provider posts about a payout. */
export interface SimulatorPayoutCallbackBody {
  provider: 'simulator'
  event_id: string
  payout_id: string
  status: 'paid_out' | 'rejected'
  reason?: string
}

/** A card the sandbox provider declines, so that a merchant can try the failure path (docs/API.md). */
export const SANDBOX_DECLINED_CARD = '4000000000000002'

/**
 * The sandbox provider: it answers at once and produces callbacks on request. A payout it takes completes
 * once `payoutCompletionMs` have passed since it was handed over.
 */
export class SimulatorConnector implements PaymentConnector {
  readonly name = 'simulator'
  readonly payoutCompletionMs: number

  constructor(options: { payoutCompletionMs?: number } = {}) {
    this.payoutCompletionMs = options.payoutCompletionMs ?? 2000
  }

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

  async submitPayout(order: PayoutOrder): Promise<ProviderPayoutResult> {
    if (order.method === 'card' && order.destination.card_number === SANDBOX_DECLINED_CARD) {
      return {
        status: 'failed',
        reference: null,
        message: 'Card declined by the issuer (sandbox test card).',
      }
    }
    return {
      status: 'processing',
      reference: `sim_po_${order.payoutUuid}`,
      message: 'Payout accepted by the sandbox provider.',
    }
  }

  async payoutStatus(input: {
    payoutUuid: string
    reference: string | null
    submittedAt: Date | null
  }): Promise<ProviderPayoutResult> {
    if (!input.submittedAt || !input.reference)
      return {
        status: 'unknown',
        reference: null,
        message: 'The sandbox provider never received this payout.',
      }
    if (Date.now() - input.submittedAt.getTime() < this.payoutCompletionMs)
      return { status: 'processing', reference: input.reference, message: 'Payout in progress.' }
    return { status: 'completed', reference: input.reference, message: 'Paid out by the sandbox provider.' }
  }

  /** The callback the provider would send when a payout is done or refused. */
  payoutCallbackFor(
    payoutUuid: string,
    outcome: Exclude<PayoutOutcome, 'processing'>,
  ): SimulatorPayoutCallbackBody {
    return {
      provider: 'simulator',
      event_id: newId(),
      payout_id: payoutUuid,
      status: outcome === 'completed' ? 'paid_out' : 'rejected',
      ...(outcome === 'failed' && { reason: 'Rejected by the sandbox provider (simulated failure).' }),
    }
  }

  parsePayoutCallback(body: unknown): ProviderPayoutCallback {
    const b = body as Partial<SimulatorPayoutCallbackBody> | null
    if (
      b?.provider !== 'simulator' ||
      typeof b.payout_id !== 'string' ||
      (b.status !== 'paid_out' && b.status !== 'rejected')
    ) {
      throw new Error('not a simulator payout callback')
    }
    return {
      connector: this.name,
      payoutUuid: b.payout_id,
      outcome: b.status === 'paid_out' ? 'completed' : 'failed',
      reference: b.event_id ?? null,
      message: b.reason ?? (b.status === 'paid_out' ? 'Paid out.' : 'Rejected by the provider.'),
    }
  }
}

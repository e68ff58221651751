import type * as types from '../types.ts'
import { type AcquirerAnswer, AcquirerClient, type AcquirerPayment, type AcquirerSettings } from './client.ts'

const OUTCOMES = { pending: 'pending', succeeded: 'paid', failed: 'failed', expired: 'expired' } as const
const REFUND_STATUSES: readonly types.ProviderRefundStatus[] = ['pending', 'succeeded', 'failed']
const PAYOUT_STATUSES: readonly types.PayoutOutcome[] = ['processing', 'completed', 'failed']

/** The `http-acquirer` kind: the acquirer protocol of docs/CONNECTORS.md over an AcquirerClient. */
export class HttpAcquirerConnector implements types.AccountConnector {
  readonly kind = 'http-acquirer'
  readonly #client: AcquirerClient

  constructor(settings: AcquirerSettings, secrets: Record<string, string>) {
    this.#client = new AcquirerClient(settings, secrets.api_key ?? '')
  }

  async createPayment(order: types.PaymentOrder): Promise<types.HandOverAnswer<types.ProviderPayment>> {
    const answer = await this.#client.createPayment({
      order_id: order.paymentUuid,
      amount: order.amount,
      currency: order.currency,
      method: order.method,
      return_url: order.returnUrl,
      ...(order.description && { description: order.description }),
    })
    return handOverAnswer(answer, (payment) =>
      typeof payment.reference === 'string' && payment.reference.length > 0
        ? {
            reference: payment.reference,
            redirectUrl: typeof payment.redirect_url === 'string' ? payment.redirect_url : null,
            requisites: payment.requisites ?? null,
          }
        : null,
    )
  }

  async paymentStatus(reference: string): Promise<types.ProviderPaymentStatus> {
    const answer = await this.#client.payment(reference)
    if (!answer.ok)
      return answer.refused && answer.status === 404
        ? { kind: 'unknown' }
        : { kind: 'no_answer', reason: answer.refused ? `refused: ${answer.code}` : answer.reason }
    const { status, amount, currency } = answer.body
    if (!(status in OUTCOMES) || !Number.isSafeInteger(amount) || typeof currency !== 'string')
      return { kind: 'no_answer', reason: 'the payment it answered could not be read' }
    return { kind: 'known', status: OUTCOMES[status], amount, currency }
  }

  async refund(
    order: types.RefundOrder,
  ): Promise<types.HandOverAnswer<types.ProviderObject<types.ProviderRefundStatus>>> {
    const answer = await this.#client.refund(order.paymentReference, {
      refund_id: order.refundUuid,
      amount: order.amount,
    })
    return handOverAnswer(answer, (refund) => objectOf(refund, REFUND_STATUSES))
  }

  refundStatus = async (reference: string): Promise<types.ProviderObjectStatus<types.ProviderRefundStatus>> =>
    objectStatus(await this.#client.refundStatus(reference), REFUND_STATUSES)

  async submitPayout(
    order: types.PayoutOrder,
  ): Promise<types.HandOverAnswer<types.ProviderObject<types.PayoutOutcome>>> {
    const answer = await this.#client.submitPayout({
      payout_id: order.payoutUuid,
      amount: order.amount,
      currency: order.currency,
      method: order.method,
      destination: order.destination,
    })
    return handOverAnswer(answer, (payout) => objectOf(payout, PAYOUT_STATUSES))
  }

  payoutStatus = async (reference: string): Promise<types.ProviderObjectStatus<types.PayoutOutcome>> =>
    objectStatus(await this.#client.payoutStatus(reference), PAYOUT_STATUSES)

  close = () => this.#client.close()
}

/** A refund or payout the acquirer answered, or null when its reference or status cannot be read. */
function objectOf<S extends string>(
  body: { reference?: unknown; status?: unknown },
  statuses: readonly S[],
): types.ProviderObject<S> | null {
  return typeof body.reference === 'string' &&
    body.reference.length > 0 &&
    statuses.includes(body.status as S)
    ? { reference: body.reference, status: body.status as S }
    : null
}

/** An acquirer's answer to a status read: 404 is an object it never received. */
function objectStatus<S extends string>(
  answer: AcquirerAnswer<{ reference?: unknown; status?: unknown }>,
  statuses: readonly S[],
): types.ProviderObjectStatus<S> {
  if (!answer.ok)
    return answer.refused && answer.status === 404
      ? { kind: 'unknown' }
      : { kind: 'no_answer', reason: answer.refused ? `refused: ${answer.code}` : answer.reason }
  const object = objectOf(answer.body, statuses)
  return object
    ? { kind: 'known', status: object.status }
    : { kind: 'no_answer', reason: 'the object it answered could not be read' }
}

/** An acquirer's answer to a create, as a hand-over answer; `read` says null when the object is unreadable. */
function handOverAnswer<T, R>(
  answer: AcquirerAnswer<T>,
  read: (body: T) => R | null,
): types.HandOverAnswer<R> {
  if (!answer.ok)
    return answer.refused
      ? { kind: 'refused', code: answer.code, message: answer.message }
      : { kind: 'no_answer', reason: answer.reason }
  const object = read(answer.body)
  return object
    ? { kind: 'accepted', ...object }
    : { kind: 'no_answer', reason: 'the object it answered could not be read' }
}

export type { AcquirerPayment }

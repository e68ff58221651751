import type {
  AccountConnector,
  HandOverAnswer,
  PaymentOrder,
  ProviderPayment,
  ProviderPaymentStatus,
} from '../types.ts'
import { type AcquirerAnswer, AcquirerClient, type AcquirerPayment, type AcquirerSettings } from './client.ts'

const OUTCOMES = { pending: 'pending', succeeded: 'paid', failed: 'failed', expired: 'expired' } as const

/** The `http-acquirer` kind: the acquirer protocol of docs/CONNECTORS.md over an AcquirerClient. */
export class HttpAcquirerConnector implements AccountConnector {
  readonly kind = 'http-acquirer'
  readonly #client: AcquirerClient

  constructor(settings: AcquirerSettings, secrets: Record<string, string>) {
    this.#client = new AcquirerClient(settings, secrets.api_key ?? '')
  }

  async createPayment(order: PaymentOrder): Promise<HandOverAnswer<ProviderPayment>> {
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

  async paymentStatus(reference: string): Promise<ProviderPaymentStatus> {
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

  close = () => this.#client.close()
}

/** An acquirer's answer to a create, as a hand-over answer; `read` says null when the object is unreadable. */
function handOverAnswer<T, R>(answer: AcquirerAnswer<T>, read: (body: T) => R | null): HandOverAnswer<R> {
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

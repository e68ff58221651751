import { Agent, errors, request } from 'undici'

/**
 * The gateway's side of the acquirer API (docs/CONNECTORS.md, The acquirer's API), over one keep-alive pool per
 * account. Every create carries the gateway's id as its Idempotency-Key, so a call whose answer was lost can be
 * made again without a second charge; reads are retried once here, creates are retried by their caller.
 */

export interface AcquirerSettings {
  base_url: string
  timeout_ms: number
  merchant_account?: string
}

/** What a call came to: the acquirer's object, its refusal (final for this acquirer), or no usable answer. */
export type AcquirerAnswer<T> =
  | { ok: true; status: number; body: T }
  | { ok: false; refused: true; status: number; code: string; message: string }
  | { ok: false; refused: false; reason: string }

export interface AcquirerPayment {
  reference: string
  order_id: string
  status: 'pending' | 'succeeded' | 'failed' | 'expired'
  amount: number
  currency: string
  redirect_url?: string
  requisites?: Record<string, string>
}

export interface AcquirerRefund {
  reference: string
  status: 'pending' | 'succeeded' | 'failed'
  amount: number
}

export interface AcquirerPayout {
  reference: string
  status: 'processing' | 'completed' | 'failed'
  amount: number
}

export class AcquirerClient {
  readonly #agent: Agent
  readonly #base: string

  constructor(
    readonly settings: AcquirerSettings,
    readonly apiKey: string,
  ) {
    this.#base = settings.base_url.replace(/\/+$/, '')
    this.#agent = new Agent({ keepAliveTimeout: 10_000, connections: 32 })
  }

  createPayment(input: {
    order_id: string
    amount: number
    currency: string
    method: string
    return_url: string
    description?: string
  }) {
    return this.#call<AcquirerPayment>('POST', '/payments', input, input.order_id)
  }

  payment = (reference: string) => this.#read<AcquirerPayment>(`/payments/${encodeURIComponent(reference)}`)

  refund(payment: string, input: { refund_id: string; amount: number }) {
    return this.#call<AcquirerRefund>(
      'POST',
      `/payments/${encodeURIComponent(payment)}/refunds`,
      input,
      input.refund_id,
    )
  }

  refundStatus = (reference: string) =>
    this.#read<AcquirerRefund>(`/refunds/${encodeURIComponent(reference)}`)

  submitPayout(input: {
    payout_id: string
    amount: number
    currency: string
    method: string
    destination: Record<string, string>
  }) {
    return this.#call<AcquirerPayout>('POST', '/payouts', input, input.payout_id)
  }

  payoutStatus = (reference: string) =>
    this.#read<AcquirerPayout>(`/payouts/${encodeURIComponent(reference)}`)

  close = () => this.#agent.close()

  /** A read, tried twice when the first gets no usable answer: it changes nothing at the acquirer. */
  async #read<T>(path: string): Promise<AcquirerAnswer<T>> {
    const first = await this.#call<T>('GET', path)
    return first.ok || first.refused ? first : this.#call<T>('GET', path)
  }

  async #call<T>(method: 'GET' | 'POST', path: string, body?: unknown, idempotencyKey?: string) {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.apiKey}`,
      accept: 'application/json',
    }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey
    if (this.settings.merchant_account) headers['x-merchant-account'] = this.settings.merchant_account
    try {
      const res = await request(`${this.#base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.#agent,
        headersTimeout: this.settings.timeout_ms,
        bodyTimeout: this.settings.timeout_ms,
        signal: AbortSignal.timeout(this.settings.timeout_ms),
      })
      const text = await res.body.text()
      return answerOf<T>(res.statusCode, text)
    } catch (error) {
      const timedOut =
        error instanceof errors.HeadersTimeoutError ||
        error instanceof errors.BodyTimeoutError ||
        (error as Error).name === 'TimeoutError'
      return {
        ok: false as const,
        refused: false as const,
        reason: timedOut ? 'timed out' : `no answer: ${(error as Error).message}`,
      }
    }
  }
}

/** A 2xx with a JSON object is the object; a 4xx but 408/409/429 is a refusal; anything else no usable answer. */
function answerOf<T>(status: number, text: string): AcquirerAnswer<T> {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  if (status >= 200 && status < 300 && json && typeof json === 'object')
    return { ok: true, status, body: json as T }
  if (status >= 400 && status < 500 && ![408, 409, 429].includes(status)) {
    const error = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error
    return {
      ok: false,
      refused: true,
      status,
      code: typeof error?.code === 'string' ? error.code : `http_${status}`,
      message: typeof error?.message === 'string' ? error.message : '',
    }
  }
  return { ok: false, refused: false, reason: `answered ${status}` }
}

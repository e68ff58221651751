import { randomBytes } from 'node:crypto'
import escapeHtml from 'escape-html'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { signCallback } from '../connectors/http-acquirer/signature.ts'
import { constantTimeEqual } from '../lib/crypto.ts'
import { seededRandom } from '../lib/random.ts'

/**
 * The provider emulator: the acquirer's side of docs/CONNECTORS.md, in one process with its own small store, for
 * operators to rehearse against and for the gateway's tests. Payments wait for the customer (or the admin API) to
 * decide them; refunds succeed unless told otherwise, and payouts wait for the admin API.
 */

export interface EmulatorOptions {
  /** The API key the gateway's account holds (`Authorization: Bearer …`). */
  apiKey: string
  /** Where the emulator is reached, for the payment page's address it answers. */
  publicUrl: string
  /** Where its callbacks go (an account's callback URL at the gateway), signed with `callbackSecret`. */
  callbackUrl?: string
  callbackSecret?: string
  /** The pauses before a callback's second, third, … attempt; it gives up after the last. */
  callbackRetryMs?: number[]
  /** The faults it starts with (the admin API changes them): none by default. */
  faults?: Partial<EmulatorFaults>
  /** Seeds the draws of the rate faults, so that a run can be replayed. */
  seed?: number
}

/** What the emulator does wrong on purpose (docs/CONNECTORS.md, The provider emulator). */
export interface EmulatorFaults {
  /** Milliseconds added before every API answer. */
  latency_ms: number
  /** The share of API requests answered 503 (0 to 1). */
  error_rate: number
  /** The share of API requests never answered: the caller's time-out ends them. */
  timeout_rate: number
  /** How many more times each callback is sent, whole, after the first. */
  duplicate_callbacks: number
  /** Callbacks are not sent at all: only a status call finds the outcome. */
  drop_callbacks: boolean
  /** Callbacks held back until this many wait, then sent newest first (0: as they come). */
  reorder_callbacks: number
  /** Callbacks are signed with a secret nobody has. */
  wrong_signature: boolean
  /** Added to the amount a payment's callback and status report, as an acquirer that took another amount. */
  amount_delta: number
  /** What a refund comes to; a pending one waits for the admin API to decide it. */
  refunds: 'succeed' | 'pending' | 'fail'
}

export const NO_FAULTS: EmulatorFaults = {
  latency_ms: 0,
  error_rate: 0,
  timeout_rate: 0,
  duplicate_callbacks: 0,
  drop_callbacks: false,
  reorder_callbacks: 0,
  wrong_signature: false,
  amount_delta: 0,
  refunds: 'succeed',
}

/** Faults from the operator's `name=value` strings or a JSON object, each checked against NO_FAULTS' type. */
export function parseFaults(given: Record<string, unknown>): Partial<EmulatorFaults> {
  const faults: Record<string, unknown> = {}
  for (const [name, raw] of Object.entries(given)) {
    if (!Object.hasOwn(NO_FAULTS, name)) throw new Error(`no fault named ${name}`)
    const model = NO_FAULTS[name as keyof EmulatorFaults]
    const value =
      typeof model === 'number'
        ? Number(raw)
        : typeof model === 'boolean'
          ? raw === true || raw === 'true'
          : raw
    if (name === 'amount_delta' && !Number.isInteger(value)) throw new Error('amount_delta is a whole number')
    else if (name.endsWith('_rate') && !((value as number) >= 0 && (value as number) <= 1))
      throw new Error(`${name} is a share from 0 to 1`)
    else if (typeof model === 'number' && name !== 'amount_delta' && !((value as number) >= 0))
      throw new Error(`${name} is a number of at least 0`)
    if (name === 'refunds' && !['succeed', 'pending', 'fail'].includes(String(value)))
      throw new Error('refunds is succeed, pending or fail')
    faults[name] = value
  }
  return faults as Partial<EmulatorFaults>
}

/** The code the payment page's challenge step accepts (any other fails the payment). */
export const CHALLENGE_CODE = '1234'

interface Payment {
  reference: string
  order_id: string
  status: 'pending' | 'succeeded' | 'failed' | 'expired'
  amount: number
  currency: string
  method: string
  return_url: string
  refunded: number
}

interface Refund {
  reference: string
  payment: string
  refund_id: string
  status: 'pending' | 'succeeded' | 'failed'
  amount: number
}

interface Payout {
  reference: string
  payout_id: string
  status: 'processing' | 'completed' | 'failed'
  amount: number
  currency: string
}

const H2H_REQUISITES: Record<string, Record<string, string>> = {
  p2p_card: { card_number: '2200700199990001', bank_name: 'Emulator Bank', holder_name: 'EMULATOR' },
  bank_transfer: { account_number: '40817810000000000001', bank_name: 'Emulator Bank' },
}

const reference = (prefix: string) => `${prefix}_${randomBytes(9).toString('base64url')}`

export function buildEmulator(options: EmulatorOptions): FastifyInstance {
  const app = Fastify({ logger: false })
  const payments = new Map<string, Payment>()
  const refunds = new Map<string, Refund>()
  const payouts = new Map<string, Payout>()
  /** What each Idempotency-Key was answered, by the path it was sent to: the same answer again. */
  const answered = new Map<string, { status: number; body: unknown }>()

  const retries = options.callbackRetryMs ?? [500, 1000, 2000, 4000]
  let faults: EmulatorFaults = { ...NO_FAULTS, ...options.faults }
  const draw = seededRandom(options.seed ?? 1)
  const strangerSecret = `whsec_${randomBytes(32).toString('base64')}`
  /** Callbacks held back by `reorder_callbacks`. */
  let held: (() => Promise<void>)[] = []
  /** Every callback sent, with the status each attempt was answered (0: no answer). */
  const sent: { type: string; reference: string; attempts: number[] }[] = []

  /** Posts a signed callback, and again after each pause while it is not answered 2xx. */
  async function notify(type: string, data: { reference: string; amount: number; currency?: string }) {
    if (!options.callbackUrl || !options.callbackSecret || faults.drop_callbacks) return
    const body = JSON.stringify({ id: reference('evt'), type, data })
    const sends = Array.from(
      { length: 1 + faults.duplicate_callbacks },
      () => () => send(type, data.reference, body),
    )
    if (faults.reorder_callbacks > 0) {
      held.push(...sends)
      if (held.length < faults.reorder_callbacks) return
      const due = held.reverse()
      held = []
      for (const next of due) await next()
      return
    }
    for (const next of sends) await next()
  }

  async function send(type: string, subject: string, body: string) {
    const record = { type, reference: subject, attempts: [] as number[] }
    sent.push(record)
    for (let attempt = 0; attempt <= retries.length; attempt++) {
      const signingSecret = faults.wrong_signature ? strangerSecret : (options.callbackSecret as string)
      const headers = signCallback([signingSecret], reference('msg'), new Date(), body)
      const status = await fetch(options.callbackUrl as string, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
        signal: AbortSignal.timeout(10_000),
      }).then(
        (res) => res.status,
        () => 0,
      )
      record.attempts.push(status)
      if (status >= 200 && status < 300) return
      const pause = retries[attempt]
      if (pause === undefined) return
      await new Promise((resolve) => setTimeout(resolve, pause))
    }
  }

  function decidePayment(payment: Payment, status: 'succeeded' | 'failed' | 'expired') {
    if (payment.status !== 'pending') return
    payment.status = status
    void notify(`payment.${status}`, {
      reference: payment.reference,
      amount: payment.amount + faults.amount_delta,
      currency: payment.currency,
    })
  }

  function decidePayout(payout: Payout, status: 'completed' | 'failed') {
    if (payout.status !== 'processing') return
    payout.status = status
    void notify(`payout.${status}`, {
      reference: payout.reference,
      amount: payout.amount,
      currency: payout.currency,
    })
  }

  function decideRefund(refund: Refund, status: 'succeeded' | 'failed') {
    if (refund.status !== 'pending') return
    const payment = payments.get(refund.payment) as Payment
    refund.status = status
    // A failed refund gives back what it had taken of the payment's refundable amount.
    if (status === 'failed') payment.refunded -= refund.amount
    void notify(`refund.${status}`, {
      reference: refund.reference,
      amount: refund.amount,
      currency: payment.currency,
    })
  }

  const refuse = (reply: FastifyReply, status: number, code: string, message: string) =>
    reply.code(status).send({ error: { code, message } })

  /**
   * The admin route that decides the `noun` of `store` under a reference with one of `outcomes` (`decide` does
   * nothing to one decided already), and answers it as `answer` shows it.
   */
  function decideRoute<T, S extends string>(
    noun: string,
    store: Map<string, T>,
    outcomes: readonly S[],
    decide: (item: T, status: S) => void,
    answer: (item: T) => unknown,
  ) {
    const isOutcome = (status: string | undefined): status is S => outcomes.includes(status as S)
    app.post<{ Params: { reference: string }; Body: { status?: string } }>(
      `/admin/${noun}s/:reference/decide`,
      async (request, reply) => {
        const item = store.get(request.params.reference)
        const status = request.body?.status
        if (!item) return refuse(reply, 404, 'not_found', `No such ${noun}.`)
        if (!isOutcome(status))
          return refuse(
            reply,
            400,
            'invalid_request',
            `status: ${outcomes.slice(0, -1).join(', ')} or ${outcomes.at(-1)}.`,
          )
        decide(item, status)
        return answer(item)
      },
    )
  }

  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/v1/')) return
    const given = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? ''
    if (!constantTimeEqual(given, options.apiKey))
      return refuse(reply, 401, 'unauthorized', 'Unknown API key.')
    if (draw() < faults.timeout_rate) {
      // Never answered: the caller's time-out ends it, and the socket closes.
      await new Promise<void>((resolve) => request.raw.socket.once('close', () => resolve()))
      return reply.hijack()
    }
    if (draw() < faults.error_rate) return refuse(reply, 503, 'unavailable', 'Injected failure.')
  })

  // The wait comes after the work, as with an acquirer slow to answer: a caller that stops waiting has still
  // made the payment (or refund, or payout), and only its answer is lost.
  app.addHook('onSend', async (request, _reply, payload) => {
    if (request.url.startsWith('/v1/') && faults.latency_ms > 0)
      await new Promise((resolve) => setTimeout(resolve, faults.latency_ms))
    return payload
  })

  /** Runs `create` once per Idempotency-Key and path; a repeat gets the first answer. */
  async function once(
    request: FastifyRequest,
    reply: FastifyReply,
    create: () => { status: number; body: unknown },
  ) {
    const key = request.headers['idempotency-key']
    if (typeof key !== 'string' || key === '')
      return refuse(reply, 400, 'invalid_request', 'An Idempotency-Key header is required.')
    const slot = `${request.url} ${key}`
    const first = answered.get(slot) ?? create()
    if (first.status < 500) answered.set(slot, first)
    return reply.code(first.status).send(first.body)
  }

  const positive = (value: unknown): value is number => Number.isInteger(value) && (value as number) > 0
  /** An answer of `once`: a refusal. */
  const refusal = (status: number, code: string, message: string) => ({
    status,
    body: { error: { code, message } },
  })
  /**
   * `once`'s create of an object from a body with its own id (named `idField`), an amount and a currency: `make`
   * makes it of them, and a body with one of them missing or wrong is refused.
   */
  const withBasics =
    (
      request: FastifyRequest,
      idField: string,
      make: (
        given: { id: string; money: { amount: number; currency: string } },
        body: Record<string, unknown>,
      ) => { status: number; body: unknown },
    ) =>
    () => {
      const body = (request.body ?? {}) as Record<string, unknown>
      return typeof body[idField] === 'string' && positive(body.amount) && typeof body.currency === 'string'
        ? make({ id: body[idField], money: { amount: body.amount, currency: body.currency } }, body)
        : refusal(400, 'invalid_request', `${idField}, amount, currency.`)
    }

  app.post('/v1/payments', (request, reply) =>
    once(
      request,
      reply,
      withBasics(request, 'order_id', (given, body) => {
        const payment: Payment = {
          reference: reference('pay'),
          order_id: given.id,
          status: 'pending',
          ...given.money,
          method: String(body.method ?? 'card'),
          return_url: String(body.return_url ?? ''),
          refunded: 0,
        }
        payments.set(payment.reference, payment)
        const requisites = H2H_REQUISITES[payment.method]
        return {
          status: 201,
          body: {
            ...view(payment),
            ...(requisites
              ? { requisites }
              : { redirect_url: `${options.publicUrl}/pay/${payment.reference}` }),
          },
        }
      }),
    ),
  )

  app.get<{ Params: { reference: string } }>('/v1/payments/:reference', async (request, reply) => {
    const payment = payments.get(request.params.reference)
    if (!payment) return refuse(reply, 404, 'not_found', 'No such payment.')
    return {
      ...view(payment),
      amount: payment.amount + (payment.status === 'succeeded' ? faults.amount_delta : 0),
    }
  })

  app.post<{ Params: { reference: string } }>('/v1/payments/:reference/refunds', (request, reply) =>
    once(request, reply, () => {
      const payment = payments.get(request.params.reference)
      const body = (request.body ?? {}) as Partial<Refund>
      if (!payment) return refusal(404, 'not_found', 'No such payment.')
      if (typeof body.refund_id !== 'string' || !positive(body.amount))
        return refusal(400, 'invalid_request', 'refund_id, amount.')
      if (payment.status !== 'succeeded' || payment.refunded + body.amount > payment.amount)
        return refusal(422, 'declined', 'Not refundable.')
      payment.refunded += body.amount
      const refund: Refund = {
        reference: reference('re'),
        payment: payment.reference,
        refund_id: body.refund_id,
        status: faults.refunds === 'succeed' ? 'succeeded' : faults.refunds === 'fail' ? 'failed' : 'pending',
        amount: body.amount,
      }
      if (refund.status === 'failed') payment.refunded -= body.amount
      refunds.set(refund.reference, refund)
      if (refund.status !== 'pending')
        void notify(`refund.${refund.status}`, {
          reference: refund.reference,
          amount: refund.amount,
          currency: payment.currency,
        })
      return {
        status: 201,
        body: refundView(refund),
      }
    }),
  )

  app.get<{ Params: { reference: string } }>('/v1/refunds/:reference', async (request, reply) => {
    const refund = refunds.get(request.params.reference)
    return refund ? refundView(refund) : refuse(reply, 404, 'not_found', 'No such refund.')
  })

  app.post('/v1/payouts', (request, reply) =>
    once(
      request,
      reply,
      withBasics(request, 'payout_id', (given) => {
        const payout: Payout = {
          reference: reference('po'),
          payout_id: given.id,
          status: 'processing',
          ...given.money,
        }
        payouts.set(payout.reference, payout)
        return { status: 201, body: payoutView(payout) }
      }),
    ),
  )

  app.get<{ Params: { reference: string } }>('/v1/payouts/:reference', async (request, reply) => {
    const payout = payouts.get(request.params.reference)
    return payout ? payoutView(payout) : refuse(reply, 404, 'not_found', 'No such payout.')
  })

  // The admin API: what the customer's page or the provider's back office would decide.
  decideRoute('payment', payments, ['succeeded', 'failed', 'expired'], decidePayment, view)
  decideRoute('payout', payouts, ['completed', 'failed'], decidePayout, payoutView)
  decideRoute('refund', refunds, ['succeeded', 'failed'], decideRefund, refundView)

  app.get<{ Querystring: { order_id?: string } }>('/admin/payments', async (request) =>
    [...payments.values()]
      .filter(
        (payment) => request.query.order_id === undefined || payment.order_id === request.query.order_id,
      )
      .map(view),
  )
  app.get('/admin/callbacks', async () => sent)
  app.get('/admin/faults', async () => faults)
  app.put<{ Body: Record<string, unknown> }>('/admin/faults', async (request, reply) => {
    try {
      faults = { ...NO_FAULTS, ...parseFaults(request.body ?? {}) }
    } catch (error) {
      return refuse(reply, 400, 'invalid_request', (error as Error).message)
    }
    return faults
  })

  // The customer's payment page: a challenge step, then pay or decline, then back to the merchant's return URL.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
  )
  const noSuchPage = (reply: FastifyReply) =>
    reply.code(404).type('text/html').send('<!doctype html><title>Not found</title><p>No such payment.')
  app.get<{ Params: { reference: string } }>('/pay/:reference', async (request, reply) => {
    const payment = payments.get(request.params.reference)
    return payment ? reply.type('text/html').send(paymentPage(payment)) : noSuchPage(reply)
  })
  app.post<{ Params: { reference: string }; Body: { code?: string; action?: string } }>(
    '/pay/:reference',
    async (request, reply) => {
      const payment = payments.get(request.params.reference)
      if (!payment) return noSuchPage(reply)
      const paid = request.body?.action === 'pay' && request.body?.code === CHALLENGE_CODE
      decidePayment(payment, paid ? 'succeeded' : 'failed')
      return payment.return_url
        ? reply.redirect(payment.return_url, 303)
        : reply.type('text/html').send(paymentPage(payment))
    },
  )

  return app
}

function paymentPage(p: Payment): string {
  const amount = `${escapeHtml(String(p.amount))} ${escapeHtml(p.currency)} (minor units)`
  const form =
    p.status === 'pending'
      ? `<form method="post"><p><label for="code">Confirmation code (${CHALLENGE_CODE} passes)</label>
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code"></p>
<p><button name="action" value="pay">Pay</button> <button name="action" value="decline">Decline</button></p></form>`
      : `<p>This payment is ${escapeHtml(p.status)}.</p>`
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Emulated acquirer: payment ${escapeHtml(p.reference)}</title></head>
<body><main><h1>Emulated acquirer</h1><p>Payment ${escapeHtml(p.reference)} for ${amount}</p>${form}</main></body></html>`
}

const view = (p: Payment) => ({
  reference: p.reference,
  order_id: p.order_id,
  status: p.status,
  amount: p.amount,
  currency: p.currency,
})

const payoutView = (p: Payout) => ({ reference: p.reference, status: p.status, amount: p.amount })
const refundView = (r: Refund) => ({ reference: r.reference, status: r.status, amount: r.amount })

import { randomBytes } from 'node:crypto'
import escapeHtml from 'escape-html'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { signCallback } from '../connectors/http-acquirer/signature.ts'
import { constantTimeEqual } from '../lib/crypto.ts'

/**
 * The provider emulator: the acquirer's side of docs/CONNECTORS.md, in one process with its own small store, for
 * operators to rehearse against and for the gateway's tests. Payments wait for the customer (or the admin API) to
 * decide them; refunds succeed and payouts complete unless told otherwise.
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
  /** Every callback sent, with the status each attempt was answered (0: no answer). */
  const sent: { type: string; reference: string; attempts: number[] }[] = []

  /** Posts a signed callback, and again after each pause while it is not answered 2xx. */
  async function notify(type: string, data: { reference: string; amount: number; currency?: string }) {
    if (!options.callbackUrl || !options.callbackSecret) return
    const record = { type, reference: data.reference, attempts: [] as number[] }
    sent.push(record)
    const body = JSON.stringify({ id: reference('evt'), type, data })
    for (let attempt = 0; attempt <= retries.length; attempt++) {
      const headers = signCallback([options.callbackSecret], reference('msg'), new Date(), body)
      const status = await fetch(options.callbackUrl, {
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
      amount: payment.amount,
      currency: payment.currency,
    })
  }

  const refuse = (reply: FastifyReply, status: number, code: string, message: string) =>
    reply.code(status).send({ error: { code, message } })

  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/v1/')) return
    const given = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? ''
    if (!constantTimeEqual(given, options.apiKey))
      return refuse(reply, 401, 'unauthorized', 'Unknown API key.')
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

  app.post('/v1/payments', (request, reply) =>
    once(request, reply, () => {
      const body = (request.body ?? {}) as Partial<Payment>
      if (typeof body.order_id !== 'string' || !positive(body.amount) || typeof body.currency !== 'string')
        return {
          status: 400,
          body: { error: { code: 'invalid_request', message: 'order_id, amount, currency.' } },
        }
      const payment: Payment = {
        reference: reference('pay'),
        order_id: body.order_id,
        status: 'pending',
        amount: body.amount,
        currency: body.currency,
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
  )

  app.get<{ Params: { reference: string } }>('/v1/payments/:reference', async (request, reply) => {
    const payment = payments.get(request.params.reference)
    return payment ? view(payment) : refuse(reply, 404, 'not_found', 'No such payment.')
  })

  app.post<{ Params: { reference: string } }>('/v1/payments/:reference/refunds', (request, reply) =>
    once(request, reply, () => {
      const payment = payments.get(request.params.reference)
      const body = (request.body ?? {}) as Partial<Refund>
      if (!payment)
        return { status: 404, body: { error: { code: 'not_found', message: 'No such payment.' } } }
      if (typeof body.refund_id !== 'string' || !positive(body.amount))
        return { status: 400, body: { error: { code: 'invalid_request', message: 'refund_id, amount.' } } }
      if (payment.status !== 'succeeded' || payment.refunded + body.amount > payment.amount)
        return { status: 422, body: { error: { code: 'declined', message: 'Not refundable.' } } }
      payment.refunded += body.amount
      const refund: Refund = {
        reference: reference('re'),
        payment: payment.reference,
        refund_id: body.refund_id,
        status: 'succeeded',
        amount: body.amount,
      }
      refunds.set(refund.reference, refund)
      void notify('refund.succeeded', {
        reference: refund.reference,
        amount: refund.amount,
        currency: payment.currency,
      })
      return {
        status: 201,
        body: { reference: refund.reference, status: refund.status, amount: refund.amount },
      }
    }),
  )

  app.get<{ Params: { reference: string } }>('/v1/refunds/:reference', async (request, reply) => {
    const refund = refunds.get(request.params.reference)
    return refund
      ? { reference: refund.reference, status: refund.status, amount: refund.amount }
      : refuse(reply, 404, 'not_found', 'No such refund.')
  })

  app.post('/v1/payouts', (request, reply) =>
    once(request, reply, () => {
      const body = (request.body ?? {}) as Partial<Payout>
      if (typeof body.payout_id !== 'string' || !positive(body.amount) || typeof body.currency !== 'string')
        return {
          status: 400,
          body: { error: { code: 'invalid_request', message: 'payout_id, amount, currency.' } },
        }
      const payout: Payout = {
        reference: reference('po'),
        payout_id: body.payout_id,
        status: 'processing',
        amount: body.amount,
        currency: body.currency,
      }
      payouts.set(payout.reference, payout)
      return { status: 201, body: payoutView(payout) }
    }),
  )

  app.get<{ Params: { reference: string } }>('/v1/payouts/:reference', async (request, reply) => {
    const payout = payouts.get(request.params.reference)
    return payout ? payoutView(payout) : refuse(reply, 404, 'not_found', 'No such payout.')
  })

  // The admin API: what the customer's page or the provider's back office would decide.
  app.post<{ Params: { reference: string }; Body: { status?: string } }>(
    '/admin/payments/:reference/decide',
    async (request, reply) => {
      const payment = payments.get(request.params.reference)
      const status = request.body?.status
      if (!payment) return refuse(reply, 404, 'not_found', 'No such payment.')
      if (status !== 'succeeded' && status !== 'failed' && status !== 'expired')
        return refuse(reply, 400, 'invalid_request', 'status: succeeded, failed or expired.')
      decidePayment(payment, status)
      return view(payment)
    },
  )
  app.post<{ Params: { reference: string }; Body: { status?: string } }>(
    '/admin/payouts/:reference/decide',
    async (request, reply) => {
      const payout = payouts.get(request.params.reference)
      const status = request.body?.status
      if (!payout) return refuse(reply, 404, 'not_found', 'No such payout.')
      if (status !== 'completed' && status !== 'failed')
        return refuse(reply, 400, 'invalid_request', 'status: completed or failed.')
      if (payout.status === 'processing') {
        payout.status = status
        void notify(`payout.${status}`, {
          reference: payout.reference,
          amount: payout.amount,
          currency: payout.currency,
        })
      }
      return payoutView(payout)
    },
  )

  app.get('/admin/callbacks', async () => sent)

  // The customer's payment page: a challenge step, then pay or decline, then back to the merchant's return URL.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
  )
  app.get<{ Params: { reference: string } }>('/pay/:reference', async (request, reply) => {
    const payment = payments.get(request.params.reference)
    if (!payment)
      return reply
        .code(404)
        .type('text/html')
        .send('<!doctype html><title>Not found</title><p>No such payment.')
    return reply.type('text/html').send(paymentPage(payment))
  })
  app.post<{ Params: { reference: string }; Body: { code?: string; action?: string } }>(
    '/pay/:reference',
    async (request, reply) => {
      const payment = payments.get(request.params.reference)
      if (!payment)
        return reply
          .code(404)
          .type('text/html')
          .send('<!doctype html><title>Not found</title><p>No such payment.')
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

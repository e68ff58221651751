import { randomBytes } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
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
}

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
      if (payment.status === 'pending') payment.status = status
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
      if (payout.status === 'processing') payout.status = status
      return payoutView(payout)
    },
  )

  return app
}

const view = (p: Payment) => ({
  reference: p.reference,
  order_id: p.order_id,
  status: p.status,
  amount: p.amount,
  currency: p.currency,
})

const payoutView = (p: Payout) => ({ reference: p.reference, status: p.status, amount: p.amount })

import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import type { Mode } from '../../src/db/types.ts'
import { sign } from '../../src/http/auth.ts'
import type { TestContext, TestMerchant } from './context.ts'

/**
 * `app.inject` that always ends. A server-sent-events answer (`GET /integration/events/stream`) stays open: it
 * is read until its first message, then the server ends its streams, so that the request completes (and is
 * logged) as any other; its body is what the stream sent until then. Any other answer is read whole.
 */
export async function injectToEnd(ctx: TestContext, options: InjectOptions): Promise<LightMyRequestResponse> {
  const res = await ctx.app.inject({ ...options, payloadAsStream: true })
  const stream = String(res.headers['content-type'] ?? '').startsWith('text/event-stream')
  const chunks: Buffer[] = []
  for await (const chunk of res.stream()) {
    chunks.push(Buffer.from(chunk))
    // Its first messages are written as it opens: ending it once they start to come still delivers them.
    if (stream && chunks.length === 1) ctx.services.webhooks.endStreams()
  }
  const raw = Buffer.concat(chunks)
  const text = raw.toString('utf8')
  return Object.assign(res, { rawPayload: raw, payload: text, body: text, json: () => JSON.parse(text) })
}

export interface CallOptions {
  /** Which credentials: a key of `merchant` (default the context's main merchant, test mode). */
  as?: { merchant?: TestMerchant; mode?: Mode }
  /** `apiKey` (default), `signature`, or `none`. */
  auth?: 'apiKey' | 'signature' | 'none'
  idempotencyKey?: string
  headers?: Record<string, string>
  /** Sent as is instead of JSON.stringify(body). */
  rawBody?: string
  /** Signature timestamp override (unix seconds). */
  timestamp?: number
}

/** One HTTP call through app.inject with the chosen credentials. */
export async function call(
  ctx: TestContext,
  method: InjectOptions['method'],
  url: string,
  body?: unknown,
  options: CallOptions = {},
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON it is answered, field by field.
): Promise<LightMyRequestResponse & { json<T = any>(): T }> {
  const merchant = options.as?.merchant ?? ctx.merchant
  const key = merchant.keys[options.as?.mode ?? 'test']
  const payload = options.rawBody ?? (body === undefined ? undefined : JSON.stringify(body))
  const headers: Record<string, string> = {
    ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
  }
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey
  const auth = options.auth ?? 'apiKey'
  if (auth === 'apiKey') headers['x-api-key'] = key.secret
  if (auth === 'signature') {
    const t = options.timestamp ?? Math.floor(Date.now() / 1000)
    const v1 = sign(key.secret, t, String(method), url, options.idempotencyKey ?? '', payload ?? '')
    headers['x-signature'] = `key_id=${key.key_id},t=${t},v1=${v1}`
  }
  Object.assign(headers, options.headers)
  return ctx.app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) })
}

/** A refund of `amountMinor` of a transaction, asked for by `merchant`, signed, under `idempotencyKey`. */
export const postRefund = (
  ctx: TestContext,
  merchant: TestMerchant,
  transactionUuid: string,
  amountMinor: number,
  idempotencyKey: string,
) =>
  call(
    ctx,
    'POST',
    '/integration/refunds',
    { transaction_uuid: transactionUuid, amount_minor: amountMinor },
    { as: { merchant }, auth: 'signature', idempotencyKey },
  )

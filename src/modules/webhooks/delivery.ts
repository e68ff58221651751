import { Webhook } from 'standardwebhooks'
import { Agent, type Dispatcher, request } from 'undici'
import { guardedLookup, isPublicAddress, UnsafeTargetError } from './ssrf.ts'

export const DELIVERY_LIMITS = {
  timeoutMs: 15_000,
  /** Read at most this much of a reply … */
  readBytes: 16 * 1024,
  /** … and keep this much of it. */
  keepBytes: 4 * 1024,
}

export interface AttemptResult {
  ok: boolean
  status: number | null
  body: string | null
  error: string | null
  durationMs: number
  /** Seconds the receiver asked us to wait (Retry-After), when it said so. */
  retryAfterSeconds: number | null
  startedAt: Date
}

/** `v1,<sig>` for each valid secret, space-separated: the newest first (Standard Webhooks). */
export function signatureHeader(secrets: string[], id: string, timestamp: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(id, timestamp, body)).join(' ')
}

function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const text = Array.isArray(value) ? value[0] : value
  if (!text) return null
  if (/^\d+$/.test(text.trim())) return Number(text.trim())
  const at = Date.parse(text)
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000))
}

/** Cuts a UTF-8 text to at most `bytes` bytes without splitting a character. */
function truncateUtf8(buffer: Buffer, bytes: number): string {
  return withoutNul(
    new TextDecoder('utf-8', { fatal: false }).decode(buffer.subarray(0, bytes)).replace(/\uFFFD$/, ''),
  )
}

/** PostgreSQL text cannot hold U+0000: a reply or error that has one is kept without it. */
const withoutNul = (text: string): string => text.replaceAll('\u0000', '')

export interface Sender {
  send(input: { url: string; eventId: string; body: string; secrets: string[] }): Promise<AttemptResult>
  close(): Promise<void>
}

/**
 * POSTs one signed delivery. Redirects are not followed; the whole exchange is bounded by the timeout and
 * the reply read is bounded; with `allowPrivateNetworks` false every connection goes through the SSRF guard.
 */
export function createSender(options: {
  allowPrivateNetworks: boolean
  requireHttps?: boolean
  timeoutMs?: number
}): Sender {
  const timeoutMs = options.timeoutMs ?? DELIVERY_LIMITS.timeoutMs
  const dispatcher: Dispatcher = new Agent({
    // More connections per origin than the dispatcher's per-target cap, so no attempt queues in the client.
    connections: 64,
    keepAliveTimeout: 10_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: options.allowPrivateNetworks
      ? { timeout: timeoutMs }
      : { timeout: timeoutMs, lookup: guardedLookup as never },
  })

  return {
    async send({ url, eventId, body, secrets }) {
      const startedAt = new Date()
      const started = performance.now()
      const elapsed = () => Math.round(performance.now() - started)
      try {
        const target = new URL(url)
        if (options.requireHttps && target.protocol !== 'https:')
          throw new UnsafeTargetError('must use https')
        const host = target.hostname.replace(/^\[|\]$/g, '')
        // Literal addresses never reach the lookup hook, so they are judged here.
        if (!options.allowPrivateNetworks && /^[\d.]+$|:/.test(host) && !isPublicAddress(host)) {
          throw new UnsafeTargetError(`points to a non-public address (${host})`)
        }
        const response = await request(url, {
          method: 'POST',
          dispatcher,
          signal: AbortSignal.timeout(timeoutMs),
          headers: {
            'content-type': 'application/json',
            'user-agent': 'merchant-gateway-webhooks/1',
            'webhook-id': eventId,
            'webhook-timestamp': String(Math.floor(startedAt.getTime() / 1000)),
            'webhook-signature': signatureHeader(secrets, eventId, startedAt, body),
          },
          body,
        })
        const chunks: Buffer[] = []
        let read = 0
        for await (const chunk of response.body) {
          const buffer = chunk as Buffer
          chunks.push(buffer)
          read += buffer.length
          if (read >= DELIVERY_LIMITS.readBytes) break
        }
        if (read >= DELIVERY_LIMITS.readBytes) response.body.destroy()
        const status = response.statusCode
        return {
          ok: status >= 200 && status < 300,
          status,
          body: truncateUtf8(Buffer.concat(chunks), DELIVERY_LIMITS.keepBytes),
          error: status >= 200 && status < 300 ? null : `HTTP ${status}`,
          durationMs: elapsed(),
          retryAfterSeconds: parseRetryAfter(response.headers['retry-after'], Date.now()),
          startedAt,
        }
      } catch (error) {
        const err = error as Error & { code?: string; cause?: Error & { code?: string } }
        const reason =
          err instanceof UnsafeTargetError ||
          err.code === 'EUNSAFETARGET' ||
          err.cause?.code === 'EUNSAFETARGET'
            ? `refused: the target ${(err.cause ?? err).message.replace(/^host /, 'host ')}`
            : err.name === 'TimeoutError' || err.name === 'AbortError' || /timeout/i.test(err.code ?? '')
              ? `timed out after ${timeoutMs} ms`
              : `${err.code ?? err.name}: ${(err.cause ?? err).message}`
        return {
          ok: false,
          status: null,
          body: null,
          error: withoutNul(reason),
          durationMs: elapsed(),
          retryAfterSeconds: null,
          startedAt,
        }
      }
    },
    close: () => dispatcher.close(),
  }
}

/**
 * When to try again after a failed attempt number `attempts` (1-based), or null when the schedule is done.
 * The schedule's delay gets ±20 % jitter; a Retry-After is honoured within [delay, 2 × delay].
 */
export function nextAttemptDelayMs(
  attempts: number,
  retryAfterSeconds: number | null,
  schedule: readonly number[],
  random: () => number,
): number | null {
  const base = schedule[attempts - 1]
  if (base === undefined) return null
  const baseMs = base * 1000
  if (retryAfterSeconds !== null) return Math.min(Math.max(retryAfterSeconds * 1000, baseMs), 2 * baseMs)
  return Math.round(baseMs * (0.8 + 0.4 * random()))
}

import { createHmac, randomUUID } from 'node:crypto'
import {
  ApiError,
  apiErrorOf,
  ConnectionError,
  MerchantGatewayError,
  TimeoutError,
  UnexpectedResponseError,
} from './errors.ts'

/**
 * The environment variables the client (and the CLI) read for what the options leave out: an option given
 * explicitly always wins over its variable, and the variable over the default.
 */
export const ENVIRONMENT = {
  apiKey: 'MERCHANT_GATEWAY_API_KEY',
  keyId: 'MERCHANT_GATEWAY_KEY_ID',
  baseUrl: 'MERCHANT_GATEWAY_BASE_URL',
} as const

export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000'

export interface ClientOptions {
  /**
   * The key's secret, `sk_test_…` or `sk_live_…`; default `MERCHANT_GATEWAY_API_KEY`. Keep it on your server:
   * never ship it to a browser.
   */
  apiKey?: string
  /**
   * The key's id, `mk_test_…` or `mk_live_…`; default `MERCHANT_GATEWAY_KEY_ID`. Needed for the operations that
   * must be signed (refunds and payouts, which the SDK signs with X-Signature).
   */
  keyId?: string
  /** The service's address; default `MERCHANT_GATEWAY_BASE_URL`, else `http://127.0.0.1:3000`. */
  baseUrl?: string
  /** Retries after the first attempt (network errors, 409 in flight, 429, 5xx); default 3. */
  maxRetries?: number
  /** Milliseconds one attempt may take before it is abandoned (and retried); default 30 000. */
  timeoutMs?: number
  /** The first retry's delay in milliseconds, doubled for each next one (with jitter); default 500. */
  retryBaseMs?: number
  /** The longest delay between two attempts, Retry-After included; default 30 000. */
  retryMaxMs?: number
  /** The fetch to use; default the global one. */
  fetch?: typeof fetch
}

/** What a single call may set. */
export interface RequestOptions {
  /** The POST's Idempotency-Key; default a new random one, reused by the SDK's own retries of this call. */
  idempotencyKey?: string
  maxRetries?: number
  timeoutMs?: number
  signal?: AbortSignal
}

export type Query = Record<
  string,
  string | number | boolean | readonly (string | number)[] | undefined | null
>

export interface Request {
  method: 'GET' | 'POST' | 'PUT'
  path: string
  query?: Query
  body?: unknown
  /** Sent with X-Signature (the operation accepts nothing else). */
  signed?: boolean
  /** Headers of the caller's, sent as they are (Last-Event-ID on a stream). */
  headers?: Record<string, string>
  /** A long-lived answer (server-sent events): the timeout bounds the wait for its headers only. */
  stream?: boolean
}

export interface Answer {
  status: number
  headers: Headers
  /** The body read whole; null for a stream (its body is `response.body`, still unread). */
  text: string | null
  response: Response
}

const API_KEY = /^sk_(test|live)_/

/**
 * The key, key id and address a client uses: each option as given, else its environment variable (an empty
 * one counts as unset), else the default address.
 */
export function resolveClientOptions(
  options: Pick<ClientOptions, 'apiKey' | 'keyId' | 'baseUrl'>,
  env: Record<string, string | undefined> = process.env,
): { apiKey: string | undefined; keyId: string | undefined; baseUrl: string } {
  const fromEnv = (name: string) => env[name] || undefined
  return {
    apiKey: options.apiKey ?? fromEnv(ENVIRONMENT.apiKey),
    keyId: options.keyId ?? fromEnv(ENVIRONMENT.keyId),
    baseUrl: options.baseUrl ?? fromEnv(ENVIRONMENT.baseUrl) ?? DEFAULT_BASE_URL,
  }
}

/** `?a=1&b=x,y`: arrays comma-separated (as the API's multi-value filters take them), absent values left out. */
export function queryString(query: Query | undefined): string {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) continue
    search.append(name, Array.isArray(value) ? value.join(',') : String(value))
  }
  const text = search.toString()
  return text ? `?${text}` : ''
}

/**
 * The X-Signature header: `key_id=…,t=…,v1=hex(HMAC-SHA256(secret, "<t>.<METHOD>.<path and query>.<Idempotency-Key
 * or empty>.<body>"))` (docs/API.md, Authentication).
 */
export function signatureHeader(input: {
  keyId: string
  secret: string
  method: string
  path: string
  idempotencyKey?: string
  body?: string
  t?: number
}): string {
  const t = input.t ?? Math.floor(Date.now() / 1000)
  const v1 = createHmac('sha256', input.secret)
    .update(`${t}.${input.method.toUpperCase()}.${input.path}.${input.idempotencyKey ?? ''}.`)
    .update(input.body ?? '')
    .digest('hex')
  return `key_id=${input.keyId},t=${t},v1=${v1}`
}

/** Whether another attempt may succeed where this answer failed: never for other 4xx. */
function retryable(error: ApiError): boolean {
  return (
    error.status === 429 ||
    error.status >= 500 ||
    (error.status === 409 && error.code === 'idempotency_request_in_progress')
  )
}

/** Retry-After in milliseconds (seconds or an HTTP date), or null. */
function retryAfterMs(headers: Headers): number | null {
  const value = headers.get('retry-after')
  if (!value) return null
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now())
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(done, ms)
    function done() {
      signal?.removeEventListener('abort', abort)
      resolve()
    }
    function abort() {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', abort, { once: true })
  })

/**
 * The transport: authenticates each request (X-Api-Key, or X-Signature where the operation requires it), gives
 * every POST an Idempotency-Key, and retries what may be retried: network errors and timeouts, 409
 * `idempotency_request_in_progress`, 429 and 5xx, with exponential backoff and full jitter, Retry-After
 * honoured. Each retry carries the same Idempotency-Key and body, so a POST whose answer was lost is answered
 * by the service's replay instead of being done twice.
 */
export class HttpClient {
  readonly baseUrl: string
  readonly mode: 'test' | 'live'
  private readonly options: Required<Omit<ClientOptions, 'keyId' | 'baseUrl'>> & { keyId?: string }

  /** Whether this client can sign (it was given the key's id): refunds and payouts need it. */
  get canSign(): boolean {
    return this.options.keyId !== undefined
  }

  constructor(options: ClientOptions = {}) {
    const { apiKey, keyId, baseUrl } = resolveClientOptions(options)
    if (apiKey === undefined)
      throw new MerchantGatewayError(
        `no API key: give apiKey (sk_test_… or sk_live_…) or set ${ENVIRONMENT.apiKey}`,
      )
    const match = API_KEY.exec(apiKey)
    if (!match) throw new MerchantGatewayError('apiKey must be a key secret, sk_test_… or sk_live_…')
    this.mode = match[1] as 'test' | 'live'
    this.baseUrl = baseUrl.replace(/\/+$/, '')
    this.options = {
      apiKey,
      keyId,
      maxRetries: options.maxRetries ?? 3,
      timeoutMs: options.timeoutMs ?? 30_000,
      retryBaseMs: options.retryBaseMs ?? 500,
      retryMaxMs: options.retryMaxMs ?? 30_000,
      fetch: options.fetch ?? globalThis.fetch,
    }
  }

  /** The JSON answer of a request (after any retries), or the ApiError/ConnectionError of its last attempt. */
  async json<T>(request: Request, options: RequestOptions = {}): Promise<T> {
    const { status, headers, text } = await this.send(request, options)
    try {
      return JSON.parse(text ?? 'null') as T
    } catch {
      throw new UnexpectedResponseError(
        `${request.method} ${request.path} answered ${status} with a body that is not JSON (${headers.get('content-type') ?? 'no content-type'}): ${snippet(text)}`,
        status,
        snippet(text),
        headers,
      )
    }
  }

  /**
   * Sends the request, retrying as the class says; resolves with a 2xx answer whose body is still unread, or
   * rejects with the last attempt's error. `options.timeoutMs` bounds each attempt until its headers arrive.
   */
  async send(request: Request, options: RequestOptions = {}): Promise<Answer> {
    const pathAndQuery = `${request.path}${queryString(request.query)}`
    const body = request.body === undefined ? undefined : JSON.stringify(request.body)
    const idempotencyKey = request.method === 'POST' ? (options.idempotencyKey ?? randomUUID()) : undefined
    if (request.signed && !this.canSign)
      throw new MerchantGatewayError(
        `${request.method} ${request.path} must be signed: give the client the key's id (keyId: 'mk_…') as well as its secret`,
      )
    const maxRetries = options.maxRetries ?? this.options.maxRetries
    for (let attempt = 0; ; attempt++) {
      let error: MerchantGatewayError
      let wait: number | null = null
      try {
        const answer = await this.attempt(request, pathAndQuery, body, idempotencyKey, options)
        if (answer.status < 300) return answer
        if (answer.status < 400) {
          const text = answer.text ?? (await answer.response.text())
          const location = answer.headers.get('location')
          throw new UnexpectedResponseError(
            `${request.method} ${request.path} answered ${answer.status}${location ? ` (a redirect to ${location})` : ''}: not followed, as the service never redirects; check baseUrl`,
            answer.status,
            snippet(text),
            answer.headers,
          )
        }
        error = apiErrorOf(answer.status, answer.headers, answer.text ?? (await answer.response.text()))
        wait = retryAfterMs(answer.headers)
        if (!retryable(error as ApiError)) throw error
      } catch (thrown) {
        if (thrown instanceof ApiError || thrown instanceof UnexpectedResponseError) throw thrown
        if (options.signal?.aborted) throw options.signal.reason
        error =
          thrown instanceof MerchantGatewayError
            ? thrown
            : new ConnectionError(`${request.method} ${request.path}: ${describe(thrown)}`, { cause: thrown })
      }
      if (attempt >= maxRetries) throw error
      const backoff = Math.min(this.options.retryMaxMs, this.options.retryBaseMs * 2 ** attempt)
      await sleep(Math.min(this.options.retryMaxMs, wait ?? Math.random() * backoff), options.signal)
    }
  }

  private async attempt(
    request: Request,
    pathAndQuery: string,
    body: string | undefined,
    idempotencyKey: string | undefined,
    options: RequestOptions,
  ): Promise<Answer> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': 'merchant-gateway-node/0.1.0',
      ...request.headers,
    }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey
    // A signature is made anew for every attempt: its timestamp must be fresh.
    if (request.signed)
      headers['x-signature'] = signatureHeader({
        keyId: this.options.keyId as string,
        secret: this.options.apiKey,
        method: request.method,
        path: pathAndQuery,
        idempotencyKey,
        body,
      })
    else headers['x-api-key'] = this.options.apiKey
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs
    const timeout = new AbortController()
    const timer = setTimeout(() => timeout.abort(), timeoutMs)
    const signal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal
    try {
      const response = await this.options.fetch(`${this.baseUrl}${pathAndQuery}`, {
        method: request.method,
        headers,
        body,
        signal,
        // The service never redirects: following one would send the key to wherever it points, and turn a POST
        // into a GET. The 3xx itself comes back, to be reported once rather than retried as a network error.
        redirect: 'manual',
      })
      // A stream runs as long as it runs; any other answer's body must come within the same timeout.
      const text =
        request.stream && response.status >= 200 && response.status < 300 ? null : await response.text()
      clearTimeout(timer)
      return { status: response.status, headers: response.headers, text, response }
    } catch (error) {
      clearTimeout(timer)
      if (timeout.signal.aborted && !options.signal?.aborted)
        throw new TimeoutError(`${request.method} ${request.path}: no answer within ${timeoutMs} ms`, {
          cause: error,
        })
      throw error
    }
  }
}

/** The start of a body, for an error's message. */
function snippet(text: string | null): string {
  if (!text) return '(empty)'
  return text.length > 200 ? `${text.slice(0, 200)}…` : text
}

/** An error's message, with its cause's (fetch's "fetch failed" says little without it). */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = (error as { cause?: unknown }).cause
  return cause instanceof Error ? `${error.message} (${cause.message})` : error.message
}

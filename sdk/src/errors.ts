import type { components } from './openapi.ts'

export type ErrorCode = components['schemas']['ErrorCode']

/** Every error the SDK throws is one of these. */
export class MerchantGatewayError extends Error {
  override name = 'MerchantGatewayError'
}

/**
 * The service answered with an error: its envelope, as sent. `code` is stable and machine-readable (the
 * closed list in docs/API.md); `requestId` identifies the request in the service's logs; `errors` maps each
 * invalid field to its messages on a 422 `validation_failed`.
 */
export class ApiError extends MerchantGatewayError {
  override name = 'ApiError'
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly requestId: string | null,
    readonly details: Record<string, unknown> | null,
    readonly errors: Record<string, string[]> | null,
    readonly headers: Headers,
  ) {
    super(message)
  }
}

/** No answer: the connection failed or dropped before a response came. */
export class ConnectionError extends MerchantGatewayError {
  override name = 'ConnectionError'
}

/** No answer within the timeout of one attempt. */
export class TimeoutError extends ConnectionError {
  override name = 'TimeoutError'
}

/**
 * The service's answer was not one the SDK can use: a redirect (never followed: it would take the key elsewhere,
 * and the service never sends one), or a 2xx whose body is not JSON (a proxy's page, say). Not retried: another
 * attempt would meet the same answer. `snippet` is the start of the body.
 */
export class UnexpectedResponseError extends MerchantGatewayError {
  override name = 'UnexpectedResponseError'
  constructor(
    message: string,
    readonly status: number,
    readonly snippet: string,
    readonly headers: Headers,
  ) {
    super(message)
  }
}

/**
 * `toArray(limit)` met more items than `limit`: rather than hand back a silently shortened list, it stops. Raise
 * the limit, narrow the filters, or iterate with `for await` to take what you need.
 */
export class ListLimitError extends MerchantGatewayError {
  override name = 'ListLimitError'
  constructor(readonly limit: number) {
    super(
      `the list has more than ${limit} items: raise toArray's limit, narrow the filters, or iterate with for await`,
    )
  }
}

/** A webhook's signature or timestamp did not verify: do not act on the body. */
export class WebhookVerificationError extends MerchantGatewayError {
  override name = 'WebhookVerificationError'
}

/** The ApiError of an answer that is not a 2xx, from its body (the envelope) and headers. */
export function apiErrorOf(status: number, headers: Headers, text: string): ApiError {
  let envelope: Partial<components['schemas']['ValidationErrorResponse']['error']> = {}
  try {
    const parsed = JSON.parse(text) as { error?: typeof envelope }
    if (parsed && typeof parsed === 'object' && parsed.error && typeof parsed.error === 'object')
      envelope = parsed.error
  } catch {
    // Not the service's envelope (a proxy's page, say): the status speaks for it.
  }
  return new ApiError(
    status,
    envelope.code ?? (status >= 500 ? 'internal_error' : 'malformed_request'),
    envelope.message ?? `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`,
    envelope.request_id ?? headers.get('x-request-id'),
    envelope.details ?? null,
    envelope.errors ?? null,
    headers,
  )
}

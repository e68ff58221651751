import type { FastifyError, FastifyInstance, FastifySchema } from 'fastify'
import { Type } from 'typebox'
import { isDatabaseUnavailable } from '../db/unavailable.ts'
import { isUuid } from '../lib/ids.ts'

/** The closed list of error codes (docs/API.md, Errors), each with its one HTTP status. */
export const ERROR_STATUS = {
  malformed_request: 400,
  idempotency_key_required: 400,
  idempotency_key_invalid: 400,
  unauthorized: 401,
  signature_required: 401,
  signature_invalid: 401,
  signature_expired: 401,
  totp_required: 401,
  sandbox_unavailable: 403,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_request_in_progress: 409,
  invalid_state: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_failed: 422,
  idempotency_key_reused: 422,
  refund_exceeds_amount: 422,
  insufficient_balance: 422,
  unsupported_currency: 422,
  unsupported_payment_method: 422,
  quote_expired: 422,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
  fx_rate_unavailable: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

const DEFAULT_MESSAGES: Partial<Record<ErrorCode, string>> = {
  malformed_request: 'The request could not be read.',
  unauthorized: 'Missing or invalid API credentials.',
  not_found: 'The resource does not exist.',
  validation_failed: 'The request is invalid.',
  internal_error: 'Something went wrong on our side. The request id identifies it in our logs.',
  unavailable: 'The service is temporarily unavailable.',
}

export type FieldErrors = Record<string, string[]>

export class AppError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details: Record<string, unknown> | null = null,
    readonly errors: FieldErrors | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message ?? DEFAULT_MESSAGES[code] ?? code)
    this.status = ERROR_STATUS[code]
  }
}

export const notFound = (what = 'resource'): AppError => new AppError('not_found', `No such ${what}.`)

/**
 * The row `uuid` names, or 404 on `what`: a malformed uuid names nothing, so it is answered like an unknown
 * one, and never reaches the database (whose uuid type would refuse it).
 */
export async function foundByUuid<R>(
  what: string,
  uuid: string,
  find: (uuid: string) => Promise<R | undefined>,
): Promise<R> {
  const row = isUuid(uuid) ? await find(uuid) : undefined
  if (!row) throw notFound(what)
  return row
}

export const validationError = (field: string, message: string): AppError =>
  new AppError('validation_failed', 'The request is invalid.', null, { [field]: [message] })

/** The closed list as a schema: every error body's `code` is one of these literals. */
export const ErrorCodeSchema = Type.Union(
  (Object.keys(ERROR_STATUS) as ErrorCode[]).map((code) => Type.Literal(code)),
  {
    $id: 'ErrorCode',
    description:
      'The closed list of error codes: stable and machine-readable, each with one HTTP status (docs/API.md, Errors).',
  },
)

export const StructuredError = Type.Object(
  {
    code: Type.Ref('ErrorCode', {
      description: 'Stable machine-readable code (see docs/API.md).',
      examples: ['not_found'],
    }),
    message: Type.String({
      description: 'Human-readable explanation.',
      examples: ['No such transaction.'],
    }),
    request_id: Type.String({
      description: 'The X-Request-Id of the request.',
      examples: ['0b6f2c1e-5d7a-4e39-9c1a-2f8e7d6c5b4a'],
    }),
    details: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
      description: 'Machine-readable specifics, or null.',
      examples: [{ refundable_minor: 500 }],
    }),
  },
  { $id: 'StructuredError', description: 'One error: a stable code, a message, and the request id.' },
)
export const ErrorResponse = Type.Object(
  { error: Type.Ref('StructuredError') },
  { $id: 'ErrorResponse', description: 'The envelope of every error but validation errors.' },
)
export const ValidationErrorResponse = Type.Object(
  {
    error: Type.Object({
      code: Type.Ref('ErrorCode', {
        description: 'Stable machine-readable code (see docs/API.md).',
        examples: ['validation_failed'],
      }),
      message: Type.String({
        description: 'Human-readable explanation.',
        examples: ['The request is invalid.'],
      }),
      request_id: Type.String({ description: 'The X-Request-Id of the request.' }),
      errors: Type.Optional(
        Type.Record(Type.String(), Type.Array(Type.String()), {
          description: 'Field path → messages; present when code is validation_failed.',
          examples: [{ amount: ['must be <= 100000000000'] }],
        }),
      ),
      details: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
        description: 'Machine-readable specifics, or null.',
      }),
    }),
  },
  {
    $id: 'ValidationErrorResponse',
    description: 'The error envelope of a 422: `errors` maps each invalid field to its messages.',
  },
)

const DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed request, or a missing or invalid Idempotency-Key.',
  401: 'Missing, malformed, wrong, expired or revoked credentials.',
  403: 'Not allowed for this key.',
  404: 'No such resource for this merchant and mode.',
  409: 'Conflict: duplicate external_id, a request with this Idempotency-Key still running, or an invalid state.',
  413: 'Request body larger than 64 KiB.',
  415: 'Request body is not application/json.',
  422: 'Validation failed (`errors` names the fields), or a business rule refused the request (see `error.code`).',
  429: 'Rate limit exceeded.',
  500: 'Internal error.',
  503: 'Temporarily unavailable, or the FX rate is out of date (`fx_rate_unavailable`): retry later.',
}

/** The shared block of error responses every route declares (OpenAPI and serialization). */
export function errorResponses(...statuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = {}
  for (const status of [...new Set([...statuses, 500])]) {
    out[status] = {
      ...(status === 422 ? Type.Ref('ValidationErrorResponse') : Type.Ref('ErrorResponse')),
      description: DESCRIPTIONS[status] ?? 'Error',
    }
  }
  return out
}

/** One error response of the shared block, with the response headers it may carry besides the shared ones. */
export function errorResponse(
  status: number,
  headers: Record<string, { type: string; description: string }>,
) {
  return { ...(errorResponses(status)[status] as object), headers }
}

/**
 * Adds the error responses a shared mechanism can answer with (authentication, rate limits, idempotency, the
 * body parser) to a route's schema, beside those the route declares itself. Routes without documented
 * responses (the hidden ones) are left alone.
 */
export function declareErrorResponses(schema: FastifySchema | undefined, ...statuses: number[]): void {
  if (!schema?.response || (schema as { hide?: boolean }).hide) return
  const responses = schema.response as Record<string, unknown>
  for (const [status, declared] of Object.entries(errorResponses(...statuses)))
    if (!(status in responses)) responses[status] = declared
}

export function registerErrorSchemas(app: FastifyInstance): void {
  app.addSchema(ErrorCodeSchema)
  app.addSchema(StructuredError)
  app.addSchema(ErrorResponse)
  app.addSchema(ValidationErrorResponse)
}

interface AjvIssue {
  instancePath: string
  keyword: string
  message?: string
  params: Record<string, unknown>
  /** Set when the issue is with an object key (`propertyNames`), not its value. */
  propertyName?: string
}

/** Ajv's issues → `{ "metadata.order": ["must be string"] }`, with query parameters named as sent. */
function fieldErrors(issues: AjvIssue[]): FieldErrors {
  // No prototype: a field named `constructor` or `toString` is a field like any other.
  const out: FieldErrors = Object.create(null)
  // A nullable field that fails its schema also fails the `null` branch of its anyOf, and the anyOf itself:
  // those two say nothing the real issue does not, and would name a parent of the offending path.
  const noise = (i: AjvIssue) => i.keyword === 'anyOf' || (i.keyword === 'type' && i.params.type === 'null')
  const informative = issues.filter((i) => !noise(i))
  for (const issue of informative.length ? informative : issues) {
    // The key's own issue (propertyName set) says what is wrong; this one only says "invalid name".
    if (issue.keyword === 'propertyNames') continue
    let path = issue.instancePath.replace(/^\//, '').replace(/\//g, '.')
    let message = issue.message ?? 'is invalid'
    if (issue.propertyName !== undefined) {
      path = [path, issue.propertyName].filter(Boolean).join('.')
      message = `key ${message}`
    } else if (issue.keyword === 'required') {
      path = [path, String(issue.params.missingProperty)].filter(Boolean).join('.')
      message = 'is required'
    } else if (issue.keyword === 'additionalProperties') {
      path = [path, String(issue.params.additionalProperty)].filter(Boolean).join('.')
      message = 'is not a recognised field'
    } else if (issue.keyword === 'enum' && Array.isArray(issue.params.allowedValues)) {
      message = `must be one of: ${issue.params.allowedValues.join(', ')}`
    }
    const key = path || 'body'
    const messages = out[key] ?? []
    if (!messages.includes(message)) messages.push(message)
    out[key] = messages
  }
  return out
}

export interface RenderedError {
  status: number
  code: ErrorCode
  message: string
  details: Record<string, unknown> | null
  errors: FieldErrors | null
  headers: Record<string, string>
}

/** The one error envelope (`ErrorResponse`, with `errors` when fields were invalid) of a rendered error. */
export function errorEnvelope(rendered: RenderedError, requestId: string) {
  return {
    error: {
      code: rendered.code,
      message: rendered.message,
      request_id: requestId,
      ...(rendered.errors ? { errors: rendered.errors } : {}),
      details: rendered.details,
    },
  }
}

/** Every failure, ours or Fastify's, becomes one envelope; internals of a 5xx never leave the process. */
export function renderError(error: FastifyError | AppError | Error): RenderedError {
  if (error instanceof AppError) {
    return {
      status: error.status,
      code: error.code,
      message: error.message,
      details: error.details,
      errors: error.errors,
      headers: error.headers,
    }
  }
  const fe = error as FastifyError & { validation?: AjvIssue[] }
  if (fe.validation) {
    return {
      status: 422,
      code: 'validation_failed',
      message: 'The request is invalid.',
      details: null,
      errors: fieldErrors(fe.validation),
      headers: {},
    }
  }
  const base = { details: null, errors: null, headers: {} }
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        ...base,
        status: 415,
        code: 'unsupported_media_type',
        message: 'Send the request body as application/json.',
      }
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        ...base,
        status: 413,
        code: 'payload_too_large',
        message: 'The request body is larger than 64 KiB.',
      }
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // No identifier is that long: the path names nothing.
      return { ...base, status: 404, code: 'not_found', message: 'No such resource.' }
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return { ...base, status: 400, code: 'malformed_request', message: fe.message }
  }
  if (fe.statusCode === 400 || error instanceof SyntaxError) {
    return { ...base, status: 400, code: 'malformed_request', message: 'The request body is not valid JSON.' }
  }
  if (fe.statusCode === 413)
    return { ...base, status: 413, code: 'payload_too_large', message: 'The request body is too large.' }
  if (fe.statusCode === 415)
    return {
      ...base,
      status: 415,
      code: 'unsupported_media_type',
      message: 'Send the request body as application/json.',
    }
  if (fe.statusCode === 404) return { ...base, status: 404, code: 'not_found', message: 'Not found.' }
  // A plugin's refusal (the docs' static files refuse a path outside their folder) stays a refusal.
  if (fe.statusCode === 403) return { ...base, status: 403, code: 'forbidden', message: 'Forbidden.' }
  if (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500)
    return { ...base, status: 400, code: 'malformed_request', message: 'The request cannot be served.' }
  // The database went away under the request (a failover, a restart, a cut connection) or cannot be reached:
  // its transaction rolled back with the session, and the client may retry (with the same Idempotency-Key:
  // a cut that lands as the COMMIT is acknowledged leaves the write done but unanswered).
  if (isDatabaseUnavailable(error))
    return {
      ...base,
      status: 503,
      code: 'unavailable',
      message: DEFAULT_MESSAGES.unavailable as string,
      headers: { 'retry-after': '1' },
    }
  return { ...base, status: 500, code: 'internal_error', message: DEFAULT_MESSAGES.internal_error as string }
}

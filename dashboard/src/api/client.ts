import createClient, { type Middleware } from 'openapi-fetch'
import type { Schemas, Transaction } from '../../../sdk/src/client'
// The merchant API's types: the SDK's generated file, the one copy (npm run generate:client).
import type { paths } from '../../../sdk/src/openapi'

// The SDK's names for the API's records (types only: nothing of the SDK's Node code reaches the browser).
export type {
  Event as ApiEvent,
  Refund,
  Schemas,
  Transaction,
  WebhookDelivery as Delivery,
} from '../../../sdk/src/client'
export type Balance = Schemas['MerchantBalance']
export type Mode = Transaction['mode']

/** The error envelope every answer of the service uses (a 422's names each invalid field). */
export type ApiErrorBody = Schemas['ErrorResponse'] | Schemas['ValidationErrorResponse']

/** A refused call: the envelope's message, code and request id, for the page to show. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody | null,
  ) {
    super(body?.error.message ?? `The service answered ${status}.`)
  }
  get code() {
    return this.body?.error.code ?? 'unknown'
  }
  /** Each invalid field's first complaint, for a form to show beside the field. */
  get fieldErrors(): Record<string, string> {
    const errors = this.body && 'errors' in this.body.error ? this.body.error.errors : undefined
    return Object.fromEntries(Object.entries(errors ?? {}).map(([k, v]) => [k, v[0] ?? '']))
  }
}

let csrfToken = ''
/** The CSRF token of the session, sent with every change (from sign-in or GET /dashboard/api/me). */
export const setCsrfToken = (token: string) => {
  csrfToken = token
}

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** A session call's own headers: the mode it is about (when it names one), and the CSRF token on a change. */
export function sessionHeaders(method: string, mode?: Mode): Record<string, string> {
  const headers: Record<string, string> = {}
  if (mode) headers['x-dashboard-mode'] = mode
  if (CHANGES.has(method)) headers['x-csrf-token'] = csrfToken
  return headers
}

/** The ApiError of an answer that is not ok, with its envelope when the body is JSON. */
export async function apiErrorOf(response: Response): Promise<ApiError> {
  return new ApiError(response.status, (await response.json().catch(() => null)) as ApiErrorBody | null)
}

/**
 * What a call made while signed in to the dashboard adds: the cookie goes by itself, `X-Dashboard-Mode` names
 * the mode (when the call is in one), and a change carries the CSRF token of the session.
 */
export const sessionMiddleware = (mode?: Mode): Middleware => ({
  onRequest({ request }) {
    for (const [name, value] of Object.entries(sessionHeaders(request.method, mode)))
      request.headers.set(name, value)
    return request
  },
})

/** The merchant API, typed from its own OpenAPI document, called while signed in to the dashboard, in a mode. */
function apiFor(mode: Mode) {
  const client = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' })
  client.use(sessionMiddleware(mode))
  return client
}

const clients = { test: apiFor('test'), live: apiFor('live') }
export const api = (mode: Mode) => clients[mode]

/**
 * The JSON data of an answer, or its error thrown as an ApiError (what the query cache expects). The lists
 * also declare a CSV answer (a string); the pages ask for JSON, so that member is dropped from the type.
 */
export async function data<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<Exclude<NonNullable<T>, string>> {
  const { data, error, response } = await call
  if (response.ok && data !== undefined) return data as Exclude<NonNullable<T>, string>
  throw new ApiError(response.status, (error as ApiErrorBody) ?? null)
}

/** Waits for a call that answers no body (204), or throws its error as an ApiError. */
export async function noContent(call: Promise<{ error?: unknown; response: Response }>): Promise<void> {
  const { error, response } = await call
  if (!response.ok) throw new ApiError(response.status, (error as ApiErrorBody) ?? null)
}

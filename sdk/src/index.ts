export {
  type BodyOf,
  type Event,
  type FiltersOf,
  MerchantGateway,
  type Payout,
  type PayoutQuote,
  type QueryOf,
  type Refund,
  type ResultOf,
  type Schemas,
  type StreamMessage,
  type StreamOptions,
  type Transaction,
  type WebhookConfig,
  type WebhookConfigInput,
  type WebhookDelivery,
} from './client.ts'
export {
  ApiError,
  ConnectionError,
  type ErrorCode,
  ListLimitError,
  MerchantGatewayError,
  TimeoutError,
  UnexpectedResponseError,
  WebhookVerificationError,
} from './errors.ts'
export {
  type ClientOptions,
  DEFAULT_BASE_URL,
  ENVIRONMENT,
  type RequestOptions,
  resolveClientOptions,
  signatureHeader,
} from './http.ts'
export type { components, operations, paths } from './openapi.ts'
export { List, type Page } from './pagination.ts'

import { generateSecret, signHeaders, verify } from './webhooks.ts'

export type { HeadersLike, WebhookEvent } from './webhooks.ts'

/** Webhook signatures (Standard Webhooks): `verify` before acting on a callback. */
export const webhooks = { verify, signHeaders, generateSecret }

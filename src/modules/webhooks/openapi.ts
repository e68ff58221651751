import { PAYOUT_EVENTS, TRANSACTION_EVENTS } from './schemas.ts'

/** The headers of every delivery (Standard Webhooks). */
const DELIVERY_HEADERS = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event id (`event_id` of the body): the same on every attempt and redelivery.',
    schema: { type: 'string', format: 'uuid' },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds at which this attempt was signed; each attempt has a fresh one.',
    schema: { type: 'string', pattern: '^[0-9]+$', examples: ['1795342530'] },
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,<base64 signature>`, space-separated entries (two during a secret rotation, the new first). signature = base64(HMAC-SHA256(key = base64-decode(the secret without `whsec_`), message = "<webhook-id>.<webhook-timestamp>.<raw body>")).',
    schema: { type: 'string', examples: ['v1,y/8VsDpkgUiGdIJqrU9bZKUEZSy2ySR5eRlzs3QHT8Q='] },
  },
]

/** How the merchant's endpoint answers, and what the gateway makes of it. */
const DELIVERY_RESPONSES = {
  '2XX': { description: 'Received: the delivery succeeded (within 15 s; the body is not read).' },
  '410': {
    description:
      'Gone: the delivery fails at once; when the URL is the configured one, deliveries are switched off.',
  },
  default: {
    description:
      'Any other status (3xx and 4xx included), a timeout or a connection error: retried on the schedule of docs/API.md, honouring Retry-After.',
  },
}

const delivery = (operationId: string, summary: string, description: string, schema: string) => ({
  post: {
    operationId,
    summary,
    description,
    tags: ['Webhooks'],
    // The gateway signs the callback itself (webhook-signature): the merchant's endpoint asks no credentials.
    security: [],
    parameters: DELIVERY_HEADERS,
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
    },
    responses: DELIVERY_RESPONSES,
  },
})

/**
 * The OpenAPI 3.1 `webhooks` section: what the gateway POSTs to the merchant's URL (the webhook's, or a
 * resource's own callback_url), one entry per event family. Refund events are transaction events: a refund
 * moves its transaction to partially_refunded or refunded.
 */
export const WEBHOOKS_DOCUMENT = {
  transaction: delivery(
    'transactionCallback',
    'A transaction changed its status',
    `Sent for ${TRANSACTION_EVENTS.join(', ')}: a payment was paid, failed or expired, or a refund succeeded.`,
    'MerchantTransactionCallback',
  ),
  payout: delivery(
    'payoutCallback',
    'A payout changed its status',
    `Sent for ${PAYOUT_EVENTS.join(', ')}.`,
    'MerchantPayoutCallback',
  ),
  test: delivery(
    'testCallback',
    'A test delivery',
    'Sent only on request, by POST /integration/webhook/test, to the configured URL; it cannot be subscribed to.',
    'MerchantTestCallback',
  ),
}

import { type Static, Type } from 'typebox'
import { DeliveryStatusSchema, ModeSchema } from '../../db/enums.ts'
import { PaginationQuery } from '../../http/pagination.ts'
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts'
import { LiteralUnion } from '../../lib/schema.ts'
import { EVENT_NAMES, PAYOUT_EVENTS, TRANSACTION_EVENTS } from './event-names.ts'

export { EVENT_NAMES, type EventName, PAYOUT_EVENTS, TRANSACTION_EVENTS } from './event-names.ts'

export const WebhookConfigResponse = Type.Object(
  {
    url: Nullable(Type.String({ format: 'uri', examples: ['https://shop.example/webhooks/gateway'] })),
    enabled: Type.Boolean(),
    events: Type.Array(Type.String({ enum: [...EVENT_NAMES] })),
    secret: Type.String({
      description: 'The signing secret, whsec_<base64 of 32 bytes>.',
      examples: ['whsec_AJ4k9QNeSw32TRnvKWmkneN07NLySOcxqravJAmFPgA='],
    }),
    previous_secret_expires_at: Nullable(
      Timestamp('Until then deliveries also carry a signature with the previous secret.'),
    ),
    disabled_reason: Nullable(
      Type.String({ description: 'Why deliveries were switched off (e.g. the endpoint answered 410).' }),
    ),
    updated_at: Timestamp(),
  },
  { $id: 'WebhookConfig' },
)

export const UpdateWebhookConfigRequest = Type.Object(
  {
    url: Nullable(
      Type.String({
        format: 'uri',
        pattern: '^https?://',
        maxLength: 2048,
        description: 'Where events are POSTed; null removes it.',
        examples: ['https://shop.example/webhooks/gateway'],
      }),
    ),
    enabled: Type.Optional(Type.Boolean({ default: true })),
    events: Type.Optional(
      Type.Array(Type.String({ enum: [...EVENT_NAMES] }), {
        uniqueItems: true,
        maxItems: EVENT_NAMES.length,
        description: 'Subscribed events; default all.',
      }),
    ),
  },
  { $id: 'UpdateWebhookConfigRequest', additionalProperties: false },
)

export const RotateSecretRequest = Type.Object(
  {
    overlap_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604800,
        default: 86400,
        description: 'How long the previous secret keeps signing too.',
      }),
    ),
  },
  { $id: 'RotateWebhookSecretRequest', additionalProperties: false },
)

export const WebhookDeliveryResponse = Type.Object(
  {
    uuid: Uuid(),
    event_id: Uuid('The webhook-id header: the same on every attempt.'),
    event: Type.String({ examples: ['transaction.paid'] }),
    url: Type.String(),
    status: DeliveryStatusSchema,
    attempts: Type.Integer({ minimum: 0 }),
    last_attempt_at: Nullable(Timestamp()),
    next_attempt_at: Nullable(Timestamp()),
    response_status: Nullable(Type.Integer()),
    response_body: Nullable(Type.String({ description: 'The first 4 KiB of the last reply.' })),
    duration_ms: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    is_test: Type.Boolean(),
    created_at: Timestamp(),
  },
  { $id: 'WebhookDelivery' },
)

export const WebhookDeliveryPage = Type.Object(
  { data: Type.Array(Type.Ref('WebhookDelivery')), meta: Type.Ref('CursorMeta') },
  { $id: 'WebhookDeliveryPage' },
)

export const ListDeliveriesQuery = Type.Object(
  {
    ...PaginationQuery,
    status: Type.Optional(Type.String({ enum: ['pending', 'succeeded', 'failed'] })),
    event: Type.Optional(Type.String({ enum: [...EVENT_NAMES, 'webhook.test'] })),
    event_id: Type.Optional(
      Uuid('Only the deliveries of this event (the `event_id` of `GET /integration/events`).'),
    ),
  },
  { additionalProperties: false },
)

export type WebhookConfigView = Static<typeof WebhookConfigResponse>
export type WebhookDeliveryView = Static<typeof WebhookDeliveryResponse>
export type UpdateWebhookConfigInput = Static<typeof UpdateWebhookConfigRequest>

/** What every callback body shares: the event, its id, and the version of the resource it reports. */
const callbackEnvelope = (events: readonly string[], description: string) => ({
  event:
    events.length === 1
      ? Type.Literal(events[0] as string, { description })
      : Type.Union(
          events.map((event) => Type.Literal(event)),
          { description },
        ),
  event_id: Uuid(
    'The event id, also sent as the `webhook-id` header: the same on every attempt. Deduplicate on it.',
  ),
  schema_version: Type.Literal('1', { description: 'The version of this payload schema.' }),
  occurred_at: Timestamp('When the change happened.'),
  aggregate_version: Type.Integer({
    minimum: 1,
    description: "The resource's aggregate_version after the change: order events by it.",
  }),
})

export const MerchantTransactionCallback = Type.Object(
  {
    ...callbackEnvelope(TRANSACTION_EVENTS, 'The status the transaction moved to (refunds included).'),
    transaction: Type.Ref('TransactionResponse', {
      description: 'The transaction as it was right after the change.',
    }),
  },
  {
    $id: 'MerchantTransactionCallback',
    description: 'The body of a transaction event: a payment, or a refund of it, changed its status.',
  },
)

export const MerchantPayoutCallback = Type.Object(
  {
    ...callbackEnvelope(PAYOUT_EVENTS, 'The status the payout moved to.'),
    payout: Type.Ref('PayoutResponse', { description: 'The payout as it was right after the change.' }),
  },
  { $id: 'MerchantPayoutCallback', description: 'The body of a payout event: a payout changed its status.' },
)

export const MerchantTestCallback = Type.Object(
  {
    ...callbackEnvelope(['webhook.test'], 'Always `webhook.test`.'),
    data: Type.Object({
      message: Type.String({ examples: ['This is a test delivery from merchant-gateway.'] }),
      merchant_uuid: Uuid(),
      mode: ModeSchema,
    }),
  },
  {
    $id: 'MerchantTestCallback',
    description:
      'The body of a test delivery (`POST /integration/webhook/test`); its aggregate_version is 1.',
  },
)

/**
 * How the delivery of an event stands (GET /integration/events): `none` when no delivery was due (the event had
 * no target when it occurred: no callback_url, and no configured URL that was enabled and subscribed to it),
 * else its delivery's status: `pending` (waiting for its first attempt, a retry or a redelivery, or being sent),
 * `succeeded`, `failed` (out of retries, or the endpoint answered 410).
 */
export const WEBHOOK_STATUSES = ['none', 'pending', 'succeeded', 'failed'] as const
export const WebhookStatusSchema = LiteralUnion(WEBHOOK_STATUSES, {
  description:
    "`none`: no delivery was due (no callback_url, and no enabled webhook URL subscribed to the event when it occurred). Otherwise the delivery's state: `pending` (waiting for an attempt, a retry or a redelivery), `succeeded` (a 2xx), `failed` (out of retries, or a 410).",
})
export type WebhookStatus = Static<typeof WebhookStatusSchema>

const webhookStatus = { webhook_status: WebhookStatusSchema }

/**
 * An event as the events API shows it: exactly the body its webhook carries, and how its delivery stands. The
 * body is the one stored when the event happened, so it is only as new as the event: a field added later to
 * TransactionResponse or PayoutResponse has to be optional until the older events have passed their retention.
 */
export const TransactionEvent = Type.Object(
  { ...MerchantTransactionCallback.properties, ...webhookStatus },
  {
    $id: 'TransactionEvent',
    description:
      'A transaction event: the body of its webhook (MerchantTransactionCallback), plus webhook_status.',
  },
)

export const PayoutEvent = Type.Object(
  { ...MerchantPayoutCallback.properties, ...webhookStatus },
  {
    $id: 'PayoutEvent',
    description: 'A payout event: the body of its webhook (MerchantPayoutCallback), plus webhook_status.',
  },
)

export const EventResponse = Type.Union([Type.Ref('TransactionEvent'), Type.Ref('PayoutEvent')], {
  $id: 'Event',
  description: 'An event: `transaction` for transaction.* events, `payout` for payout.* events.',
})

export const EventCursorPage = Type.Object(
  { data: Type.Array(Type.Ref('Event')), meta: Type.Ref('CursorMeta') },
  { $id: 'EventCursorPage' },
)

export const ListEventsQuery = Type.Object(
  {
    ...PaginationQuery,
    type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 500,
        description: `One event name, or several comma-separated: ${EVENT_NAMES.join(', ')}.`,
        examples: ['transaction.paid,transaction.refunded'],
      }),
    ),
    created_from: Type.Optional(
      Type.String({
        description: 'YYYY-MM-DD (UTC) or a date-time; inclusive, on occurred_at.',
        examples: ['2026-11-01T00:00:00Z'],
      }),
    ),
    created_to: Type.Optional(
      Type.String({
        description: 'YYYY-MM-DD (UTC, the whole day) or a date-time; inclusive, on occurred_at.',
        examples: ['2026-11-30'],
      }),
    ),
    object_uuid: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 36,
        description:
          "The uuid of a transaction, refund or payout: its events (a refund's is the transaction event its success caused).",
        examples: ['01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10'],
      }),
    ),
  },
  { additionalProperties: false },
)

// Like any uuid in a path, a malformed event_id names nothing: 404.
export const EventIdParams = Type.Object(
  {
    event_id: Type.String({
      description: 'The event id (`event_id`, the `webhook-id` header of its deliveries).',
      examples: ['01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10'],
    }),
  },
  { additionalProperties: false },
)

export type ListEventsInput = Static<typeof ListEventsQuery>

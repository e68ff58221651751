import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { errorResponses } from '../../http/errors.ts'
import { answers, getByUuid, KEY_OR_SIGNATURE, keyOperation, listWithCsv } from '../../http/routes.ts'
import { sharedSchemas, UuidParams } from '../../http/schemas.ts'
import { EVENT_CSV_COLUMNS } from './events.ts'
import {
  EventCursorPage,
  EventIdParams,
  EventResponse,
  ListDeliveriesQuery,
  ListEventsQuery,
  MerchantPayoutCallback,
  MerchantTestCallback,
  MerchantTransactionCallback,
  PayoutEvent,
  RotateSecretRequest,
  TransactionEvent,
  UpdateWebhookConfigRequest,
  WebhookConfigResponse,
  WebhookDeliveryPage,
  WebhookDeliveryResponse,
} from './schemas.ts'
import type { WebhookService } from './service.ts'

const tags = ['Webhooks']
const eventTags = ['Events']

export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = sharedSchemas(
  [
    UpdateWebhookConfigRequest,
    RotateSecretRequest,
    WebhookConfigResponse,
    WebhookDeliveryResponse,
    WebhookDeliveryPage,
    MerchantTransactionCallback,
    MerchantPayoutCallback,
    MerchantTestCallback,
    TransactionEvent,
    PayoutEvent,
    EventResponse,
    EventCursorPage,
  ],
  async (app, { webhooks }) => {
    app.get(
      '/integration/webhook',
      keyOperation({
        operationId: 'getWebhookConfig',
        summary: 'Get the webhook configuration',
        description:
          'Per merchant and mode. The signing secret exists from the start, before any URL is set.',
        tags,
        response: answers(200, WebhookConfigResponse, 'The configuration.', 401),
      }),
      async (request, reply) => {
        reply.header('cache-control', 'no-store')
        return webhooks.getConfig(authOf(request))
      },
    )

    app.put(
      '/integration/webhook',
      keyOperation({
        operationId: 'updateWebhookConfig',
        summary: 'Set the webhook URL, switch it on or off, choose events',
        tags,
        body: UpdateWebhookConfigRequest,
        response: answers(200, WebhookConfigResponse, 'The configuration.', 400, 401, 413, 415, 422),
      }),
      async (request, reply) => {
        reply.header('cache-control', 'no-store')
        return webhooks.updateConfig(authOf(request), request.body)
      },
    )

    app.post(
      '/integration/webhook/secret/rotate',
      {
        config: { auth: 'key', idempotency: 'optional', bodyOptional: true },
        schema: {
          operationId: 'rotateWebhookSecret',
          summary: 'Rotate the signing secret',
          description:
            'Returns the new secret. Until previous_secret_expires_at every delivery carries two signatures: the new and the old. At most two secrets are ever valid.',
          tags,
          security: KEY_OR_SIGNATURE,
          body: RotateSecretRequest,
          response: answers(
            200,
            WebhookConfigResponse,
            'The configuration with its new secret.',
            400,
            401,
            422,
          ),
        },
      },
      async (request, reply) => {
        reply.header('cache-control', 'no-store')
        return webhooks.rotateSecret(authOf(request), request.body?.overlap_seconds)
      },
    )

    app.post(
      '/integration/webhook/test',
      {
        config: { auth: 'key', idempotency: 'optional' },
        schema: {
          operationId: 'sendTestWebhook',
          summary: 'Send a webhook.test delivery now',
          description:
            'Sends at once to the configured URL and answers with the delivery after its one attempt (tests are not retried). 422 when no URL is set.',
          tags,
          security: KEY_OR_SIGNATURE,
          response: answers(200, WebhookDeliveryResponse, 'The delivery after its attempt.', 401, 422),
        },
      },
      (request) => webhooks.sendTest(authOf(request)),
    )

    app.get(
      '/integration/webhook/deliveries',
      keyOperation({
        operationId: 'listWebhookDeliveries',
        summary: 'List webhook deliveries',
        description: 'Newest first, cursor-paginated, optionally by status and event.',
        tags,
        querystring: ListDeliveriesQuery,
        response: answers(200, WebhookDeliveryPage, 'A page of deliveries.', 401, 422),
      }),
      (request) => webhooks.listDeliveries(authOf(request), request.query),
    )

    getByUuid(app, '/integration/webhook/deliveries/:uuid', {
      operationId: 'getWebhookDelivery',
      summary: 'Get a webhook delivery',
      tags,
      answer: WebhookDeliveryResponse,
      answered: 'The delivery.',
      get: webhooks.getDelivery,
    })

    app.post(
      '/integration/webhook/deliveries/:uuid/redeliver',
      {
        config: { auth: 'key', idempotency: 'optional' },
        schema: {
          operationId: 'redeliverWebhook',
          summary: 'Queue a fresh attempt of a delivery',
          description:
            'The delivery becomes pending and is attempted at once by the dispatcher, with the same webhook-id and body. Answers 202.',
          tags,
          security: KEY_OR_SIGNATURE,
          params: UuidParams,
          response: answers(202, WebhookDeliveryResponse, 'The delivery, queued.', 401, 404, 409),
        },
      },
      async (request, reply) =>
        reply.code(202).send(await webhooks.redeliver(authOf(request), request.params.uuid)),
    )

    // The events are the outbox's rows, so their API lives with the webhooks that carry them.
    listWithCsv(app, '/integration/events', {
      operationId: 'listEvents',
      summary: 'List events',
      description:
        "The events of your key's mode, newest first (occurred_at, then event_id), with keyset cursor pagination: each is exactly the body its webhook carries, plus webhook_status. Kept at least 30 days. Repeat the same filters with a cursor. After downtime, list from the last event you processed and apply each whose aggregate_version is above the one you hold (docs/API.md §22).",
      tags: eventTags,
      querystring: ListEventsQuery,
      page: EventCursorPage,
      paged: 'A page of events, newest first.',
      csv: { name: 'events', columns: EVENT_CSV_COLUMNS },
      list: webhooks.listEvents,
      export: webhooks.exportEvents,
    })

    app.addHook('preClose', async () => webhooks.closeStreams())
    app.get(
      '/integration/events/stream',
      keyOperation({
        operationId: 'streamEvents',
        summary: 'Stream test-mode events as they happen',
        description:
          "Server-sent events (`text/event-stream`), test keys only (a live key is 403 `forbidden`): first `event: ready`, then every event of the merchant's test mode as it is recorded, each as `id: <event_id>`, `event: <name>` and `data: <exactly the body its webhook carries>`, and a `: heartbeat` comment every 15 s. Events from when the stream opens; reconnect with `Last-Event-ID` to resume after the last one received (docs/API.md §25 says what that does not re-send). At most 10 open streams per merchant (429); a server shutting down refuses new ones (503). `merchant-gateway listen` forwards them to a local URL (docs/API.md §25).",
        tags: eventTags,
        querystring: Type.Object({ type: ListEventsQuery.properties.type }, { additionalProperties: false }),
        headers: Type.Object({
          'last-event-id': Type.Optional(
            Type.String({
              maxLength: 64,
              description: 'The id of the last event received: the stream resumes after it.',
            }),
          ),
        }),
        response: {
          200: {
            description: 'The stream: it stays open until the client or the server ends it.',
            content: {
              'text/event-stream': {
                schema: {
                  type: 'string',
                  description:
                    'Server-sent events: `event: ready` (data `{"mode":"test","merchant_uuid":…}`), then `id`, `event` and `data` (the webhook body, one JSON line) per event.',
                },
              },
            },
          },
          ...errorResponses(401, 403, 422, 503),
        },
      }),
      async (request, reply) => {
        const stream = await webhooks.streamEvents(
          authOf(request),
          request.query,
          request.headers['last-event-id'],
        )
        // The answer is a stream of text, not the string the typed reply expects.
        return (
          (reply as FastifyReply)
            .header('content-type', 'text/event-stream; charset=utf-8')
            .header('cache-control', 'no-store')
            .header('x-accel-buffering', 'no')
            // The connection ends with the stream: a keep-alive one would hold a shutting-down server open.
            .header('connection', 'close')
            .send(stream)
        )
      },
    )

    app.get(
      '/integration/events/:event_id',
      keyOperation({
        operationId: 'getEvent',
        summary: 'Get an event',
        description:
          'By its event_id (the webhook-id of its deliveries), within the mode of your key. A malformed id names nothing: 404.',
        tags: eventTags,
        params: EventIdParams,
        response: answers(200, EventResponse, 'The event.', 401, 404),
      }),
      (request) => webhooks.getEvent(authOf(request), request.params.event_id),
    )
  },
)

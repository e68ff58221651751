import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { jsonOrCsv, sendCsv, wantsCsv } from '../../http/csv.ts'
import { AppError, errorResponse, errorResponses } from '../../http/errors.ts'
import { Ref, sharedSchemas, UuidParams } from '../../http/schemas.ts'
import { CreateRefundRequest, ListRefundsQuery, RefundCursorPage, RefundResponse } from './schemas.ts'
import type { RefundService } from './service.ts'
import { REFUND_CSV_COLUMNS, REFUND_CSV_FIELDS } from './view.ts'

const tags = ['Refunds']
const locationOf = (uuid: string) => `/integration/refunds/${uuid}`

export const refundRoutes: FastifyPluginAsyncTypebox<{ refunds: RefundService }> = sharedSchemas(
  async (app, { refunds }) => {
    for (const schema of [CreateRefundRequest, RefundResponse, RefundCursorPage]) app.addSchema(schema)
    app.post(
      '/integration/refunds',
      {
        config: {
          auth: 'signature',
          idempotency: 'required',
          committedAnswer: async (scope, key) => {
            const refund = await refunds.findByIdempotencyKey(scope, key)
            return refund && { status: 201, headers: { location: locationOf(refund.uuid) }, body: refund }
          },
        },
        schema: {
          operationId: 'createRefund',
          summary: 'Refund a paid transaction',
          description:
            'Moves money: X-Signature and Idempotency-Key are mandatory. The refund is debited from the available balance (ceil of the amount at the transaction rate); fees are not returned. The sum of pending and succeeded refunds never exceeds the amount.',
          tags,
          security: [{ Signature: [] }],
          // Declared optional so that a missing key gets its own 400 idempotency_key_required, not a 422.
          headers: Type.Object({
            'idempotency-key': Type.Optional(
              Type.String({ description: 'Required: 1-255 printable ASCII characters.' }),
            ),
          }),
          body: CreateRefundRequest,
          response: {
            201: Ref(RefundResponse, {
              description:
                'The refund (the sandbox provider answers at once). `Location` names it. A retry of a key whose refund was made answers that refund, with `Idempotent-Replayed: true`.',
              headers: {
                location: { type: 'string', description: 'The refund: /integration/refunds/{uuid}.' },
              },
            }),
            ...errorResponses(400, 401, 404, 409, 413, 415, 422),
            // The refund was made but its answer could not be stored (the database went away): Location names it.
            503: errorResponse(503, {
              location: {
                type: 'string',
                description:
                  'When present, the refund was made: /integration/refunds/{uuid}. Retry with the same Idempotency-Key.',
              },
            }),
          },
        },
      },
      async (request, reply) => {
        const claim = request.idempotency
        if (!claim)
          throw new AppError('idempotency_key_required', 'This operation needs an Idempotency-Key header.')
        const { refund, replayed } = await refunds.create(authOf(request), request.body, {
          idempotencyKey: claim.key,
          actionRequestId: claim.owner,
        })
        if (replayed) reply.header('idempotent-replayed', 'true')
        return reply.code(201).header('location', locationOf(refund.uuid)).send(refund)
      },
    )

    app.get(
      '/integration/refunds',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'listRefunds',
          summary: 'List refunds',
          description:
            'Newest first, with keyset cursor pagination like the transaction list. Repeat the same filters with a cursor.',
          tags,
          security: [{ ApiKey: [] }, { Signature: [] }],
          querystring: ListRefundsQuery,
          response: {
            200: jsonOrCsv(RefundCursorPage, 'A page of refunds, newest first.', REFUND_CSV_FIELDS),
            ...errorResponses(401, 422),
          },
        },
      },
      (request, reply) =>
        wantsCsv(request)
          ? sendCsv(reply, 'refunds', REFUND_CSV_COLUMNS, refunds.export(authOf(request), request.query))
          : refunds.list(authOf(request), request.query),
    )

    app.get(
      '/integration/refunds/:uuid',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'getRefund',
          summary: 'Get a refund',
          tags,
          security: [{ ApiKey: [] }, { Signature: [] }],
          params: UuidParams,
          response: {
            200: Ref(RefundResponse, { description: 'The refund.' }),
            ...errorResponses(401, 404),
          },
        },
      },
      (request) => refunds.get(authOf(request), request.params.uuid),
    )
  },
)

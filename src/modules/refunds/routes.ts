import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { authOf } from '../../http/auth.ts'
import { jsonOrCsv, sendCsv, wantsCsv } from '../../http/csv.ts'
import { errorResponses } from '../../http/errors.ts'
import { keptKeyCreate } from '../../http/kept-key.ts'
import { Ref, sharedSchemas, UuidParams } from '../../http/schemas.ts'
import { CreateRefundRequest, ListRefundsQuery, RefundCursorPage, RefundResponse } from './schemas.ts'
import type { RefundService } from './service.ts'
import { REFUND_CSV_COLUMNS, REFUND_CSV_FIELDS } from './view.ts'

const tags = ['Refunds']

export const refundRoutes: FastifyPluginAsyncTypebox<{ refunds: RefundService }> = sharedSchemas(
  async (app, { refunds }) => {
    const created = keptKeyCreate('refund', '/integration/refunds', refunds.findByIdempotencyKey)
    for (const schema of [CreateRefundRequest, RefundResponse, RefundCursorPage]) app.addSchema(schema)
    app.post(
      '/integration/refunds',
      {
        config: created.config,
        schema: {
          operationId: 'createRefund',
          summary: 'Refund a paid transaction',
          description:
            'Moves money: X-Signature and Idempotency-Key are mandatory. The refund is debited from the available balance (ceil of the amount at the transaction rate); fees are not returned. The sum of pending and succeeded refunds never exceeds the amount.',
          tags,
          security: [{ Signature: [] }],
          headers: created.headers,
          body: CreateRefundRequest,
          response: {
            ...errorResponses(400, 401, 404, 409, 413, 415, 422),
            ...created.responses(
              RefundResponse,
              'The refund (the sandbox provider answers at once). `Location` names it. A retry of a key whose refund was made answers that refund, with `Idempotent-Replayed: true`.',
            ),
          },
        },
      },
      async (request, reply) => {
        const claim = created.claim(request)
        const { refund, replayed } = await refunds.create(authOf(request), request.body, claim)
        return created.send(reply, refund, replayed)
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

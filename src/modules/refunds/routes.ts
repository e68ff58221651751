import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { keptKeyCreate } from '../../http/kept-key.ts'
import { getByUuid, listWithCsv } from '../../http/routes.ts'
import { sharedSchemas } from '../../http/schemas.ts'
import { CreateRefundRequest, ListRefundsQuery, RefundCursorPage, RefundResponse } from './schemas.ts'
import type { RefundService } from './service.ts'
import { REFUND_CSV_COLUMNS } from './view.ts'

const tags = ['Refunds']

export const refundRoutes: FastifyPluginAsyncTypebox<{ refunds: RefundService }> = sharedSchemas(
  [CreateRefundRequest, RefundResponse, RefundCursorPage],
  async (app, { refunds }) => {
    keptKeyCreate(app, '/integration/refunds', {
      operationId: 'createRefund',
      summary: 'Refund a paid transaction',
      description:
        'Moves money: X-Signature and Idempotency-Key are mandatory. The refund is debited from the available balance (ceil of the amount at the transaction rate); fees are not returned. The sum of pending and succeeded refunds never exceeds the amount.',
      tags,
      noun: 'refund',
      body: CreateRefundRequest,
      errors: [400, 401, 404, 409, 413, 415, 422],
      answer: RefundResponse,
      answered:
        'The refund (the sandbox provider answers at once). `Location` names it. A retry of a key whose refund was made answers that refund, with `Idempotent-Replayed: true`.',
      find: refunds.findByIdempotencyKey,
      create: refunds.create,
    })

    listWithCsv(app, '/integration/refunds', {
      operationId: 'listRefunds',
      summary: 'List refunds',
      description:
        'Newest first, with keyset cursor pagination like the transaction list. Repeat the same filters with a cursor.',
      tags,
      querystring: ListRefundsQuery,
      page: RefundCursorPage,
      paged: 'A page of refunds, newest first.',
      csv: { name: 'refunds', columns: REFUND_CSV_COLUMNS },
      list: refunds.list,
      export: refunds.export,
    })

    getByUuid(app, '/integration/refunds/:uuid', {
      operationId: 'getRefund',
      summary: 'Get a refund',
      tags,
      answer: RefundResponse,
      answered: 'The refund.',
      get: refunds.get,
    })
  },
)

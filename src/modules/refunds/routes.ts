import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { AppError, errorResponses } from '../../http/errors.ts'
import { UuidParams } from '../../http/schemas.ts'
import { CreateRefundRequest } from './schemas.ts'
import type { RefundService } from './service.ts'

const tags = ['Refunds']

export const refundRoutes: FastifyPluginAsyncTypebox<{ refunds: RefundService }> = async (
  app,
  { refunds },
) => {
  app.post(
    '/integration/refunds',
    {
      config: { auth: 'signature', idempotency: 'required' },
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
          201: {
            ...Type.Ref('RefundResponse'),
            description: 'The refund (the sandbox provider answers at once).',
          },
          ...errorResponses(400, 401, 404, 409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const owner = request.idempotency?.owner
      if (!owner)
        throw new AppError('idempotency_key_required', 'This operation needs an Idempotency-Key header.')
      const refund = await refunds.create(authOf(request), request.body, owner)
      return reply.code(201).header('location', `/integration/refunds/${refund.uuid}`).send(refund)
    },
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
          200: { ...Type.Ref('RefundResponse'), description: 'The refund.' },
          ...errorResponses(401, 404),
        },
      },
    },
    (request) => refunds.get(authOf(request), request.params.uuid),
  )
}

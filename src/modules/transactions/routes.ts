import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { errorResponse, errorResponses } from '../../http/errors.ts'
import { answers, getByUuid, KEY_OR_SIGNATURE, keyOperation, listWithCsv } from '../../http/routes.ts'
import { Ref, sharedSchemas } from '../../http/schemas.ts'
import {
  CreateTransactionBody,
  CreateTransactionRequest,
  ExternalIdParams,
  H2hTransactionResponse,
  ListTransactionsQuery,
  TransactionCursorPage,
  TransactionResponse,
} from './schemas.ts'
import type { TransactionService } from './service.ts'
import { TRANSACTION_CSV_COLUMNS } from './view.ts'

const tags = ['Transactions']

export const transactionRoutes: FastifyPluginAsyncTypebox<{ transactions: TransactionService }> =
  sharedSchemas(
    [CreateTransactionRequest, TransactionResponse, TransactionCursorPage, H2hTransactionResponse],
    async (app, { transactions }) => {
      app.post(
        '/integration/transactions',
        {
          config: { auth: 'key', idempotency: 'optional' },
          schema: {
            operationId: 'createTransaction',
            summary: 'Create a payment transaction',
            description:
              'Creates a pending payment owned by the authenticated merchant and mode. Fees, FX rate and settlement amount are fixed at creation. An optional Idempotency-Key makes retries safe; without one, a repeated external_id answers 409.',
            tags,
            security: KEY_OR_SIGNATURE,
            headers: Type.Object({
              'idempotency-key': Type.Optional(
                Type.String({
                  description:
                    'Optional: makes retries safe. 1-255 printable ASCII characters; kept 7 days per merchant and mode.',
                  examples: ['order-1001-create'],
                }),
              ),
            }),
            body: CreateTransactionBody,
            response: {
              201: Ref(TransactionResponse, {
                description: 'Created. `Location` names the new transaction.',
                headers: {
                  location: {
                    type: 'string',
                    description: 'The new transaction: /integration/transactions/{uuid}.',
                  },
                },
              }),
              ...errorResponses(400, 401, 409, 413, 415, 422, 503),
              // The transaction was made but its answer could not be stored (the database went away): Location names it.
              503: errorResponse(503, {
                location: {
                  type: 'string',
                  description:
                    'When present, the transaction was made: /integration/transactions/{uuid}. Retry with the same Idempotency-Key.',
                },
              }),
            },
          },
        },
        async (request, reply) => {
          const created = await transactions.create(authOf(request), request.body)
          return reply.code(201).header('location', `/integration/transactions/${created.uuid}`).send(created)
        },
      )

      listWithCsv(app, '/integration/transactions', {
        operationId: 'listTransactions',
        summary: 'List transactions',
        description: 'Newest first, with keyset cursor pagination. Repeat the same filters with a cursor.',
        tags,
        querystring: ListTransactionsQuery,
        page: TransactionCursorPage,
        paged: 'A page of transactions, newest first.',
        csv: { name: 'transactions', columns: TRANSACTION_CSV_COLUMNS },
        list: transactions.list,
        export: transactions.export,
      })

      app.get(
        '/integration/transactions/by-external-id/:externalId',
        keyOperation({
          operationId: 'getTransactionByExternalId',
          summary: 'Get a transaction by your external_id',
          description:
            'Looks the transaction up by the external_id you gave it, within the mode of your key.',
          tags,
          params: ExternalIdParams,
          response: answers(200, TransactionResponse, 'The transaction.', 401, 404),
        }),
        (request) => transactions.getByExternalId(authOf(request), request.params.externalId),
      )

      getByUuid(app, '/integration/transactions/:uuid', {
        operationId: 'getTransaction',
        summary: 'Get a transaction',
        description: 'By its uuid, within the mode of your key. A malformed uuid names nothing: 404.',
        tags,
        answer: TransactionResponse,
        answered: 'The transaction.',
        get: transactions.get,
      })

      getByUuid(app, '/integration/transactions/:uuid/h2h', {
        operationId: 'getTransactionRequisites',
        summary: 'Get the host-to-host requisites of a transaction',
        description: '404 when the payment method has no requisites (card payments use the hosted page).',
        tags,
        answer: H2hTransactionResponse,
        answered: 'Where the customer transfers to.',
        get: transactions.h2h,
      })
    },
  )

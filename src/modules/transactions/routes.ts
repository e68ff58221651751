import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { jsonOrCsv, sendCsv, wantsCsv } from '../../http/csv.ts'
import { errorResponse, errorResponses } from '../../http/errors.ts'
import { Ref, sharedSchemas, UuidParams } from '../../http/schemas.ts'
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
import { TRANSACTION_CSV_COLUMNS, TRANSACTION_CSV_FIELDS } from './view.ts'

const tags = ['Transactions']
const security: Record<string, string[]>[] = [{ ApiKey: [] }, { Signature: [] }]

export const transactionRoutes: FastifyPluginAsyncTypebox<{ transactions: TransactionService }> =
  sharedSchemas(async (app, { transactions }) => {
    for (const schema of [
      CreateTransactionRequest,
      TransactionResponse,
      TransactionCursorPage,
      H2hTransactionResponse,
    ])
      app.addSchema(schema)
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
          security,
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

    app.get(
      '/integration/transactions',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'listTransactions',
          summary: 'List transactions',
          description: 'Newest first, with keyset cursor pagination. Repeat the same filters with a cursor.',
          tags,
          security,
          querystring: ListTransactionsQuery,
          response: {
            200: jsonOrCsv(
              TransactionCursorPage,
              'A page of transactions, newest first.',
              TRANSACTION_CSV_FIELDS,
            ),
            ...errorResponses(401, 422),
          },
        },
      },
      (request, reply) =>
        wantsCsv(request)
          ? sendCsv(
              reply,
              'transactions',
              TRANSACTION_CSV_COLUMNS,
              transactions.export(authOf(request), request.query),
            )
          : transactions.list(authOf(request), request.query),
    )

    app.get(
      '/integration/transactions/by-external-id/:externalId',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'getTransactionByExternalId',
          summary: 'Get a transaction by your external_id',
          description:
            'Looks the transaction up by the external_id you gave it, within the mode of your key.',
          tags,
          security,
          params: ExternalIdParams,
          response: {
            200: Ref(TransactionResponse, { description: 'The transaction.' }),
            ...errorResponses(401, 404),
          },
        },
      },
      (request) => transactions.getByExternalId(authOf(request), request.params.externalId),
    )

    app.get(
      '/integration/transactions/:uuid',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'getTransaction',
          summary: 'Get a transaction',
          description: 'By its uuid, within the mode of your key. A malformed uuid names nothing: 404.',
          tags,
          security,
          params: UuidParams,
          response: {
            200: Ref(TransactionResponse, { description: 'The transaction.' }),
            ...errorResponses(401, 404),
          },
        },
      },
      (request) => transactions.get(authOf(request), request.params.uuid),
    )

    app.get(
      '/integration/transactions/:uuid/h2h',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'getTransactionRequisites',
          summary: 'Get the host-to-host requisites of a transaction',
          description: '404 when the payment method has no requisites (card payments use the hosted page).',
          tags,
          security,
          params: UuidParams,
          response: {
            200: Ref(H2hTransactionResponse, { description: 'Where the customer transfers to.' }),
            ...errorResponses(401, 404),
          },
        },
      },
      (request) => transactions.h2h(authOf(request), request.params.uuid),
    )
  })

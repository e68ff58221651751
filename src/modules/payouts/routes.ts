import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { authOf } from '../../http/auth.ts'
import { jsonOrCsv, sendCsv, wantsCsv } from '../../http/csv.ts'
import { errorResponses } from '../../http/errors.ts'
import { keptKeyCreate } from '../../http/kept-key.ts'
import { Ref, sharedSchemas, UuidParams } from '../../http/schemas.ts'
import {
  CreatePayoutRequest,
  ListPayoutsQuery,
  PayoutCursorPage,
  PayoutQuoteQuery,
  PayoutQuoteResponse,
  PayoutResponse,
} from './schemas.ts'
import type { PayoutService } from './service.ts'
import { PAYOUT_CSV_COLUMNS, PAYOUT_CSV_FIELDS } from './view.ts'

const tags = ['Payouts']
const security: Record<string, string[]>[] = [{ ApiKey: [] }, { Signature: [] }]

export const payoutRoutes: FastifyPluginAsyncTypebox<{ payouts: PayoutService }> = sharedSchemas(
  async (app, { payouts }) => {
    const created = keptKeyCreate('payout', '/integration/payouts', payouts.findByIdempotencyKey)
    for (const schema of [CreatePayoutRequest, PayoutQuoteResponse, PayoutResponse, PayoutCursorPage])
      app.addSchema(schema)
    app.get(
      '/integration/payouts/quote',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'quotePayout',
          summary: 'Quote a payout: USDT amount, fee and total',
          description:
            'amount_usdt_micro = ceil(amount in major units / your payout rate); fee = round_half_up(amount_usdt_micro × payout_fee_bps / 10000) + payout_fixed_fee_micro; the total is their sum. The figures hold for 60 s: pass quote_id when creating the payout.',
          tags,
          security,
          querystring: PayoutQuoteQuery,
          response: {
            200: Ref(PayoutQuoteResponse, { description: 'The quote.' }),
            ...errorResponses(401, 422, 503),
          },
        },
      },
      (request) => payouts.quote(authOf(request), request.query),
    )

    app.post(
      '/integration/payouts',
      {
        config: created.config,
        schema: {
          operationId: 'createPayout',
          summary: 'Pay out USDT to a wallet, or to a card',
          description:
            'Moves money: X-Signature and Idempotency-Key are mandatory. The total (amount in USDT plus the fee) is reserved from the available USDT balance at once, then the payout is handed to the provider. Card numbers are Luhn-checked and kept only masked.',
          tags,
          security: [{ Signature: [] }],
          headers: created.headers,
          body: CreatePayoutRequest,
          response: {
            ...errorResponses(400, 401, 409, 413, 415, 422, 503),
            ...created.responses(
              PayoutResponse,
              'The payout, as the provider left it (usually processing). `Location` names it. A retry of a key whose payout was made answers that payout as it stands, with `Idempotent-Replayed: true`.',
            ),
          },
        },
      },
      async (request, reply) => {
        const claim = created.claim(request)
        const { payout, replayed } = await payouts.create(authOf(request), request.body, claim)
        return created.send(reply, payout, replayed)
      },
    )

    app.get(
      '/integration/payouts',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'listPayouts',
          summary: 'List payouts',
          description: 'Newest first, with keyset cursor pagination. Repeat the same filters with a cursor.',
          tags,
          security,
          querystring: ListPayoutsQuery,
          response: {
            200: jsonOrCsv(PayoutCursorPage, 'A page of payouts, newest first.', PAYOUT_CSV_FIELDS),
            ...errorResponses(401, 422),
          },
        },
      },
      (request, reply) =>
        wantsCsv(request)
          ? sendCsv(reply, 'payouts', PAYOUT_CSV_COLUMNS, payouts.export(authOf(request), request.query))
          : payouts.list(authOf(request), request.query),
    )

    app.get(
      '/integration/payouts/:uuid',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'getPayout',
          summary: 'Get a payout',
          tags,
          security,
          params: UuidParams,
          response: {
            200: Ref(PayoutResponse, { description: 'The payout.' }),
            ...errorResponses(401, 404),
          },
        },
      },
      (request) => payouts.get(authOf(request), request.params.uuid),
    )
  },
)

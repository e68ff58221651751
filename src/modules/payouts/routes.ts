import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { authOf } from '../../http/auth.ts'
import { keptKeyCreate } from '../../http/kept-key.ts'
import { answers, getByUuid, keyOperation, listWithCsv } from '../../http/routes.ts'
import { sharedSchemas } from '../../http/schemas.ts'
import {
  CreatePayoutRequest,
  ListPayoutsQuery,
  PayoutCursorPage,
  PayoutQuoteQuery,
  PayoutQuoteResponse,
  PayoutResponse,
} from './schemas.ts'
import type { PayoutService } from './service.ts'
import { PAYOUT_CSV_COLUMNS } from './view.ts'

const tags = ['Payouts']

export const payoutRoutes: FastifyPluginAsyncTypebox<{ payouts: PayoutService }> = sharedSchemas(
  [CreatePayoutRequest, PayoutQuoteResponse, PayoutResponse, PayoutCursorPage],
  async (app, { payouts }) => {
    app.get(
      '/integration/payouts/quote',
      keyOperation({
        operationId: 'quotePayout',
        summary: 'Quote a payout: USDT amount, fee and total',
        description:
          'amount_usdt_micro = ceil(amount in major units / your payout rate); fee = round_half_up(amount_usdt_micro × payout_fee_bps / 10000) + payout_fixed_fee_micro; the total is their sum. The figures hold for 60 s: pass quote_id when creating the payout.',
        tags,
        querystring: PayoutQuoteQuery,
        response: answers(200, PayoutQuoteResponse, 'The quote.', 401, 422, 503),
      }),
      (request) => payouts.quote(authOf(request), request.query),
    )

    keptKeyCreate(app, '/integration/payouts', {
      operationId: 'createPayout',
      summary: 'Pay out USDT to a wallet, or to a card',
      description:
        'Moves money: X-Signature and Idempotency-Key are mandatory. The total (amount in USDT plus the fee) is reserved from the available USDT balance at once, then the payout is handed to the provider. Card numbers are Luhn-checked and kept only masked.',
      tags,
      noun: 'payout',
      body: CreatePayoutRequest,
      errors: [400, 401, 409, 413, 415, 422, 503],
      answer: PayoutResponse,
      answered:
        'The payout, as the provider left it (usually processing). `Location` names it. A retry of a key whose payout was made answers that payout as it stands, with `Idempotent-Replayed: true`.',
      find: payouts.findByIdempotencyKey,
      create: payouts.create,
    })

    listWithCsv(app, '/integration/payouts', {
      operationId: 'listPayouts',
      summary: 'List payouts',
      description: 'Newest first, with keyset cursor pagination. Repeat the same filters with a cursor.',
      tags,
      querystring: ListPayoutsQuery,
      page: PayoutCursorPage,
      paged: 'A page of payouts, newest first.',
      csv: { name: 'payouts', columns: PAYOUT_CSV_COLUMNS },
      list: payouts.list,
      export: payouts.export,
    })

    getByUuid(app, '/integration/payouts/:uuid', {
      operationId: 'getPayout',
      summary: 'Get a payout',
      tags,
      answer: PayoutResponse,
      answered: 'The payout.',
      get: payouts.get,
    })
  },
)

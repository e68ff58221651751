import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { answers } from '../../http/routes.ts'
import { sharedSchemas, Timestamp } from '../../http/schemas.ts'
import type { RateService } from './service.ts'

export const RatesResponse = Type.Object(
  {
    settlement_currency: Type.String({ examples: ['USDT'] }),
    data: Type.Array(
      Type.Object({
        currency: Type.String({ examples: ['RUB'] }),
        pay_in_rate: Type.String({
          description: 'Units of the currency per 1 unit of the settlement currency, markup included.',
          examples: ['93.53225'],
        }),
        payout_rate: Type.String({ examples: ['90.76775'] }),
        updated_at: Timestamp('When the market rate was set.'),
      }),
    ),
    updated_at: Timestamp('The newest of the rates.'),
  },
  { $id: 'RatesResponse' },
)

export const rateRoutes: FastifyPluginAsyncTypebox<{ rates: RateService }> = sharedSchemas(
  [RatesResponse],
  async (app, { rates }) => {
    app.get(
      '/integration/rates',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'listRates',
          summary: "The merchant's FX rates",
          description:
            'Market rates with the merchant markup applied: pay_in_rate = market × (1 + markup), payout_rate = market × (1 − markup). Rates older than FX_MAX_AGE are left out: operations that need them answer 503 fx_rate_unavailable.',
          tags: ['Rates'],
          security: [{ ApiKey: [] }, { Signature: [] }],
          response: answers(200, RatesResponse, 'The rates.', 401),
        },
      },
      (request) => rates.ratesView(authOf(request).merchant),
    )
  },
)

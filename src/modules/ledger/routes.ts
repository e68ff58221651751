import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { errorResponses } from '../../http/errors.ts'
import { Ref, sharedSchemas, Timestamp } from '../../http/schemas.ts'
import type { LedgerService } from './service.ts'

export const MerchantBalance = Type.Object(
  {
    currency: Type.String({ examples: ['USDT'] }),
    available: Type.Integer({ description: 'Can be refunded from or paid out, minor units.' }),
    pending: Type.Integer({ description: 'Paid, waiting for its hold to end.' }),
    reserved: Type.Integer({ description: 'Held for payouts in progress.' }),
    total: Type.Integer({ description: 'available + pending + reserved.' }),
    updated_at: Timestamp(),
  },
  { $id: 'MerchantBalance' },
)

export const IntegrationBalancesResponse = Type.Object(
  { data: Type.Array(Type.Ref('MerchantBalance')) },
  { $id: 'IntegrationBalancesResponse' },
)

export const balanceRoutes: FastifyPluginAsyncTypebox<{ ledger: LedgerService }> = sharedSchemas(
  async (app, { ledger }) => {
    for (const schema of [MerchantBalance, IntegrationBalancesResponse]) app.addSchema(schema)
    app.get(
      '/integration/balances',
      {
        config: { auth: 'key' },
        schema: {
          operationId: 'listBalances',
          summary: "The merchant's balances",
          description:
            'Per currency, in the mode of the key, derived from the double-entry ledger. The settlement currency is always listed.',
          tags: ['Balances'],
          security: [{ ApiKey: [] }, { Signature: [] }],
          response: {
            200: Ref(IntegrationBalancesResponse, { description: 'The balances.' }),
            ...errorResponses(401),
          },
        },
      },
      (request) => {
        const { merchant, mode } = authOf(request)
        return ledger.balancesView(merchant, mode)
      },
    )
  },
)

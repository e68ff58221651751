import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { jsonOrCsv, sendCsv, wantsCsv } from '../../http/csv.ts'
import { errorResponses } from '../../http/errors.ts'
import { answers, getByUuid, keyOperation, listWithCsv } from '../../http/routes.ts'
import { sharedSchemas, Timestamp } from '../../http/schemas.ts'
import { oneBatch } from '../../lib/lists.ts'
import { BALANCE_TRANSACTION_CSV_COLUMNS } from './balance-transactions.ts'
import {
  BalanceSummaryQuery,
  BalanceSummaryResponse,
  BalanceSummaryRow,
  BalanceTransactionCursorPage,
  BalanceTransactionResponse,
  ListBalanceTransactionsQuery,
} from './schemas.ts'
import type { LedgerService } from './service.ts'
import { BALANCE_SUMMARY_CSV_COLUMNS, summaryCsvRows } from './summary.ts'

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

const tags = ['Balances']

export const balanceRoutes: FastifyPluginAsyncTypebox<{ ledger: LedgerService }> = sharedSchemas(
  [
    MerchantBalance,
    IntegrationBalancesResponse,
    BalanceTransactionResponse,
    BalanceTransactionCursorPage,
    BalanceSummaryRow,
    BalanceSummaryResponse,
  ],
  async (app, { ledger }) => {
    app.get(
      '/integration/balances',
      keyOperation({
        operationId: 'listBalances',
        summary: "The merchant's balances",
        description:
          'Per currency, in the mode of the key, derived from the double-entry ledger. The settlement currency is always listed.',
        tags,
        response: answers(200, IntegrationBalancesResponse, 'The balances.', 401),
      }),
      (request) => {
        const { merchant, mode } = authOf(request)
        return ledger.balancesView(merchant, mode)
      },
    )

    app.get(
      '/integration/balances/summary',
      keyOperation({
        operationId: 'getBalanceSummary',
        summary: "The merchant's balances over a period",
        description:
          'Per currency, in the mode of the key: the opening balance, what the period’s balance transactions moved by kind (payments, fees, refunds, payouts, transfers between your own balances, adjustments), and the closing balance, which is always the opening balance plus the period’s balance transactions. With `Accept: text/csv`, the same rows as CSV.',
        tags,
        querystring: BalanceSummaryQuery,
        response: {
          200: jsonOrCsv(
            BalanceSummaryResponse,
            'The summary.',
            BALANCE_SUMMARY_CSV_COLUMNS.map((column) => column.header),
          ),
          ...errorResponses(401, 422),
        },
      }),
      async (request, reply) => {
        const summary = await ledger.summary(authOf(request), request.query)
        return wantsCsv(request)
          ? sendCsv(reply, 'balance-summary', BALANCE_SUMMARY_CSV_COLUMNS, oneBatch(summaryCsvRows(summary)))
          : summary
      },
    )

    listWithCsv(app, '/integration/balance-transactions', {
      operationId: 'listBalanceTransactions',
      summary: "List the movements of the merchant's balances",
      description:
        'One item per ledger movement of your available, pending and reserved balances in the mode of the key, newest first, with keyset cursor pagination (repeat the same filters with a cursor). Summed per currency and balance, they give GET /integration/balances.',
      tags,
      querystring: ListBalanceTransactionsQuery,
      page: BalanceTransactionCursorPage,
      paged: 'A page of balance transactions, newest first.',
      csv: { name: 'balance-transactions', columns: BALANCE_TRANSACTION_CSV_COLUMNS },
      list: ledger.listBalanceTransactions,
      export: ledger.exportBalanceTransactions,
    })

    getByUuid(app, '/integration/balance-transactions/:uuid', {
      operationId: 'getBalanceTransaction',
      summary: 'Get a balance transaction',
      description: 'By its uuid, within the mode of your key. A malformed uuid names nothing: 404.',
      tags,
      answer: BalanceTransactionResponse,
      answered: 'The balance transaction.',
      get: ledger.getBalanceTransaction,
    })
  },
)

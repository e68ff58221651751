import { type Static, Type } from 'typebox'
import {
  BALANCE_TRANSACTION_TYPES,
  BalanceSchema,
  BalanceTransactionTypeSchema,
  JournalReferenceTypeSchema,
} from '../../db/enums.ts'
import {
  CreatedRangeQuery,
  CurrencyFilter,
  CursorPage,
  ListQuery,
  OneOrSeveral,
} from '../../http/pagination.ts'
import { Timestamp, Uuid } from '../../http/schemas.ts'

export const BalanceTransactionResponse = Type.Object(
  {
    uuid: Uuid('The movement: one line of the ledger.'),
    type: {
      ...BalanceTransactionTypeSchema,
      description:
        'What moved the balance: `payment` (a paid transaction credits pending), `settlement` (its hold ended: pending to available), `refund`, `refund_reversal` (a failed refund gives its debit back), `payout_reserve` (available to reserved), `payout` (the reserved amount, fee included, leaves), `payout_release` (a failed payout: reserved back to available), `adjustment` (any other ledger movement).',
      examples: ['payment'],
    },
    amount: Type.Integer({
      description:
        'Signed, in minor units of `currency` (USDT in micro units, as GET /integration/balances): positive adds to the balance, negative takes from it.',
      examples: [100000000],
    }),
    currency: Type.String({ description: 'The balance currency.', examples: ['USDT'] }),
    balance: {
      ...BalanceSchema,
      description: 'Which of the merchant’s balances moved (GET /integration/balances).',
      examples: ['pending'],
    },
    source: Type.Object(
      {
        type: { ...JournalReferenceTypeSchema, examples: ['transaction'] },
        uuid: Uuid('The transaction, refund or payout.'),
      },
      { description: 'What caused the movement.', additionalProperties: false },
    ),
    created_at: Timestamp('When it moved.'),
  },
  { $id: 'BalanceTransactionResponse', additionalProperties: false },
)

export const BalanceTransactionCursorPage = CursorPage(
  'BalanceTransactionCursorPage',
  'BalanceTransactionResponse',
)

export const ListBalanceTransactionsQuery = ListQuery({
  type: OneOrSeveral(BALANCE_TRANSACTION_TYPES, {
    description: `One type, or several comma-separated: ${BALANCE_TRANSACTION_TYPES.join(', ')}.`,
    examples: ['payment,settlement'],
  }),
  currency: CurrencyFilter('USDT'),
  source_uuid: Type.Optional(
    Type.String({
      pattern: '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$',
      description: 'Only the movements caused by this transaction, refund or payout (its uuid).',
      examples: ['01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10'],
    }),
  ),
  ...CreatedRangeQuery,
})

export type BalanceTransactionView = Static<typeof BalanceTransactionResponse>
export type ListBalanceTransactionsInput = Static<typeof ListBalanceTransactionsQuery>

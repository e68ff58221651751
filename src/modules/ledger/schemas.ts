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
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts'

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

export const BalanceSummaryQuery = Type.Object(
  {
    from: Type.Optional(
      Type.String({
        description:
          'The first moment of the period: YYYY-MM-DD (UTC, from its start) or a date-time; inclusive. Without it, the period starts with the first movement (opening balance 0).',
        examples: ['2026-11-01'],
      }),
    ),
    to: Type.Optional(
      Type.String({
        description:
          'The last moment of the period: YYYY-MM-DD (UTC, the whole day) or a date-time; inclusive. Without it, now.',
        examples: ['2026-11-30'],
      }),
    ),
  },
  { additionalProperties: false },
)

const figure = (description: string, example: number) =>
  Type.Integer({
    description: `${description} Minor units, signed as balance transactions are.`,
    examples: [example],
  })

export const BalanceSummaryRow = Type.Object(
  {
    currency: Type.String({ examples: ['USDT'] }),
    opening_balance: figure(
      'The total balance (available + pending + reserved) just before `from`.',
      1000000,
    ),
    payments: figure('What paid transactions credited (`payment`): net of their fees.', 5000000),
    fees: figure('The payout fees the gateway took (negative).', -20000),
    refunds: figure(
      'Refunds debited (`refund`), less failed refunds given back (`refund_reversal`).',
      -300000,
    ),
    payouts: figure(
      'What completed payouts paid out, their fees not included (`payout` less the fees).',
      -1000000,
    ),
    transfers: figure(
      'Moves between the merchant’s own balances (`settlement`, `payout_reserve`, `payout_release`): 0 on the total.',
      0,
    ),
    adjustments: figure('Any other movement (`adjustment`).', 0),
    closing_balance: figure(
      'The total balance at the end of `to`: opening_balance + payments + fees + refunds + payouts + transfers + adjustments.',
      4680000,
    ),
    balance_transactions: Type.Integer({
      description: 'How many balance transactions of this currency the period had.',
      examples: [12],
    }),
  },
  { $id: 'BalanceSummaryRow', additionalProperties: false },
)

export const BalanceSummaryResponse = Type.Object(
  {
    from: Nullable(Timestamp('The start of the period; null when none was given.')),
    to: Timestamp('The end of the period.'),
    data: Type.Array(Type.Ref('BalanceSummaryRow'), {
      description:
        'One row per currency that had a movement up to `to`, and the settlement currency, by currency.',
    }),
  },
  { $id: 'BalanceSummaryResponse', additionalProperties: false },
)

export type BalanceSummaryInput = Static<typeof BalanceSummaryQuery>
export type BalanceSummaryRowView = Static<typeof BalanceSummaryRow>
export type BalanceTransactionView = Static<typeof BalanceTransactionResponse>
export type ListBalanceTransactionsInput = Static<typeof ListBalanceTransactionsQuery>

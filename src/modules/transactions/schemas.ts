import { type Static, type TSchemaOptions, Type } from 'typebox'
import {
  FEE_PAYERS,
  ModeSchema,
  PAYMENT_METHODS,
  TRANSACTION_STATUSES,
  TransactionStatusSchema,
} from '../../db/enums.ts'
import { CurrencyFilter, CursorPage, DateRangeQuery, ListQuery, OneOrSeveral } from '../../http/pagination.ts'
import {
  CallbackUrl,
  HttpUrl,
  Metadata,
  NO_NUL_PATTERN,
  Nullable,
  StringMap,
  Timestamp,
  Uuid,
} from '../../http/schemas.ts'
import { LiteralUnion } from '../../lib/schema.ts'

export { PAYMENT_METHODS, TRANSACTION_STATUSES }
/** One of PAYMENT_METHODS, as a literal union. */
export const PaymentMethod = (options: TSchemaOptions = {}) => LiteralUnion(PAYMENT_METHODS, options)
export const MAX_AMOUNT = 100_000_000_000

export const EXTERNAL_ID_PATTERN = '^[A-Za-z0-9._:-]{1,64}$'

/** The merchant's own identifier of what it creates (a payment, a payout), unique per merchant and mode. */
export const ExternalId = (example: string) =>
  Type.String({
    pattern: EXTERNAL_ID_PATTERN,
    description: 'Your own identifier, unique per merchant and mode: 1-64 of A-Z a-z 0-9 . _ : -',
    examples: [example],
  })

const createTransactionFields = {
  amount: Type.Integer({
    minimum: 1,
    maximum: MAX_AMOUNT,
    description: 'Amount to charge, in minor units of `currency`.',
    examples: [150000],
  }),
  currency: Type.String({
    minLength: 1,
    maxLength: 8,
    description: 'ISO 4217 code (or USDT) with a current rate.',
    examples: ['RUB'],
  }),
  external_id: ExternalId('order-1001'),
  description: Type.Optional(
    Nullable(Type.String({ maxLength: 500, pattern: NO_NUL_PATTERN, examples: ['Order #1001'] })),
  ),
  metadata: Type.Optional(Nullable(Metadata)),
  callback_url: CallbackUrl('transaction'),
  success_url: Type.Optional(Nullable(HttpUrl('Where the hosted page sends the customer after payment.'))),
  fail_url: Type.Optional(Nullable(HttpUrl('Where the hosted page sends the customer after a failure.'))),
}

const PAYMENT_METHOD_DESCRIPTION =
  '`card` (hosted page), `p2p_card` or `bank_transfer` (host-to-host requisites), `usdt_erc20` (a USDT deposit address on an EVM chain, in USDT).'

/** What a merchant sends, as the document names it: `payment_method` is one of PAYMENT_METHODS. */
export const CreateTransactionRequest = Type.Object(
  {
    ...createTransactionFields,
    payment_method: PaymentMethod({ description: PAYMENT_METHOD_DESCRIPTION, examples: ['card'] }),
  },
  { $id: 'CreateTransactionRequest', additionalProperties: false },
)

/**
 * What the create operation validates: the same fields, but any `payment_method` string, so that another method
 * is answered `422 unsupported_payment_method` with the supported list (docs/API.md, Errors) rather than as a malformed
 * field. The document shows CreateTransactionRequest.
 */
export const CreateTransactionBody = Type.Object(
  {
    ...createTransactionFields,
    payment_method: Type.String({
      minLength: 1,
      maxLength: 32,
      description: PAYMENT_METHOD_DESCRIPTION,
      examples: ['card'],
    }),
  },
  { $id: 'CreateTransactionRequest', additionalProperties: false },
)

export const TransactionResponse = Type.Object(
  {
    uuid: Uuid(),
    type: Type.Literal('payment'),
    mode: { ...ModeSchema, description: 'The mode of the key that created it.' },
    amount: Type.Integer({ description: 'Requested amount, minor units.' }),
    gross_amount: Type.Integer({
      description: 'What the customer pays: amount plus the customer part of the fee.',
    }),
    net_amount: Type.Integer({ description: 'gross_amount minus the whole fee.' }),
    fee_amount: Type.Integer(),
    fee_payer: LiteralUnion(FEE_PAYERS),
    merchant_fee_share_bps: Type.Integer({ minimum: 0, maximum: 10000 }),
    merchant_fee_merchant_amount: Type.Integer(),
    merchant_fee_customer_amount: Type.Integer(),
    currency: Type.String(),
    settlement_currency: Type.String(),
    settlement_amount: Type.Integer({ description: 'Minor units of the settlement currency.' }),
    settlement_amount_formatted: Type.String({ examples: ['54.259360 USDT'] }),
    fx_rate: Type.String({
      description: 'Units of `currency` per 1 unit of the settlement currency.',
      examples: ['92.15'],
    }),
    fx_rate_updated_at: Timestamp(),
    payment_method: PaymentMethod(),
    status: TransactionStatusSchema,
    external_id: Type.String(),
    description: Nullable(Type.String()),
    metadata: Nullable(StringMap('Your key/value pairs.')),
    callback_url: Nullable(Type.String()),
    success_url: Nullable(Type.String()),
    fail_url: Nullable(Type.String()),
    payment_url: Type.String({ format: 'uri', description: 'The hosted payment page.' }),
    h2h_url: Nullable(
      Type.String({ format: 'uri', description: 'Where to read the host-to-host requisites.' }),
    ),
    requisites: Nullable(StringMap('Where the customer transfers to (host-to-host methods).')),
    expires_at: Timestamp(),
    paid_at: Nullable(Timestamp()),
    settle_available_at: Nullable(Timestamp()),
    amount_received: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'For a payment to a deposit address (`usdt_erc20`): what it received in all, in minor units, counted once confirmed. Less than `amount` on an under-payment, more on an over-payment.',
      }),
    ),
    aggregate_version: Type.Integer({
      minimum: 1,
      description: 'Grows by one with every applied status change.',
    }),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'TransactionResponse', additionalProperties: false },
)

export const TransactionCursorPage = CursorPage('TransactionCursorPage', 'TransactionResponse')

export const H2hTransactionResponse = Type.Object(
  {
    uuid: Uuid(),
    status: TransactionStatusSchema,
    amount: Type.Integer(),
    gross_amount: Type.Integer(),
    currency: Type.String(),
    payment_method: PaymentMethod(),
    requisites: StringMap('Where the customer transfers to.'),
    expires_at: Timestamp(),
  },
  { $id: 'H2hTransactionResponse' },
)

export const ListTransactionsQuery = ListQuery({
  status: OneOrSeveral(TRANSACTION_STATUSES, {
    description: 'One status, or several comma-separated.',
    examples: ['paid,partially_refunded'],
  }),
  payment_method: Type.Optional(
    Type.String({
      enum: [...PAYMENT_METHODS],
      description: 'Only this payment method.',
      examples: ['card'],
    }),
  ),
  currency: CurrencyFilter('RUB'),
  ...DateRangeQuery,
  search: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: NO_NUL_PATTERN,
      description:
        'Case-insensitive: equals the uuid, is a prefix of external_id, or a substring of description.',
      examples: ['order-10'],
    }),
  ),
})

// Like a malformed uuid, an external_id that could never have been accepted simply names nothing: 404.
export const ExternalIdParams = Type.Object(
  {
    externalId: Type.String({
      minLength: 1,
      description: 'The external_id you gave the transaction.',
      examples: ['order-1001'],
    }),
  },
  { additionalProperties: false },
)

export type TransactionView = Static<typeof TransactionResponse>
export type CreateTransactionInput = Static<typeof CreateTransactionBody>
export type ListTransactionsInput = Static<typeof ListTransactionsQuery>

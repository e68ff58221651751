import { type Static, Type } from 'typebox'
import { ModeSchema, PAYOUT_METHODS, PAYOUT_STATUSES, PayoutStatusSchema } from '../../db/enums.ts'
import { CursorPage, ListQuery, OneOrSeveral } from '../../http/pagination.ts'
import {
  CallbackUrl,
  Metadata,
  Nullable,
  StringMap,
  StringPairs,
  Timestamp,
  Uuid,
} from '../../http/schemas.ts'
import { LiteralUnion } from '../../lib/schema.ts'
import { ExternalId, MAX_AMOUNT } from '../transactions/schemas.ts'

export { PAYOUT_METHODS, PAYOUT_STATUSES }
export const WALLET_NETWORKS = ['TRC20', 'ERC20'] as const

const Amount = Type.Integer({
  minimum: 1,
  maximum: MAX_AMOUNT,
  description: 'Amount to pay out, in minor units of `currency`.',
  examples: [10000],
})
const Currency = Type.String({
  pattern: '^[A-Za-z0-9]{1,8}$',
  description: 'ISO 4217 code (or USDT) with a current rate.',
  examples: ['USD'],
})
// Request values keep `enum` (their validation message lists the allowed values); responses use literal unions.
const Method = Type.String({
  enum: [...PAYOUT_METHODS],
  description: '`usdt_wallet` (USDT to a TRC20 or ERC20 address) or `card`.',
  examples: ['usdt_wallet'],
})

export const PayoutQuoteQuery = Type.Object(
  { amount: Amount, currency: Currency, method: Method },
  { additionalProperties: false },
)

export const PayoutQuoteResponse = Type.Object(
  {
    quote_id: Uuid('Pass it as `quote_id` within 60 s to pay out at these figures.'),
    amount: Type.Integer(),
    currency: Type.String(),
    method: LiteralUnion(PAYOUT_METHODS),
    fx_rate: Type.String({
      description: 'Your payout rate: units of `currency` per 1 USDT.',
      examples: ['1'],
    }),
    amount_usdt_micro: Type.Integer({ description: 'ceil(amount in major units / fx_rate), USDT micro.' }),
    fee_usdt_micro: Type.Integer({
      description: 'round_half_up(amount_usdt_micro × payout_fee_bps / 10000) + payout_fixed_fee_micro.',
    }),
    payout_usdt_amount_micro: Type.Integer({
      description: 'amount_usdt_micro + fee_usdt_micro: the total debited.',
    }),
    expires_at: Timestamp('The figures hold until then (60 s).'),
  },
  { $id: 'PayoutQuoteResponse', additionalProperties: false },
)

export const CreatePayoutRequest = Type.Object(
  {
    external_id: ExternalId('payout-1001'),
    amount: Amount,
    currency: Currency,
    method: Method,
    destination: StringPairs(10, 200, {
      description:
        'For `usdt_wallet`: `address` and `network` (TRC20 or ERC20). For `card`: `card_number` (Luhn-checked, kept only masked) and `holder_name`.',
      examples: [{ address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' }],
    }),
    quote_id: Type.Optional(
      Nullable(Uuid('A quote of the last 60 s for the same amount, currency and method.')),
    ),
    metadata: Type.Optional(Nullable(Metadata)),
    callback_url: CallbackUrl('payout'),
  },
  { $id: 'CreatePayoutRequest', additionalProperties: false },
)

export const PayoutResponse = Type.Object(
  {
    uuid: Uuid(),
    merchant_uuid: Uuid(),
    mode: ModeSchema,
    external_id: Type.String(),
    amount: Type.Integer({ description: 'Minor units of `currency`.' }),
    currency: Type.String(),
    method: LiteralUnion(PAYOUT_METHODS),
    status: PayoutStatusSchema,
    destination: StringMap('Where the money goes; a card number only ever masked.'),
    metadata: Nullable(StringMap('Your key/value pairs.')),
    callback_url: Nullable(Type.String()),
    failure_reason: Nullable(Type.String()),
    payout_usdt_amount_micro: Type.Integer({ description: 'The total taken from your USDT balance.' }),
    quote_id: Nullable(Uuid('The quote whose figures were used.')),
    fx: StringMap(
      'The figures, as strings: fx_rate, fx_rate_updated_at, amount_usdt_micro, fee_usdt_micro, payout_usdt_amount_micro.',
    ),
    wallet: Nullable(
      Type.Object(
        {
          uuid: Uuid(),
          type: LiteralUnion(WALLET_NETWORKS),
          address: Type.String(),
          label: Type.String({ examples: ['USDT TRC20'] }),
          transaction_hash: Type.Optional(
            Type.String({
              description:
                'The hash of the transaction that pays it, once the gateway has broadcast one (a payout it pays itself on the chain); after a replacement, the one mined.',
              examples: ['0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060'],
            }),
          ),
        },
        { description: 'The destination wallet (usdt_wallet payouts).' },
      ),
    ),
    card_payout: Nullable(
      StringMap('The destination card (card payouts): card_number masked, holder_name, brand, last4.'),
    ),
    aggregate_version: Type.Integer({ minimum: 1, description: 'Grows by one with every status change.' }),
    completed_at: Nullable(Timestamp()),
    failed_at: Nullable(Timestamp()),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'PayoutResponse', additionalProperties: false },
)

export const PayoutCursorPage = CursorPage('PayoutCursorPage', 'PayoutResponse')

export const ListPayoutsQuery = ListQuery({
  status: OneOrSeveral(PAYOUT_STATUSES, {
    description: 'One status, or several comma-separated.',
    examples: ['completed,failed'],
  }),
  method: Type.Optional(Type.String({ enum: [...PAYOUT_METHODS], description: 'Only this method.' })),
  currency: Type.Optional(Currency),
})

export type PayoutQuoteInput = Static<typeof PayoutQuoteQuery>
export type PayoutQuoteView = Static<typeof PayoutQuoteResponse>
export type CreatePayoutInput = Static<typeof CreatePayoutRequest>
export type PayoutView = Static<typeof PayoutResponse>
export type ListPayoutsInput = Static<typeof ListPayoutsQuery>

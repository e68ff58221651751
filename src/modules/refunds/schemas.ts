import { type Static, Type } from 'typebox'
import { REFUND_STATUSES, RefundStatusSchema } from '../../db/enums.ts'
import { CurrencyFilter, CursorPage, DateRangeQuery, ListQuery, OneOrSeveral } from '../../http/pagination.ts'
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts'
import { MAX_AMOUNT } from '../transactions/schemas.ts'

export const CreateRefundRequest = Type.Object(
  {
    transaction_uuid: Uuid('The paid transaction to refund.'),
    amount_minor: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_AMOUNT,
        description: 'Minor units of the transaction currency; default: all that remains.',
        examples: [50000],
      }),
    ),
    reason: Type.Optional(
      Nullable(
        Type.String({ maxLength: 500, pattern: '^[^\\u0000]*$', examples: ['Customer returned the goods'] }),
      ),
    ),
  },
  { $id: 'CreateRefundRequest', additionalProperties: false },
)

export const RefundResponse = Type.Object(
  {
    uuid: Uuid(),
    transaction_uuid: Uuid(),
    amount_minor: Type.Integer(),
    currency: Type.String(),
    status: RefundStatusSchema,
    cumulative_refunded_minor: Type.Integer({
      description: 'Pending and succeeded refunds of the transaction, this one included.',
    }),
    transaction_amount_minor: Type.Integer({ description: "The refunded payment's amount." }),
    transaction_external_id: Type.String({
      description: "The refunded payment's `external_id`: the merchant's own reference of it.",
      examples: ['order-1042'],
    }),
    reason: Nullable(Type.String()),
    succeeded_at: Nullable(Timestamp()),
    failed_at: Nullable(Timestamp()),
    created_at: Timestamp(),
    action_request_id: Uuid('The idempotent request that created the refund.'),
    message: Type.String({ examples: ['Refund accepted by the sandbox provider.'] }),
  },
  { $id: 'RefundResponse' },
)

export const RefundCursorPage = CursorPage('RefundCursorPage', 'RefundResponse')

export const ListRefundsQuery = ListQuery({
  status: OneOrSeveral(REFUND_STATUSES, {
    description: 'One status, or several comma-separated.',
    examples: ['succeeded'],
  }),
  transaction_uuid: Type.Optional(Uuid('Only the refunds of this transaction.')),
  currency: CurrencyFilter('RUB'),
  ...DateRangeQuery,
})

export type ListRefundsInput = Static<typeof ListRefundsQuery>
export type CreateRefundInput = Static<typeof CreateRefundRequest>
export type RefundView = Static<typeof RefundResponse>

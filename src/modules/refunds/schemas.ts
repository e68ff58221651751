import { type Static, Type } from 'typebox'
import { REFUND_STATUSES, RefundStatusSchema } from '../../db/enums.ts'
import { DateRangeQuery, PaginationQuery } from '../../http/pagination.ts'
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
    transaction_amount_minor: Type.Integer(),
    reason: Nullable(Type.String()),
    succeeded_at: Nullable(Timestamp()),
    failed_at: Nullable(Timestamp()),
    created_at: Timestamp(),
    action_request_id: Uuid('The idempotent request that created the refund.'),
    message: Type.String({ examples: ['Refund accepted by the sandbox provider.'] }),
  },
  { $id: 'RefundResponse' },
)

export const RefundCursorPage = Type.Object(
  { data: Type.Array(Type.Ref('RefundResponse')), meta: Type.Ref('CursorMeta') },
  { $id: 'RefundCursorPage' },
)

export const ListRefundsQuery = Type.Object(
  {
    ...PaginationQuery,
    status: Type.Optional(
      Type.String({
        pattern: `^(${REFUND_STATUSES.join('|')})(,(${REFUND_STATUSES.join('|')}))*$`,
        description: 'One status, or several comma-separated.',
        examples: ['succeeded'],
      }),
    ),
    transaction_uuid: Type.Optional(Uuid('Only the refunds of this transaction.')),
    currency: Type.Optional(
      Type.String({ pattern: '^[A-Za-z0-9]{1,8}$', description: 'Only this currency.', examples: ['RUB'] }),
    ),
    ...DateRangeQuery,
  },
  { additionalProperties: false },
)

export type ListRefundsInput = Static<typeof ListRefundsQuery>
export type CreateRefundInput = Static<typeof CreateRefundRequest>
export type RefundView = Static<typeof RefundResponse>

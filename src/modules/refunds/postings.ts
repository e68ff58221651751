import type { AccountKind, RefundRow } from '../../db/types.ts'

/** The refund's debit of the merchant's available balance, or its undoing (`refund_reversed`). */
export const refundPosting = (
  row: RefundRow,
  kind: 'refund_debited' | 'refund_reversed',
  settlementCurrency: string,
  at: Date,
) => {
  const sign = kind === 'refund_debited' ? 1 : -1
  return {
    merchantUuid: row.merchant_uuid,
    mode: row.mode,
    kind,
    reference: { type: 'refund' as const, uuid: row.uuid },
    currency: settlementCurrency,
    lines: [
      { account: 'available' as const, amount: -sign * row.settlement_debit },
      { account: 'refunds_out' as const, amount: sign * row.settlement_debit },
    ],
    at,
    mustStayNonNegative: sign === 1 ? (['available'] as AccountKind[]) : [],
  }
}

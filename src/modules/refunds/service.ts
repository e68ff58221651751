import type { PaymentConnector } from '../../connectors/types.ts'
import type { Db } from '../../db/index.ts'
import type { AccountKind, RefundRow } from '../../db/types.ts'
import { AppError, notFound } from '../../http/errors.ts'
import { isUuid, newId } from '../../lib/ids.ts'
import { convertCeil } from '../../lib/money.ts'
import type { LedgerService } from '../ledger/service.ts'
import type { AuthContext } from '../merchants/service.ts'
import type { TransactionService } from '../transactions/service.ts'
import * as repo from './repository.ts'
import type { CreateRefundInput, RefundView } from './schemas.ts'

const iso = (d: Date | null) => (d ? d.toISOString() : null)

export type RefundService = ReturnType<typeof createRefundService>

/**
 * Refunds (contract §6.2). The intent is recorded first (the refund, pending, and its debit of the available
 * balance, under the transaction's row lock), then the provider is called outside any database transaction,
 * then the outcome is settled: the transaction's status and event on success, the debit undone on failure.
 */
export function createRefundService(deps: {
  db: Db
  transactions: TransactionService
  ledger: LedgerService
  connector: PaymentConnector
}) {
  const { db, transactions, ledger, connector } = deps

  async function view(row: RefundRow, transactionAmount: number): Promise<RefundView> {
    return {
      uuid: row.uuid,
      transaction_uuid: row.transaction_uuid,
      amount_minor: row.amount_minor,
      currency: row.currency,
      status: row.status,
      cumulative_refunded_minor: await repo.committedMinor(db, row.transaction_uuid),
      transaction_amount_minor: transactionAmount,
      reason: row.reason,
      succeeded_at: iso(row.succeeded_at),
      failed_at: iso(row.failed_at),
      created_at: row.created_at.toISOString(),
      action_request_id: row.action_request_id,
      message: row.message,
    }
  }

  const debit = (
    row: RefundRow,
    kind: 'refund_debited' | 'refund_reversed',
    sign: 1 | -1,
    settlementCurrency: string,
    at: Date,
  ) => ({
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
  })

  return {
    async create(auth: AuthContext, input: CreateRefundInput, actionRequestId: string): Promise<RefundView> {
      const now = new Date()
      const { refund, transaction } = await db.transaction().execute(async (trx) => {
        const tx = await transactions.lockOwned(trx, auth, input.transaction_uuid)
        if (tx.status !== 'paid' && tx.status !== 'partially_refunded') {
          throw new AppError(
            'invalid_state',
            `Only paid or partially refunded transactions can be refunded; this one is ${tx.status}.`,
            {
              status: tx.status,
            },
          )
        }
        const refundable = tx.amount - (await repo.committedMinor(trx, tx.uuid))
        const amount = input.amount_minor ?? refundable
        if (amount > refundable || amount <= 0) {
          throw new AppError(
            'refund_exceeds_amount',
            `At most ${refundable} can still be refunded on this transaction.`,
            {
              refundable_minor: refundable,
            },
          )
        }
        const row = await repo.insertRefund(trx, {
          uuid: newId(),
          merchant_uuid: tx.merchant_uuid,
          mode: tx.mode,
          transaction_uuid: tx.uuid,
          amount_minor: amount,
          currency: tx.currency,
          // ceil(amount in major units / the transaction's rate), in the settlement currency: the merchant's cost.
          settlement_debit: convertCeil(amount, tx.currency, tx.fx_rate, tx.settlement_currency),
          status: 'pending',
          reason: input.reason ?? null,
          message: 'Refund requested.',
          action_request_id: actionRequestId,
          created_at: now,
          updated_at: now,
        })
        await ledger.post(trx, debit(row, 'refund_debited', 1, tx.settlement_currency, now))
        return { refund: row, transaction: tx }
      })

      let outcome: Awaited<ReturnType<PaymentConnector['refund']>>
      try {
        outcome = await connector.refund({
          refundUuid: refund.uuid,
          transactionUuid: transaction.uuid,
          amountMinor: refund.amount_minor,
          currency: refund.currency,
        })
      } catch (error) {
        outcome = {
          status: 'failed',
          reference: null,
          message: `The provider could not be reached: ${(error as Error).message}`,
        }
      }
      if (outcome.status === 'pending') return view(refund, transaction.amount)

      const settled = await db.transaction().execute(async (trx) => {
        const at = new Date()
        const tx = await transactions.lockOwned(trx, auth, transaction.uuid)
        if (outcome.status === 'failed') {
          await ledger.post(trx, debit(refund, 'refund_reversed', -1, tx.settlement_currency, at))
          return repo.updateRefund(trx, refund.uuid, {
            status: 'failed',
            failed_at: at,
            message: outcome.message,
            updated_at: at,
          })
        }
        const row = await repo.updateRefund(trx, refund.uuid, {
          status: 'succeeded',
          succeeded_at: at,
          message: outcome.message,
          updated_at: at,
        })
        await transactions.markRefunded(trx, tx, await repo.succeededMinor(trx, tx.uuid), at)
        return row
      })
      return view(settled, transaction.amount)
    },

    async get(auth: AuthContext, uuid: string): Promise<RefundView> {
      const row = isUuid(uuid)
        ? await repo.findRefund(db, { merchantUuid: auth.merchant.uuid, mode: auth.mode }, uuid)
        : undefined
      if (!row) throw notFound('refund')
      const tx = await transactions.get(auth, row.transaction_uuid)
      return view(row, tx.amount)
    },
  }
}

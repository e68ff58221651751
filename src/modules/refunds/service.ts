import type { PaymentConnector, ProviderRefundResult } from '../../connectors/types.ts'
import type { Db } from '../../db/index.ts'
import type { AccountKind, RefundRow } from '../../db/types.ts'
import { isUniqueViolation } from '../../db/unique.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError, notFound } from '../../http/errors.ts'
import { isUuid, newId } from '../../lib/ids.ts'
import { convertCeil } from '../../lib/money.ts'
import { iso } from '../../lib/time.ts'
import type { LedgerService } from '../ledger/service.ts'
import type { TransactionService } from '../transactions/service.ts'
import * as repo from './repository.ts'
import type { CreateRefundInput, RefundView } from './schemas.ts'

export type RefundService = ReturnType<typeof createRefundService>

export interface RefundTiming {
  /** How long a refund may wait on its hand-over to the provider before a worker asks the provider again. */
  recheckMs: number
  /** How often a refund the provider still calls pending is asked about again. */
  pollIntervalMs: number
  /** How long a worker holds a refund it is asking about. */
  leaseMs: number
}

const DEFAULT_TIMING: RefundTiming = { recheckMs: 60_000, pollIntervalMs: 5_000, leaseMs: 30_000 }

/** The outcome of a create: the refund, and whether it was made by an earlier request with the same key. */
export interface CreatedRefund {
  refund: RefundView
  replayed: boolean
}

/**
 * Refunds (contract §6.2), exactly once per Idempotency-Key. The intent is recorded first: the refund, pending,
 * with its key and its debit of the available balance, in one database transaction under the transaction's row
 * lock; a retry of the key finds that row and answers it, whatever instant the first request died at. Then the
 * provider is asked, outside any database transaction (it is idempotent on the refund's uuid), and its answer is
 * settled by `settle`: the transaction's status and event on success, the debit undone on failure. A refund the
 * provider has not settled (a crash, a timeout, a `pending` answer) is asked about again by `checkDue`.
 */
export function createRefundService(deps: {
  db: Db
  transactions: TransactionService
  ledger: LedgerService
  connector: PaymentConnector
  timing?: Partial<RefundTiming>
}) {
  const { db, transactions, ledger, connector } = deps
  const timing = { ...DEFAULT_TIMING, ...deps.timing }

  async function view(row: RefundRow, transactionAmount?: number): Promise<RefundView> {
    const amount =
      transactionAmount ??
      (
        await db
          .selectFrom('transactions')
          .select('amount')
          .where('uuid', '=', row.transaction_uuid)
          .executeTakeFirstOrThrow()
      ).amount
    return {
      uuid: row.uuid,
      transaction_uuid: row.transaction_uuid,
      amount_minor: row.amount_minor,
      currency: row.currency,
      status: row.status,
      cumulative_refunded_minor: await repo.committedMinor(db, row.transaction_uuid),
      transaction_amount_minor: amount,
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

  /** Asks the provider to refund (again: it is idempotent on the refund's uuid); null when it cannot be reached. */
  async function askProvider(row: RefundRow): Promise<ProviderRefundResult | null> {
    try {
      return await connector.refund({
        refundUuid: row.uuid,
        transactionUuid: row.transaction_uuid,
        amountMinor: row.amount_minor,
        currency: row.currency,
      })
    } catch {
      // Unknown whether the provider took it: the refund stays pending and is asked about again.
      return null
    }
  }

  /**
   * Applies the provider's answer to a pending refund, in one database transaction under the locks of its
   * payment and then its own row. A refund that is final already is left as it is: the request that made it,
   * a retry's recovery and the worker may all settle the same refund, and only the first one counts.
   */
  async function settle(refundUuid: string, outcome: ProviderRefundResult): Promise<RefundRow> {
    return db.transaction().execute(async (trx) => {
      const found = await repo.findRefundByUuid(trx, refundUuid)
      if (!found) throw notFound('refund')
      const tx = await transactions.lock(trx, found.transaction_uuid)
      const row = (await repo.lockRefund(trx, refundUuid)) as RefundRow
      if (row.status !== 'pending') return row
      const at = new Date()
      const reference = outcome.reference ?? row.provider_reference
      if (outcome.status === 'pending') {
        return repo.updateRefund(trx, row.uuid, {
          provider_reference: reference,
          next_check_at: new Date(at.getTime() + timing.pollIntervalMs),
          updated_at: at,
        })
      }
      if (outcome.status === 'failed') {
        await ledger.post(trx, debit(row, 'refund_reversed', -1, tx.settlement_currency, at))
        return repo.updateRefund(trx, row.uuid, {
          status: 'failed',
          failed_at: at,
          message: outcome.message,
          provider_reference: reference,
          next_check_at: null,
          updated_at: at,
        })
      }
      const settled = await repo.updateRefund(trx, row.uuid, {
        status: 'succeeded',
        succeeded_at: at,
        message: outcome.message,
        provider_reference: reference,
        next_check_at: null,
        updated_at: at,
      })
      await transactions.markRefunded(trx, tx, await repo.succeededMinor(trx, tx.uuid), at)
      return settled
    })
  }

  /** Records the intent, or finds the refund an earlier request with this key committed. */
  async function open(
    auth: AuthContext,
    input: CreateRefundInput,
    request: { idempotencyKey: string; actionRequestId: string },
  ): Promise<{ row: RefundRow; transactionAmount: number; replayed: boolean }> {
    const scope = { merchantUuid: auth.merchant.uuid, mode: auth.mode }
    const now = new Date()
    return db.transaction().execute(async (trx) => {
      const tx = await transactions.lockOwned(trx, auth, input.transaction_uuid)
      // Under the payment's lock: a request with this key that committed before is seen here, before any rule
      // about what is left to refund would refuse its retry.
      const earlier = await repo.findByIdempotencyKey(trx, scope, request.idempotencyKey)
      if (earlier) return { row: earlier, transactionAmount: tx.amount, replayed: true }
      if (tx.status !== 'paid' && tx.status !== 'partially_refunded') {
        throw new AppError(
          'invalid_state',
          `Only paid or partially refunded transactions can be refunded; this one is ${tx.status}.`,
          { status: tx.status },
        )
      }
      const refundable = tx.amount - (await repo.committedMinor(trx, tx.uuid))
      const amount = input.amount_minor ?? refundable
      if (amount > refundable || amount <= 0) {
        throw new AppError(
          'refund_exceeds_amount',
          `At most ${refundable} can still be refunded on this transaction.`,
          { refundable_minor: refundable },
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
        action_request_id: request.actionRequestId,
        idempotency_key: request.idempotencyKey,
        // Should the provider's answer never be settled (a crash from here on), a worker asks again after this.
        next_check_at: new Date(now.getTime() + timing.recheckMs),
        created_at: now,
        updated_at: now,
      })
      await ledger.post(trx, debit(row, 'refund_debited', 1, tx.settlement_currency, now))
      return { row, transactionAmount: tx.amount, replayed: false }
    })
  }

  return {
    async create(
      auth: AuthContext,
      input: CreateRefundInput,
      request: { idempotencyKey: string; actionRequestId: string },
    ): Promise<CreatedRefund> {
      let opened: Awaited<ReturnType<typeof open>>
      try {
        opened = await open(auth, input, request)
      } catch (error) {
        // Two requests with one key for different payments (the key's record was purged after its retention):
        // the refund the key already made is the answer.
        if (!isUniqueViolation(error, 'refunds_idempotency_key')) throw error
        const scope = { merchantUuid: auth.merchant.uuid, mode: auth.mode }
        const earlier = await repo.findByIdempotencyKey(db, scope, request.idempotencyKey)
        if (!earlier) throw error
        return { refund: await view(earlier), replayed: true }
      }
      const { row, transactionAmount, replayed } = opened
      if (replayed || row.status !== 'pending')
        return { refund: await view(row, transactionAmount), replayed }

      const outcome = await askProvider(row)
      if (!outcome || outcome.status === 'pending')
        return { refund: await view(row, transactionAmount), replayed }
      return { refund: await view(await settle(row.uuid, outcome), transactionAmount), replayed }
    },

    async get(auth: AuthContext, uuid: string): Promise<RefundView> {
      const row = isUuid(uuid)
        ? await repo.findRefund(db, { merchantUuid: auth.merchant.uuid, mode: auth.mode }, uuid)
        : undefined
      if (!row) throw notFound('refund')
      const tx = await transactions.get(auth, row.transaction_uuid)
      return view(row, tx.amount)
    },

    /** The refund this key made, as the create answered it: what a retry of a committed request replays. */
    async findByIdempotencyKey(
      scope: { merchantUuid: string; mode: AuthContext['mode'] },
      key: string,
    ): Promise<RefundView | null> {
      const row = await repo.findByIdempotencyKey(db, scope, key)
      return row ? view(row) : null
    },

    /**
     * Asks the provider again about up to `limit` pending refunds whose check is due (a hand-over a crash cut
     * off, a provider that was unreachable or answered pending) and settles what it says. Any number of
     * workers may run it at once.
     */
    async checkDue(limit = 100, now = new Date()): Promise<number> {
      const claimed = await repo.claimDue(db, now, new Date(now.getTime() + timing.leaseMs), limit)
      for (const row of claimed) {
        const outcome = await askProvider(row)
        // Unreachable: asked again when the lease runs out.
        if (outcome) await settle(row.uuid, outcome)
      }
      return claimed.length
    },
  }
}

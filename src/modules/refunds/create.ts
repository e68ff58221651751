import { scopeOf } from '../../db/scope.ts'
import type { RefundRow } from '../../db/types.ts'
import { isUniqueViolation } from '../../db/unique.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError } from '../../http/errors.ts'
import type { KeptKeyCreated, KeyClaim } from '../../http/kept-key.ts'
import { newId } from '../../lib/ids.ts'
import { convertCeil } from '../../lib/money.ts'
import type { RefundDeps } from './deps.ts'
import { refundPosting } from './postings.ts'
import * as repo from './repository.ts'
import type { CreateRefundInput, RefundView } from './schemas.ts'
import { askProviderToRefund, settleRefund } from './settle.ts'
import { type RefundedPayment, refundFields, refundView } from './view.ts'

/** The outcome of a create: the refund, and whether it was made by an earlier request with the same key. */
export type CreatedRefund = KeptKeyCreated<RefundView>

/** The connector account that has a payment, and the payment's reference there, once the account gave it. */
interface PaymentAccount {
  accountUuid: string
  paymentReference: string | null
}

/**
 * The connector account a refund of the payment goes to: the one that has the payment (docs/API.md, Refunds).
 * Null for a payment the in-process simulator has, or an account of the simulator kind (the sandbox's).
 */
export async function paymentAccount(
  deps: Pick<RefundDeps, 'db' | 'providers'>,
  transactionUuid: string,
): Promise<PaymentAccount | null> {
  const handover = await deps.providers.handovers.find(deps.db, transactionUuid)
  if (!handover) return null
  const { account } = await deps.providers.accounts.connector(handover.account_uuid)
  if (account.kind === 'simulator') return null
  return { accountUuid: account.uuid, paymentReference: handover.provider_reference }
}

/** Records the intent, or finds the refund an earlier request with this key committed. */
export async function openRefund(
  deps: Pick<RefundDeps, 'db' | 'transactions' | 'ledger' | 'timing'>,
  auth: AuthContext,
  input: CreateRefundInput,
  request: KeyClaim,
  account: PaymentAccount | null = null,
): Promise<{
  row: RefundRow
  /** The refunded payment's amount and external id; undefined for a replay of another payment's refund. */
  payment: RefundedPayment | undefined
  /** Pending and succeeded refunds of the payment with this one; null for a replay. */
  committedMinor: number | null
  replayed: boolean
}> {
  const { transactions, ledger, timing } = deps
  const scope = scopeOf(auth)
  const now = new Date()
  return deps.db.transaction().execute(async (trx) => {
    const tx = await transactions.lockOwned(trx, auth, input.transaction_uuid)
    // Under the payment's lock: a request with this key that committed before is seen here, before any rule
    // about what is left to refund would refuse its retry.
    const { earlier, committedMinor } = await repo.refundsOfOrByKey(
      trx,
      scope,
      tx.uuid,
      request.idempotencyKey,
    )
    if (earlier) {
      // The earlier refund may be another payment's (a key used again after its record was purged): its own
      // payment's amount is read with the view.
      const payment = earlier.transaction_uuid === tx.uuid ? tx : undefined
      return { row: earlier, payment, committedMinor: null, replayed: true }
    }
    if (tx.status !== 'paid' && tx.status !== 'partially_refunded') {
      throw new AppError(
        'invalid_state',
        `Only paid or partially refunded transactions can be refunded; this one is ${tx.status}.`,
        { status: tx.status },
      )
    }
    // Paid at its provider, but its reference never came back (a hand-over status sync has yet to finish).
    if (account && account.paymentReference === null)
      throw new AppError(
        'invalid_state',
        "The payment's provider has not confirmed its reference yet; try again later.",
        { status: tx.status },
      )
    const refundable = tx.amount - committedMinor
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
      account_uuid: account?.accountUuid ?? null,
      // Should the provider's answer never be settled (a crash from here on), a worker asks again after this.
      next_check_at: new Date(now.getTime() + timing.recheckMs),
      created_at: now,
      updated_at: now,
    })
    await ledger.post(trx, refundPosting(row, 'refund_debited', tx.settlement_currency, now))
    return { row, payment: tx, committedMinor: committedMinor + amount, replayed: false }
  })
}

/** The intent first (`openRefund`), then the provider, outside any database transaction, then its answer. */
export async function createRefund(
  deps: RefundDeps,
  auth: AuthContext,
  input: CreateRefundInput,
  request: KeyClaim,
): Promise<CreatedRefund> {
  let opened: Awaited<ReturnType<typeof openRefund>>
  try {
    opened = await openRefund(deps, auth, input, request, await paymentAccount(deps, input.transaction_uuid))
  } catch (error) {
    // Two requests with one key for different payments (the key's record was purged after its retention):
    // the refund the key already made is the answer.
    if (!isUniqueViolation(error, 'refunds_idempotency_key')) throw error
    const earlier = await repo.findByIdempotencyKey(deps.db, scopeOf(auth), request.idempotencyKey)
    if (!earlier) throw error
    return { made: await refundView(deps, earlier), replayed: true }
  }
  const { row, payment, replayed } = opened
  // A replay's amounts are read now; a new refund's were read with it, under its payment's lock.
  if (opened.committedMinor === null || payment === undefined)
    return { made: await refundView(deps, row, payment), replayed }
  const pending = refundFields(row, {
    payment,
    cumulativeRefundedMinor: opened.committedMinor,
  })
  const outcome = await askProviderToRefund(deps, row)
  if (!outcome) return { made: pending, replayed }
  if (outcome.status === 'pending') {
    // Kept: the provider's reference, which its callback will name, and the next status check.
    await settleRefund(deps, row, outcome)
    return { made: pending, replayed }
  }
  const settled = await settleRefund(deps, row, outcome)
  return {
    made: refundFields(settled.row, {
      payment,
      cumulativeRefundedMinor: settled.committedMinor,
    }),
    replayed,
  }
}

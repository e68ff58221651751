import type { Selectable } from 'kysely'
import type { Executor } from '../../db/index.ts'
import type { Mode, PaymentReviewsTable, TransactionRow } from '../../db/types.ts'
import { AppError, foundByUuid } from '../../http/errors.ts'
import { computeFees, convertFloor, formatMinor } from '../../lib/money.ts'
import type { TransactionDeps } from './deps.ts'
import * as repo from './repository.ts'
import { type TransactionStatus, transition } from './state-machine.ts'
import { applyTransactionOutcome } from './status.ts'

/**
 * The operator's side of a payment under review (docs/OPERATIONS.md, Payments under review): a provider said
 * `paid` for another amount or currency than the payment's, which changed nothing; the operator either accepts
 * the amount received or has the money returned.
 */

type Deps = Pick<TransactionDeps, 'db' | 'config' | 'merchants' | 'ledger' | 'webhooks' | 'providers'>
type Review = Selectable<PaymentReviewsTable>

/** A review as the operator's commands show it. */
export interface ReviewView {
  uuid: string
  payment_uuid: string
  merchant_uuid: string
  mode: Mode
  status: Review['status']
  /** The payment's status and what it asked for. */
  payment_status: TransactionStatus
  amount: number
  currency: string
  /** What the provider said it took. */
  reported_amount: number
  reported_currency: string
  /** The connector account that reported it. */
  account: string
  opened_at: Date
  /** When the operator resolved it (null while open), and how. */
  resolved_at: Date | null
  resolution: string | null
}

/** The outcome of a resolution: the review, the payment as it is now, and where its money is. */
export interface ResolvedReview {
  review: ReviewView
  payment: TransactionRow
  /** The provider's reference of the payment, for the operator's request to that provider. */
  providerReference: string | null
}

/** Reviews with their payments, newest first; with `open`, only those waiting for the operator. */
export async function listReviews(
  deps: Pick<Deps, 'db' | 'providers'>,
  filter: { open?: boolean; limit?: number } = {},
): Promise<ReviewView[]> {
  const [rows, accounts] = await Promise.all([
    repo.listReviews(deps.db, { open: filter.open ?? false, limit: filter.limit ?? 100 }),
    deps.providers.accounts.list(),
  ])
  const names = new Map(accounts.map((a) => [a.uuid, a.name]))
  return rows.map((r) => ({
    uuid: r.uuid,
    payment_uuid: r.transaction_uuid,
    merchant_uuid: r.merchant_uuid,
    mode: r.mode,
    status: r.status,
    payment_status: r.payment_status,
    amount: r.amount,
    currency: r.currency,
    reported_amount: r.reported_amount,
    reported_currency: r.reported_currency,
    account: names.get(r.account_uuid) ?? r.account_uuid,
    opened_at: r.created_at,
    resolved_at: r.status === 'open' ? null : r.updated_at,
    resolution: r.resolution,
  }))
}

/**
 * In one database transaction: the payment locked, then its latest review, which must be open. Two resolutions
 * at once wait on the payment's lock, and the second finds the review resolved.
 */
async function lockOpenReview(trx: Executor, paymentUuid: string) {
  const row = await foundByUuid('payment', paymentUuid, (uuid) => repo.lockByUuid(trx, uuid))
  const review = await repo.lockLatestReview(trx, row.uuid)
  if (!review) throw new AppError('not_found', `Payment ${row.uuid} has no review.`)
  if (review.status !== 'open')
    throw new AppError(
      'invalid_state',
      `The review of payment ${row.uuid} is ${review.status} already, not open: nothing is changed.`,
      { review_status: review.status },
    )
  return { row, review }
}

/** What resolving a review committed, and what its answer shows. */
interface Resolution {
  /** The payment as the resolution left it. */
  payment: TransactionRow
  review: Review
  status: Review['status']
  resolution: string
  at: Date
  /** The payment's amount before the resolution (accepting another amount changes it). */
  original: { amount: number; currency: string }
  providerReference: string | null
}

/** The answer to a resolution: the review as the operator's list shows it now, with its payment. */
async function resolved(deps: Pick<Deps, 'providers'>, done: Resolution): Promise<ResolvedReview> {
  const { payment, review } = done
  return {
    review: {
      uuid: review.uuid,
      payment_uuid: payment.uuid,
      merchant_uuid: payment.merchant_uuid,
      mode: payment.mode,
      status: done.status,
      payment_status: payment.status,
      ...done.original,
      reported_amount: review.reported_amount,
      reported_currency: review.reported_currency,
      account: await accountName(deps, review.account_uuid),
      opened_at: review.created_at,
      resolved_at: done.at,
      resolution: done.resolution,
    },
    payment,
    providerReference: done.providerReference,
  }
}

async function accountName(deps: Pick<Deps, 'providers'>, accountUuid: string): Promise<string> {
  const accounts = await deps.providers.accounts.list()
  return accounts.find((a) => a.uuid === accountUuid)?.name ?? accountUuid
}

/** Notes are one line in the operator's list. */
const noted = (text: string, note?: string) =>
  note?.trim() ? `${text}; ${note.trim().replace(/\s+/g, ' ')}` : text

/**
 * Accepts the amount the provider received: the payment becomes paid for that amount. Its fee and settlement are
 * worked out again as at its creation, from the amount received with the terms the payment was created with
 * (fee_bps and merchant_fee_share_bps, fx_rate): computeFees, then convertFloor of the net amount. The new
 * figures, the status change with its transaction.paid event, the merchant's ledger entries and the review's
 * status commit together; a review already resolved is refused, so the money is credited once.
 *
 * Only another amount in the payment's own currency can be accepted: the payment's rate is for its currency, and
 * money in another one is returned (`refundReview`).
 */
export async function acceptReview(deps: Deps, paymentUuid: string, note?: string): Promise<ResolvedReview> {
  const done = await deps.db.transaction().execute(async (trx): Promise<Resolution> => {
    const { row, review } = await lockOpenReview(trx, paymentUuid)
    if (review.reported_currency !== row.currency)
      throw new AppError(
        'invalid_state',
        `The provider reports ${review.reported_currency}, not the payment's ${row.currency}: only a return ` +
          'can resolve this review (payments review refund).',
      )
    if (review.reported_amount <= 0)
      throw new AppError('invalid_state', 'The provider reports no money received: nothing can be accepted.')
    if (transition(row.status as TransactionStatus, 'paid').kind !== 'applied')
      throw new AppError(
        'invalid_state',
        `Payment ${row.uuid} is ${row.status} already: accepting the review would credit it twice.`,
        { payment_status: row.status },
      )
    const at = new Date()
    const original = { amount: row.amount, currency: row.currency }
    const fees = computeFees(review.reported_amount, row.fee_bps, row.merchant_fee_share_bps)
    const settlementAmount = convertFloor(fees.net_amount, row.currency, row.fx_rate, row.settlement_currency)
    // The new figures first (no new version: nobody sees them before the status change that follows).
    const repriced = await repo.updateTransaction(trx, row.uuid, {
      amount: review.reported_amount,
      ...fees,
      settlement_amount: settlementAmount,
    })
    const { row: paid } = await applyTransactionOutcome(deps, trx, repriced, 'paid', {
      connector: 'review',
      reference: review.uuid,
    })
    const resolution = noted(
      `accepted ${formatMinor(review.reported_amount, row.currency)} instead of ${formatMinor(row.amount, row.currency)}`,
      note,
    )
    await repo.resolveReview(trx, review.uuid, 'accepted', resolution, at)
    await deps.providers.handovers.close(trx, row.uuid, 'final', at)
    const handover = await deps.providers.handovers.find(trx, row.uuid)
    const providerReference = handover?.provider_reference ?? null
    return { payment: paid, review, status: 'accepted', resolution, at, original, providerReference }
  })
  return resolved(deps, done)
}

/**
 * Has the money the provider took go back to the customer: the review becomes `refunded` and the payment, which
 * never credited the merchant, ends failed (a payment that had failed or expired already stays so, its merchant
 * told then). No ledger entry is posted: the money never reached the merchant's balances. The return itself is
 * asked of the provider by the operator (a connector has no call for it); the answer names the account and the
 * provider's reference to ask about.
 */
export async function refundReview(deps: Deps, paymentUuid: string, note?: string): Promise<ResolvedReview> {
  const done = await deps.db.transaction().execute(async (trx): Promise<Resolution> => {
    const { row, review } = await lockOpenReview(trx, paymentUuid)
    if (transition(row.status as TransactionStatus, 'paid').kind !== 'applied')
      throw new AppError(
        'invalid_state',
        `Payment ${row.uuid} is ${row.status}: its money reached the merchant, so it is not returned this way.`,
        { payment_status: row.status },
      )
    const at = new Date()
    const current =
      row.status === 'pending'
        ? (
            await applyTransactionOutcome(deps, trx, row, 'failed', {
              connector: 'review',
              reference: review.uuid,
            })
          ).row
        : row
    const handover = await deps.providers.handovers.find(trx, row.uuid)
    const providerReference = handover?.provider_reference ?? null
    const resolution = noted(
      `${formatMinor(review.reported_amount, review.reported_currency)} to be returned to the customer` +
        (providerReference ? ` (provider reference ${providerReference})` : ''),
      note,
    )
    await repo.resolveReview(trx, review.uuid, 'refunded', resolution, at)
    await deps.providers.handovers.close(trx, row.uuid, 'final', at)
    const original = { amount: current.amount, currency: current.currency }
    return { payment: current, review, status: 'refunded', resolution, at, original, providerReference }
  })
  return resolved(deps, done)
}

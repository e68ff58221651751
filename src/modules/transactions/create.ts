import { isPaymentMethod } from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import { isUniqueViolation } from '../../db/unique.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError, validationError } from '../../http/errors.ts'
import { newId, newPaymentToken } from '../../lib/ids.ts'
import { computeFees, convertFloor } from '../../lib/money.ts'
import { isH2hMethod } from '../requisites/service.ts'
import type { TransactionDeps } from './deps.ts'
import { handOverPayment, handoverLeaseMs } from './handover.ts'
import * as repo from './repository.ts'
import { type CreateTransactionInput, PAYMENT_METHODS, type TransactionView } from './schemas.ts'
import { transactionView } from './view.ts'

export async function createTransaction(
  deps: Pick<
    TransactionDeps,
    'db' | 'config' | 'merchants' | 'rates' | 'requisites' | 'webhooks' | 'ledger' | 'providers'
  >,
  auth: AuthContext,
  input: CreateTransactionInput,
): Promise<TransactionView> {
  const { db, merchants, rates, requisites, webhooks } = deps
  const { merchant } = auth
  if (!isPaymentMethod(input.payment_method)) {
    throw new AppError(
      'unsupported_payment_method',
      `Payment method "${input.payment_method}" is not supported.`,
      {
        supported: [...PAYMENT_METHODS],
      },
    )
  }
  const paymentMethod = input.payment_method
  // A deposit address takes the token itself: the payment is asked, paid and counted in USDT.
  if (paymentMethod === 'usdt_erc20' && input.currency !== 'USDT')
    throw validationError('currency', 'usdt_erc20 payments are in USDT')
  // Refused here (422) as the configured webhook URL is, not first at delivery time.
  if (input.callback_url) await webhooks.checkCallbackUrl(input.callback_url)
  const rate = await rates.merchantRate(input.currency, merchant.settlement_currency, merchant.fx_markup_bps)
  const fee = await merchants.fee(merchant.uuid, input.payment_method)
  const fees = computeFees(input.amount, fee.fee_bps, fee.merchant_fee_share_bps)
  const settlementAmount = convertFloor(
    fees.net_amount,
    input.currency,
    rate.pay_in_rate,
    merchant.settlement_currency,
  )
  // The accounts that may take it (docs/API.md, Live payments); none: the in-process simulator, as in test mode,
  // but for live payments in production, which have no default.
  const route = await deps.providers.routes.resolve({
    merchantUuid: merchant.uuid,
    mode: auth.mode,
    subject: 'payment',
    method: paymentMethod,
    currency: input.currency,
  })
  // A deposit address comes from a chain account only: the simulator has none to give, in either mode.
  const needsRoute =
    paymentMethod === 'usdt_erc20' || (auth.mode === 'live' && deps.config.appEnv === 'production')
  if (route.length === 0 && needsRoute)
    throw new AppError(
      'unsupported_payment_method',
      `No payment provider takes live ${paymentMethod} payments in ${input.currency} for this merchant yet.`,
      { reason: 'no_route' },
    )
  const now = new Date()
  const uuid = newId()

  const insert = async (
    executor: Executor,
    assigned: { uuid: string; fields: Record<string, string> } | null,
  ) => {
    try {
      return await repo.insertTransaction(executor, {
        uuid,
        merchant_uuid: merchant.uuid,
        mode: auth.mode,
        type: 'payment',
        external_id: input.external_id,
        amount: input.amount,
        ...fees,
        fee_bps: fee.fee_bps,
        merchant_fee_share_bps: fee.merchant_fee_share_bps,
        currency: input.currency,
        settlement_currency: merchant.settlement_currency,
        settlement_amount: settlementAmount,
        fx_rate: rate.pay_in_rate,
        fx_rate_updated_at: rate.updated_at,
        payment_method: paymentMethod,
        status: 'pending',
        description: input.description ?? null,
        metadata: input.metadata ? JSON.stringify(input.metadata) : null,
        callback_url: input.callback_url ?? null,
        success_url: input.success_url ?? null,
        fail_url: input.fail_url ?? null,
        payment_token: newPaymentToken(),
        requisites: assigned ? JSON.stringify(assigned.fields) : null,
        requisite_uuid: assigned?.uuid ?? null,
        expires_at: new Date(now.getTime() + merchant.transaction_ttl_seconds * 1000),
        paid_at: null,
        settle_available_at: null,
        aggregate_version: 1,
        created_at: now,
        updated_at: now,
      })
    } catch (error) {
      if (isUniqueViolation(error, 'transactions_external_id_key')) {
        throw new AppError(
          'conflict',
          `A transaction with external_id "${input.external_id}" already exists.`,
          {
            external_id: input.external_id,
          },
        )
      }
      throw error
    }
  }
  if (route.length > 0) {
    // Recorded with the payment: the first try, so that a process killed before the provider answers leaves it
    // to status sync, which makes the same (idempotent) call again.
    const [row, attempt] = await db.transaction().execute(async (trx) => {
      const inserted = await insert(trx, null)
      const first = await deps.providers.handovers.begin(trx, {
        transactionUuid: inserted.uuid,
        accountUuid: (route[0] as (typeof route)[number]).uuid,
        at: now,
        leaseMs: handoverLeaseMs(deps),
      })
      return [inserted, first] as const
    })
    return transactionView(deps, await handOverPayment(deps, row, route, attempt))
  }
  // A card payment is one INSERT (atomic by itself); a host-to-host one also takes its requisites, together.
  const h2hMethod = isH2hMethod(input.payment_method) ? input.payment_method : null
  const row = h2hMethod
    ? await db.transaction().execute(async (trx) => {
        const assigned = await requisites.assign(trx, h2hMethod, now)
        if (!assigned) {
          throw new AppError(
            'unsupported_payment_method',
            `Payment method "${input.payment_method}" is not available right now: no requisites are configured for it.`,
          )
        }
        return insert(trx, assigned)
      })
    : await insert(db, null)
  return transactionView(deps, row)
}

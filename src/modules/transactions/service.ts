import type { Config } from '../../config.ts'
import type { PaymentConnector, ProviderCallback } from '../../connectors/types.ts'
import { isPaymentMethod, isTransactionStatus } from '../../db/enums.ts'
import type { Db, Executor } from '../../db/index.ts'
import type { TransactionRow } from '../../db/types.ts'
import { AppError, notFound, validationError } from '../../http/errors.ts'
import { type Cursor, cursorPage, decodeCursor, filterDigest } from '../../http/pagination.ts'
import { isUuid, newId, newPaymentToken } from '../../lib/ids.ts'
import { computeFees, convertFloor, formatMinor } from '../../lib/money.ts'
import type { LedgerService } from '../ledger/service.ts'
import type { AuthContext, MerchantService } from '../merchants/service.ts'
import type { RateService } from '../rates/service.ts'
import { isH2hMethod, type RequisiteService } from '../requisites/service.ts'
import type { WebhookService } from '../webhooks/service.ts'
import * as repo from './repository.ts'
import {
  type CreateTransactionInput,
  EXTERNAL_ID_PATTERN,
  type ListTransactionsInput,
  PAYMENT_METHODS,
  type TransactionView,
} from './schemas.ts'
import { type ProviderOutcome, transition } from './state-machine.ts'

const EXTERNAL_ID_REGEX = new RegExp(EXTERNAL_ID_PATTERN)
const iso = (d: Date) => d.toISOString()
const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null)

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/

/** A `date_from`/`date_to` value: a bare date covers its whole UTC day (end inclusive for `date_to`). */
function parseDateFilter(field: string, value: string, endOfDay: boolean): Date {
  if (DATE_ONLY.test(value)) {
    const start = new Date(`${value}T00:00:00.000Z`)
    if (Number.isNaN(start.getTime()) || start.toISOString().slice(0, 10) !== value)
      throw validationError(field, 'is not a valid date')
    return endOfDay ? new Date(start.getTime() + 86_400_000 - 1) : start
  }
  const parsed = new Date(value)
  if (!DATE_TIME.test(value) || Number.isNaN(parsed.getTime())) {
    throw validationError(field, 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time')
  }
  return parsed
}

export type TransactionService = ReturnType<typeof createTransactionService>

export function createTransactionService(deps: {
  db: Db
  config: Config
  merchants: MerchantService
  rates: RateService
  requisites: RequisiteService
  webhooks: WebhookService
  ledger: LedgerService
  connectors: Record<string, PaymentConnector>
}) {
  const { db, config, merchants, rates, requisites, webhooks, ledger, connectors } = deps
  const scopeOf = (auth: AuthContext): repo.Scope => ({ merchantUuid: auth.merchant.uuid, mode: auth.mode })

  function toView(row: TransactionRow): TransactionView {
    return {
      uuid: row.uuid,
      type: row.type,
      mode: row.mode,
      amount: row.amount,
      gross_amount: row.gross_amount,
      net_amount: row.net_amount,
      fee_amount: row.fee_amount,
      fee_payer: row.fee_payer,
      merchant_fee_share_bps: row.merchant_fee_share_bps,
      merchant_fee_merchant_amount: row.merchant_fee_merchant_amount,
      merchant_fee_customer_amount: row.merchant_fee_customer_amount,
      currency: row.currency,
      settlement_currency: row.settlement_currency,
      settlement_amount: row.settlement_amount,
      settlement_amount_formatted: formatMinor(row.settlement_amount, row.settlement_currency),
      fx_rate: row.fx_rate,
      fx_rate_updated_at: iso(row.fx_rate_updated_at),
      payment_method: row.payment_method,
      status: row.status,
      external_id: row.external_id,
      description: row.description,
      metadata: row.metadata,
      callback_url: row.callback_url,
      success_url: row.success_url,
      fail_url: row.fail_url,
      payment_url: `${config.publicBaseUrl}/pay/${row.payment_token}`,
      h2h_url: row.requisites ? `${config.publicBaseUrl}/integration/transactions/${row.uuid}/h2h` : null,
      requisites: row.requisites,
      expires_at: iso(row.expires_at),
      paid_at: isoOrNull(row.paid_at),
      settle_available_at: isoOrNull(row.settle_available_at),
      aggregate_version: row.aggregate_version,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    }
  }

  async function get(auth: AuthContext, uuid: string): Promise<TransactionRow> {
    const row = isUuid(uuid) ? await repo.findByUuid(db, scopeOf(auth), uuid) : undefined
    if (!row) throw notFound('transaction')
    return row
  }

  const money = (row: TransactionRow) => ({
    merchantUuid: row.merchant_uuid,
    mode: row.mode,
    reference: { type: 'transaction' as const, uuid: row.uuid },
    currency: row.settlement_currency,
  })

  /** A paid transaction credits the merchant's pending balance by its settlement amount. */
  const postReceived = (trx: Executor, row: TransactionRow, at: Date) =>
    ledger.post(trx, {
      ...money(row),
      kind: 'payment_received',
      lines: [
        { account: 'provider_clearing', amount: -row.settlement_amount },
        { account: 'pending', amount: row.settlement_amount },
      ],
      at,
    })

  /** At settle_available_at the amount moves from pending to available. */
  const postSettled = (trx: Executor, row: TransactionRow, at: Date) =>
    ledger.post(trx, {
      ...money(row),
      kind: 'payment_settled',
      lines: [
        { account: 'pending', amount: -row.settlement_amount },
        { account: 'available', amount: row.settlement_amount },
      ],
      at,
    })

  /**
   * The one place a transaction's status changes (contract §6.1): under the row lock the caller holds, the
   * outcome is recorded, and when the state machine applies it the row moves on, its aggregate_version grows
   * and the event goes to the outbox, all in the caller's database transaction.
   */
  async function applyOutcome(
    trx: Executor,
    row: TransactionRow,
    outcome: ProviderOutcome,
    source: { connector: string; reference: string | null },
  ) {
    const now = new Date()
    const result = transition(row.status, outcome)
    await repo.insertProviderCallback(trx, {
      uuid: newId(),
      connector: source.connector,
      transaction_uuid: row.uuid,
      outcome,
      provider_reference: source.reference,
      result: result.kind,
      from_status: row.status,
      to_status: result.kind === 'applied' ? result.to : row.status,
      received_at: now,
    })
    if (result.kind !== 'applied') return { row, applied: false }
    let paidFields = {}
    let settleNow = false
    if (result.to === 'paid') {
      const merchant = await merchants.getMerchant(row.merchant_uuid, trx)
      // Test mode has no hold, so that payouts can be tried at once.
      const holdSeconds = row.mode === 'test' ? 0 : (merchant?.settlement_hold_seconds ?? 86400)
      settleNow = holdSeconds === 0
      paidFields = {
        paid_at: now,
        settle_available_at: new Date(now.getTime() + holdSeconds * 1000),
        ...(settleNow && { settled_at: now }),
      }
    }
    const updated = await repo.updateTransaction(trx, row.uuid, {
      status: result.to,
      ...paidFields,
      aggregate_version: row.aggregate_version + 1,
      updated_at: now,
    })
    if (result.to === 'paid') {
      // The money arrived: it is the merchant's, pending until the hold ends (at once without a hold).
      await postReceived(trx, updated, now)
      if (settleNow) await postSettled(trx, updated, now)
    }
    await webhooks.recordEvent(trx, {
      merchantUuid: updated.merchant_uuid,
      mode: updated.mode,
      event: result.event,
      aggregateType: 'transaction',
      aggregateUuid: updated.uuid,
      aggregateVersion: updated.aggregate_version,
      resource: toView(updated),
      callbackUrl: updated.callback_url,
      occurredAt: now,
    })
    return { row: updated, applied: true }
  }

  /** A provider callback, parsed: applied to its transaction in one database transaction. */
  async function handleCallback(callback: ProviderCallback): Promise<TransactionRow> {
    return db.transaction().execute(async (trx) => {
      const row = isUuid(callback.transactionUuid)
        ? await repo.lockByUuid(trx, callback.transactionUuid)
        : undefined
      if (!row) throw notFound('transaction')
      return (await applyOutcome(trx, row, callback.outcome, callback)).row
    })
  }

  return {
    toView,

    /** Where every provider's callback enters: parsed by its connector, then the one handler. */
    async receiveProviderCallback(connectorName: string, body: unknown): Promise<TransactionRow> {
      const connector = connectors[connectorName]
      if (!connector) throw notFound('payment provider')
      let callback: ProviderCallback
      try {
        callback = connector.parseCallback(body)
      } catch (error) {
        throw new AppError('malformed_request', (error as Error).message)
      }
      return handleCallback(callback)
    },

    /** The transaction of the caller, or 404: what the sandbox checks before it simulates anything. */
    getOwned: get,

    /** The transaction behind a hosted payment page token, or undefined. */
    findByPaymentToken: (token: string) => repo.findByPaymentToken(db, token),

    /** Expires up to `limit` overdue pending transactions; any number of workers may run it at once. */
    async expireOverdue(limit = 100, now = new Date()): Promise<number> {
      return db.transaction().execute(async (trx) => {
        const overdue = await repo.lockOverdue(trx, now, limit)
        for (const row of overdue)
          await applyOutcome(trx, row, 'expired', { connector: 'expiry', reference: null })
        return overdue.length
      })
    },

    /** The transaction, locked for the rest of the caller's transaction (a worker's view: no owner check). */
    async lock(trx: Executor, uuid: string): Promise<TransactionRow> {
      const row = await repo.lockByUuid(trx, uuid)
      if (!row) throw notFound('transaction')
      return row
    },

    /** The caller's transaction, locked for the rest of `trx` (refunds check and spend its remainder). */
    async lockOwned(trx: Executor, auth: AuthContext, uuid: string): Promise<TransactionRow> {
      const row = isUuid(uuid) ? await repo.lockByUuid(trx, uuid) : undefined
      if (!row || row.merchant_uuid !== auth.merchant.uuid || row.mode !== auth.mode)
        throw notFound('transaction')
      return row
    },

    /**
     * After a refund succeeded: partially_refunded, or refunded once `refundedTotal` reaches the amount, with
     * its event, in the caller's transaction (which holds the row lock).
     */
    async markRefunded(
      trx: Executor,
      row: TransactionRow,
      refundedTotal: number,
      at: Date,
    ): Promise<TransactionRow> {
      const to = refundedTotal >= row.amount ? 'refunded' : 'partially_refunded'
      if (row.status === to && to === 'refunded') return row
      const updated = await repo.updateTransaction(trx, row.uuid, {
        status: to,
        aggregate_version: row.aggregate_version + 1,
        updated_at: at,
      })
      await webhooks.recordEvent(trx, {
        merchantUuid: updated.merchant_uuid,
        mode: updated.mode,
        event: `transaction.${to}`,
        aggregateType: 'transaction',
        aggregateUuid: updated.uuid,
        aggregateVersion: updated.aggregate_version,
        resource: toView(updated),
        callbackUrl: updated.callback_url,
        occurredAt: at,
      })
      return updated
    },

    /** Moves paid money whose hold has ended from pending to available; safe with several workers. */
    async settleDue(limit = 100, now = new Date()): Promise<number> {
      return db.transaction().execute(async (trx) => {
        const due = await repo.lockSettlementDue(trx, now, limit)
        // Merchant by merchant, in one order, so two workers settling at once lock accounts in the same order.
        due.sort((a, b) => `${a.merchant_uuid}${a.mode}`.localeCompare(`${b.merchant_uuid}${b.mode}`))
        for (const row of due) {
          await postSettled(trx, row, now)
          await repo.updateTransaction(trx, row.uuid, { settled_at: now })
        }
        return due.length
      })
    },

    listProviderCallbacks: (uuid: string) => repo.listProviderCallbacks(db, uuid),

    async create(auth: AuthContext, input: CreateTransactionInput): Promise<TransactionView> {
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
      // Refused here (422) as the configured webhook URL is, not first at delivery time.
      if (input.callback_url) await webhooks.checkCallbackUrl(input.callback_url)
      const rate = await rates.merchantRate(
        input.currency,
        merchant.settlement_currency,
        merchant.fx_markup_bps,
      )
      const fee = await merchants.fee(merchant.uuid, input.payment_method)
      const fees = computeFees(input.amount, fee.fee_bps, fee.merchant_fee_share_bps)
      const settlementAmount = convertFloor(
        fees.net_amount,
        input.currency,
        rate.pay_in_rate,
        merchant.settlement_currency,
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
          if (
            (error as { code?: string; constraint?: string }).constraint === 'transactions_external_id_key'
          ) {
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
      return toView(row)
    },

    get: async (auth: AuthContext, uuid: string) => toView(await get(auth, uuid)),

    async getByExternalId(auth: AuthContext, externalId: string) {
      // An id that could never have been accepted names nothing (and may hold bytes the database refuses).
      const row = EXTERNAL_ID_REGEX.test(externalId)
        ? await repo.findByExternalId(db, scopeOf(auth), externalId)
        : undefined
      if (!row) throw notFound('transaction')
      return toView(row)
    },

    async h2h(auth: AuthContext, uuid: string) {
      const row = await get(auth, uuid)
      if (!row.requisites)
        throw new AppError(
          'not_found',
          'This transaction has no host-to-host requisites: its payment method uses the hosted page.',
        )
      return {
        uuid: row.uuid,
        status: row.status,
        amount: row.amount,
        gross_amount: row.gross_amount,
        currency: row.currency,
        payment_method: row.payment_method,
        requisites: row.requisites,
        expires_at: iso(row.expires_at),
      }
    },

    async list(auth: AuthContext, query: ListTransactionsInput) {
      const perPage = query.per_page ?? 25
      const from =
        query.date_from !== undefined ? parseDateFilter('date_from', query.date_from, false) : undefined
      const to = query.date_to !== undefined ? parseDateFilter('date_to', query.date_to, true) : undefined
      if (from && to && from > to) throw validationError('date_from', 'must not be after date_to')
      const statuses = query.status
        ? [...new Set(query.status.split(','))].filter(isTransactionStatus).sort()
        : undefined
      const filters: repo.TransactionFilters = {
        statuses,
        paymentMethod:
          query.payment_method && isPaymentMethod(query.payment_method) ? query.payment_method : undefined,
        currency: query.currency,
        from,
        to,
        search: query.search
          ? {
              text: query.search,
              uuid: isUuid(query.search.toLowerCase()) ? query.search.toLowerCase() : null,
            }
          : undefined,
      }
      const digest = filterDigest({
        status: statuses?.join(','),
        payment_method: query.payment_method,
        currency: query.currency,
        date_from: from?.toISOString(),
        date_to: to?.toISOString(),
        search: query.search,
      })
      const cursor: Cursor | null = query.cursor ? decodeCursor(query.cursor, digest) : null
      const rows = await repo.listPage(db, scopeOf(auth), filters, cursor, perPage + 1)
      return cursorPage(
        rows,
        { perPage, cursor, digest, path: `${config.publicBaseUrl}/integration/transactions` },
        toView,
      )
    },
  }
}

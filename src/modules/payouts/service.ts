import type { Config } from '../../config.ts'
import type { PaymentConnector, PayoutOutcome, ProviderPayoutResult } from '../../connectors/types.ts'
import type { Db, Executor } from '../../db/index.ts'
import { scopeOf } from '../../db/scope.ts'
import type { PayoutQuoteRow, PayoutRow, PayoutStatus } from '../../db/types.ts'
import { isUniqueViolation } from '../../db/unique.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError, notFound, validationError } from '../../http/errors.ts'
import { type Cursor, cursorPage, decodeCursor, filterDigest } from '../../http/pagination.ts'
import { decryptSecret, deriveKey, encryptSecret } from '../../lib/crypto.ts'
import { isUuid, newId } from '../../lib/ids.ts'
import { type PayoutFigures, payoutFigures } from '../../lib/money.ts'
import { iso } from '../../lib/time.ts'
import type { LedgerService, Posting } from '../ledger/service.ts'
import type { RateService } from '../rates/service.ts'
import type { WebhookService } from '../webhooks/service.ts'
import { checkDestination } from './destination.ts'
import * as repo from './repository.ts'
import type {
  CreatePayoutInput,
  ListPayoutsInput,
  PayoutQuoteInput,
  PayoutQuoteView,
  PayoutView,
} from './schemas.ts'
import { payoutTransition } from './state-machine.ts'

/** Payouts are paid from the merchant's USDT balance. */
export const PAYOUT_CURRENCY = 'USDT'
/** How long a quote holds its figures (contract §6.3). */
export const QUOTE_TTL_MS = 60_000

export interface PayoutTiming {
  /** How long a payout whose hand-over to the provider was interrupted waits before it is handed over again. */
  submitTimeoutMs: number
  /** How often a processing payout is checked with the provider. */
  pollIntervalMs: number
  /** How long a worker holds a payout it is checking. */
  leaseMs: number
}

const DEFAULT_TIMING: PayoutTiming = { submitTimeoutMs: 60_000, pollIntervalMs: 2000, leaseMs: 30_000 }

export type PayoutService = ReturnType<typeof createPayoutService>

/** The outcome of a create: the payout, and whether it was made by an earlier request with the same key. */
export interface CreatedPayout {
  payout: PayoutView
  replayed: boolean
}

/**
 * Payouts (contract §6.3), exactly once per Idempotency-Key. Creation reserves the total from the available
 * USDT balance together with the pending payout and its key, in one database transaction: a retry of the key
 * finds that payout and answers it, whatever instant the first request died at. The provider is then handed
 * the payout outside any database transaction (it is idempotent on the payout's uuid); a hand-over that a
 * crash or an unreachable provider cut off is made again by `checkDue` from the sealed destination. What the
 * provider says (at once, in a callback, or when a worker asks) is applied by the one handler, `applyOutcome`.
 */
export function createPayoutService(deps: {
  db: Db
  config: Config
  rates: RateService
  ledger: LedgerService
  webhooks: WebhookService
  connector: PaymentConnector
  timing?: Partial<PayoutTiming>
}) {
  const { db, config, rates, ledger, webhooks, connector } = deps
  const timing = { ...DEFAULT_TIMING, ...deps.timing }
  // The destination as the provider needs it (a full card number) is kept only sealed, and only until the
  // provider has taken the payout.
  const sealKey = deriveKey(config.masterKey, 'payout-destination')
  const seal = (order: Record<string, string>) => encryptSecret(sealKey, JSON.stringify(order))
  const unseal = (sealed: string) => JSON.parse(decryptSecret(sealKey, sealed)) as Record<string, string>

  function toView(row: PayoutRow): PayoutView {
    const destination = row.destination as Record<string, string>
    return {
      uuid: row.uuid,
      merchant_uuid: row.merchant_uuid,
      mode: row.mode,
      external_id: row.external_id,
      amount: row.amount,
      currency: row.currency,
      method: row.method,
      status: row.status,
      destination,
      metadata: row.metadata as Record<string, string> | null,
      callback_url: row.callback_url,
      failure_reason: row.failure_reason,
      payout_usdt_amount_micro: row.payout_usdt_amount_micro,
      quote_id: row.quote_uuid,
      fx: {
        fx_rate: row.fx_rate,
        fx_rate_updated_at: row.fx_rate_updated_at.toISOString(),
        amount_usdt_micro: String(row.amount_usdt_micro),
        fee_usdt_micro: String(row.fee_usdt_micro),
        payout_usdt_amount_micro: String(row.payout_usdt_amount_micro),
        ...(row.quote_uuid && { quote_id: row.quote_uuid }),
      },
      wallet:
        row.method === 'usdt_wallet'
          ? {
              uuid: row.wallet_uuid as string,
              type: destination.network as 'TRC20' | 'ERC20',
              address: destination.address as string,
              label: `USDT ${destination.network}`,
            }
          : null,
      card_payout:
        row.method === 'card'
          ? {
              card_number: destination.card_number as string,
              holder_name: destination.holder_name as string,
              brand: row.card_brand ?? 'unknown',
              last4: (destination.card_number as string).slice(-4),
            }
          : null,
      aggregate_version: row.aggregate_version,
      completed_at: iso(row.completed_at),
      failed_at: iso(row.failed_at),
      created_at: row.created_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
    }
  }

  /** The payout's movements of the merchant's USDT, one journal entry per kind and payout. */
  function posting(row: PayoutRow, kind: 'reserved' | 'completed' | 'released', at: Date): Posting {
    const total = row.payout_usdt_amount_micro
    const lines: Posting['lines'] = {
      // Creation: the total leaves what the merchant can spend and is held for the payout.
      reserved: [
        { account: 'available' as const, amount: -total },
        { account: 'reserved' as const, amount: total },
      ],
      // Paid out: the amount went to the beneficiary and the fee to the gateway.
      completed: [
        { account: 'reserved' as const, amount: -total },
        { account: 'payouts_out' as const, amount: row.amount_usdt_micro },
        { account: 'payout_fees' as const, amount: row.fee_usdt_micro },
      ],
      // Failed: the reservation returns to the available balance, fee included.
      released: [
        { account: 'reserved' as const, amount: -total },
        { account: 'available' as const, amount: total },
      ],
    }[kind]
    return {
      merchantUuid: row.merchant_uuid,
      mode: row.mode,
      kind: `payout_${kind}`,
      reference: { type: 'payout', uuid: row.uuid },
      currency: PAYOUT_CURRENCY,
      lines,
      at,
      mustStayNonNegative: kind === 'reserved' ? ['available'] : [],
    }
  }

  /** Figures for `amount` of `currency` at the merchant's payout rate and fees now. */
  async function figuresNow(auth: AuthContext, amount: number, currency: string) {
    const { merchant } = auth
    const rate = await rates.merchantRate(currency, PAYOUT_CURRENCY, merchant.fx_markup_bps)
    const figures = payoutFigures(
      amount,
      currency,
      rate.payout_rate,
      merchant.payout_fee_bps,
      Number(merchant.payout_fixed_fee_micro),
    )
    if (!figures) throw validationError('amount', 'is more than a payout can carry in USDT')
    return { rate: rate.payout_rate, rateUpdatedAt: rate.updated_at, figures }
  }

  /** The quote's held figures, when it is the caller's, unexpired, and for this amount, currency and method. */
  async function heldFigures(auth: AuthContext, input: CreatePayoutInput, quoteId: string, now: Date) {
    const quote: PayoutQuoteRow | undefined = await repo.findQuote(db, quoteId)
    if (
      !quote ||
      quote.merchant_uuid !== auth.merchant.uuid ||
      quote.mode !== auth.mode ||
      quote.expires_at <= now
    ) {
      throw new AppError('quote_expired', 'The quote has expired or is not yours: get a new one.', {
        quote_id: quoteId,
      })
    }
    if (quote.amount !== input.amount || quote.currency !== input.currency || quote.method !== input.method)
      throw validationError('quote_id', 'was made for another amount, currency or method')
    const figures: PayoutFigures = {
      amount_usdt_micro: quote.amount_usdt_micro,
      fee_usdt_micro: quote.fee_usdt_micro,
      payout_usdt_amount_micro: quote.payout_usdt_amount_micro,
    }
    return { rate: quote.fx_rate, rateUpdatedAt: quote.fx_rate_updated_at, figures }
  }

  /**
   * The one place a payout's status changes: under the row lock the caller holds, the provider's word is
   * recorded, and when it applies, each step bumps aggregate_version, moves the money and sends its event.
   */
  async function applyOutcome(
    trx: Executor,
    row: PayoutRow,
    outcome: PayoutOutcome,
    source: { connector: string; reference: string | null; message: string },
  ): Promise<PayoutRow> {
    const now = new Date()
    const result = payoutTransition(row.status, outcome)
    await repo.insertCallback(trx, {
      uuid: newId(),
      connector: source.connector,
      payout_uuid: row.uuid,
      outcome,
      provider_reference: source.reference,
      result: result.kind,
      from_status: row.status,
      to_status: result.kind === 'applied' ? (result.steps.at(-1) as PayoutStatus) : row.status,
      received_at: now,
    })
    if (result.kind !== 'applied') return row
    let current = row
    for (const step of result.steps) {
      current = await repo.updatePayout(trx, current.uuid, {
        status: step,
        aggregate_version: current.aggregate_version + 1,
        updated_at: now,
        // Taken by the provider, or refused: the destination is never needed again.
        destination_sealed: null,
        ...(step === 'processing' && {
          submitted_at: current.submitted_at ?? now,
          provider_reference: source.reference ?? current.provider_reference,
          next_check_at: new Date(now.getTime() + timing.pollIntervalMs),
        }),
        ...(step === 'completed' && { completed_at: now, next_check_at: null }),
        ...(step === 'failed' && { failed_at: now, failure_reason: source.message, next_check_at: null }),
      })
      if (step === 'completed') await ledger.post(trx, posting(current, 'completed', now))
      if (step === 'failed') await ledger.post(trx, posting(current, 'released', now))
      await webhooks.recordEvent(trx, {
        merchantUuid: current.merchant_uuid,
        mode: current.mode,
        event: `payout.${step}`,
        aggregateType: 'payout',
        aggregateUuid: current.uuid,
        aggregateVersion: current.aggregate_version,
        resource: toView(current),
        callbackUrl: current.callback_url,
        occurredAt: now,
      })
    }
    return current
  }

  /** Applies a provider's word about a payout in its own database transaction. */
  async function settle(
    payoutUuid: string,
    outcome: PayoutOutcome,
    source: { connector: string; reference: string | null; message: string },
  ): Promise<PayoutRow> {
    return db.transaction().execute(async (trx) => {
      const row = isUuid(payoutUuid) ? await repo.lockPayout(trx, payoutUuid) : undefined
      if (!row) throw notFound('payout')
      return applyOutcome(trx, row, outcome, source)
    })
  }

  /** What the provider answered, as an outcome: a payout it never received has failed. */
  const outcomeOf = (result: ProviderPayoutResult): PayoutOutcome =>
    result.status === 'unknown' ? 'failed' : result.status

  /**
   * Hands a pending payout to the provider and applies its answer. A provider that cannot be reached leaves the
   * payout pending, to be handed over again by `checkDue`: whether it took the payout is unknown, and a crash
   * or a cut connection of ours is no reason for the merchant's payout to fail.
   */
  async function handOver(row: PayoutRow, destination: Record<string, string>): Promise<PayoutRow> {
    let result: ProviderPayoutResult
    try {
      result = await connector.submitPayout({
        payoutUuid: row.uuid,
        method: row.method,
        amount: row.amount,
        currency: row.currency,
        amountUsdtMicro: row.amount_usdt_micro,
        destination,
      })
    } catch {
      return row
    }
    return settle(row.uuid, outcomeOf(result), {
      connector: connector.name,
      reference: result.reference,
      message: result.message,
    })
  }

  async function get(auth: AuthContext, uuid: string): Promise<PayoutRow> {
    const row = isUuid(uuid) ? await repo.findPayout(db, scopeOf(auth), uuid) : undefined
    if (!row) throw notFound('payout')
    return row
  }

  return {
    toView,

    async quote(auth: AuthContext, input: PayoutQuoteInput): Promise<PayoutQuoteView> {
      const { rate, rateUpdatedAt, figures } = await figuresNow(auth, input.amount, input.currency)
      const now = new Date()
      const quote = await repo.insertQuote(db, {
        uuid: newId(),
        merchant_uuid: auth.merchant.uuid,
        mode: auth.mode,
        amount: input.amount,
        currency: input.currency,
        method: input.method as PayoutQuoteRow['method'],
        fx_rate: rate,
        fx_rate_updated_at: rateUpdatedAt,
        ...figures,
        expires_at: new Date(now.getTime() + QUOTE_TTL_MS),
        created_at: now,
      })
      return {
        quote_id: quote.uuid,
        amount: quote.amount,
        currency: quote.currency,
        method: quote.method,
        fx_rate: quote.fx_rate,
        amount_usdt_micro: quote.amount_usdt_micro,
        fee_usdt_micro: quote.fee_usdt_micro,
        payout_usdt_amount_micro: quote.payout_usdt_amount_micro,
        expires_at: quote.expires_at.toISOString(),
      }
    },

    async create(
      auth: AuthContext,
      input: CreatePayoutInput,
      request: { idempotencyKey: string; actionRequestId: string },
    ): Promise<CreatedPayout> {
      // A payout this key made is the answer, before any rule (an expired quote, a spent balance) could
      // refuse the retry of a request that succeeded.
      const earlier = await repo.findByIdempotencyKey(db, scopeOf(auth), request.idempotencyKey)
      if (earlier) return { payout: toView(earlier), replayed: true }

      const method = input.method as PayoutRow['method']
      const destination = checkDestination(method, input.destination)
      if (input.callback_url) await webhooks.checkCallbackUrl(input.callback_url)
      const now = new Date()
      const { rate, rateUpdatedAt, figures } = input.quote_id
        ? await heldFigures(auth, input, input.quote_id, now)
        : await figuresNow(auth, input.amount, input.currency)

      // The intent: the payout, its key and its reservation, together or not at all.
      let created: PayoutRow
      try {
        created = await db.transaction().execute(async (trx) => {
          const row = await repo.insertPayout(trx, {
            uuid: newId(),
            merchant_uuid: auth.merchant.uuid,
            mode: auth.mode,
            external_id: input.external_id,
            amount: input.amount,
            currency: input.currency,
            method,
            destination: JSON.stringify(destination.shown),
            destination_sealed: seal(destination.order),
            card_brand: destination.cardBrand,
            wallet_uuid: destination.walletUuid,
            quote_uuid: input.quote_id ?? null,
            fx_rate: rate,
            fx_rate_updated_at: rateUpdatedAt,
            ...figures,
            status: 'pending',
            failure_reason: null,
            provider_reference: null,
            metadata: input.metadata ? JSON.stringify(input.metadata) : null,
            callback_url: input.callback_url ?? null,
            action_request_id: request.actionRequestId,
            idempotency_key: request.idempotencyKey,
            aggregate_version: 1,
            // Should the hand-over below be cut off, a worker hands it over again after this.
            next_check_at: new Date(now.getTime() + timing.submitTimeoutMs),
            created_at: now,
            updated_at: now,
          })
          await ledger.post(trx, posting(row, 'reserved', now))
          return row
        })
      } catch (error) {
        const external = isUniqueViolation(error, 'payouts_external_id_key')
        if (!external && !isUniqueViolation(error, 'payouts_idempotency_key')) throw error
        // A request with this key committed while this one ran: its payout is the answer, never a conflict.
        const made = await repo.findByIdempotencyKey(db, scopeOf(auth), request.idempotencyKey)
        if (made) return { payout: toView(made), replayed: true }
        throw new AppError('conflict', `A payout with external_id "${input.external_id}" already exists.`, {
          external_id: input.external_id,
        })
      }

      // The call, outside any database transaction.
      const row = await handOver(created, destination.order)
      return { payout: toView(row), replayed: false }
    },

    /** The payout this key made, as it stands: what a retry of a committed request replays. */
    async findByIdempotencyKey(
      scope: { merchantUuid: string; mode: AuthContext['mode'] },
      key: string,
    ): Promise<PayoutView | null> {
      const row = await repo.findByIdempotencyKey(db, scope, key)
      return row ? toView(row) : null
    },

    get: async (auth: AuthContext, uuid: string) => toView(await get(auth, uuid)),

    /** The caller's payout, or 404: what the sandbox checks before it simulates anything. */
    getOwned: get,

    async list(auth: AuthContext, query: ListPayoutsInput) {
      const perPage = query.per_page ?? 25
      const statuses = query.status ? [...new Set(query.status.split(','))].sort() : undefined
      const filters = { statuses, method: query.method, currency: query.currency }
      const digest = filterDigest({
        status: statuses?.join(','),
        method: query.method,
        currency: query.currency,
      })
      const cursor: Cursor | null = query.cursor ? decodeCursor(query.cursor, digest) : null
      const rows = await repo.listPage(db, scopeOf(auth), filters, cursor, perPage + 1)
      return cursorPage(
        rows,
        { perPage, cursor, digest, path: `${config.publicBaseUrl}/integration/payouts` },
        toView,
      )
    },

    /** Where a provider's payout callback enters: parsed by its connector, then the one handler. */
    async receiveProviderCallback(body: unknown): Promise<PayoutRow> {
      let callback: ReturnType<PaymentConnector['parsePayoutCallback']>
      try {
        callback = connector.parsePayoutCallback(body)
      } catch (error) {
        throw new AppError('malformed_request', (error as Error).message)
      }
      return settle(callback.payoutUuid, callback.outcome, callback)
    },

    /**
     * Asks the provider about up to `limit` open payouts whose check is due (processing ones, and pending ones
     * whose hand-over was cut off) and applies what it says. Any number of workers may run it at once.
     */
    async checkDue(limit = 100, now = new Date()): Promise<number> {
      const claimed = await repo.claimDue(db, now, new Date(now.getTime() + timing.leaseMs), limit)
      for (const row of claimed) {
        // A hand-over that never got its answer is made again (the provider is idempotent on the uuid).
        if (row.status === 'pending' && row.destination_sealed) {
          await handOver(row, unseal(row.destination_sealed))
          continue
        }
        let result: ProviderPayoutResult
        try {
          result = await connector.payoutStatus({
            payoutUuid: row.uuid,
            reference: row.provider_reference,
            submittedAt: row.submitted_at,
          })
        } catch {
          continue // asked again when the lease runs out
        }
        if (result.status === 'processing' && row.status === 'processing') {
          await repo.updatePayout(db, row.uuid, {
            next_check_at: new Date(Date.now() + timing.pollIntervalMs),
          })
          continue
        }
        await settle(row.uuid, outcomeOf(result), {
          connector: connector.name,
          reference: result.reference,
          message: result.message,
        })
      }
      return claimed.length
    },

    listProviderCallbacks: (uuid: string) => repo.listCallbacks(db, uuid),

    /** Drops quotes that can no longer be used. */
    purgeQuotes: (before = new Date(Date.now() - QUOTE_TTL_MS)) => repo.deleteQuotesExpiredBefore(db, before),
  }
}

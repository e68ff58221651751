import type { Updateable } from 'kysely'
import type { PaymentConnector, PayoutOutcome, ProviderPayoutResult } from '../../connectors/types.ts'
import type { Executor } from '../../db/index.ts'
import type { PayoutRow, PayoutStatus, PayoutsTable } from '../../db/types.ts'
import { AppError, notFound } from '../../http/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import { applyProviderOutcome, type StatusTable } from '../status-change.ts'
import type { PayoutDeps } from './deps.ts'
import { payoutPosting } from './postings.ts'
import * as repo from './repository.ts'
import { payoutTransition } from './state-machine.ts'
import { payoutView } from './view.ts'

/** What the provider said, and where it came from. */
export interface PayoutSource {
  connector: string
  reference: string | null
  message: string
}

/** How a payout's status change is written and shown in its event. */
const payoutsTable: StatusTable<PayoutRow, PayoutStatus, Updateable<PayoutsTable>> = {
  aggregateType: 'payout',
  write: (trx, uuid, { status, fields, aggregate_version, updated_at }) =>
    repo.updatePayout(trx, uuid, { status, aggregate_version, updated_at, ...fields }),
  toView: payoutView,
}

/**
 * The one place a payout's status changes: under the row lock the caller holds, the provider's word is
 * recorded, and when it applies, each step bumps aggregate_version, moves the money and sends its event.
 */
export async function applyPayoutOutcome(
  deps: Pick<PayoutDeps, 'ledger' | 'webhooks' | 'timing'>,
  trx: Executor,
  row: PayoutRow,
  outcome: PayoutOutcome,
  source: PayoutSource,
): Promise<PayoutRow> {
  const now = new Date()
  const result = payoutTransition(row.status, outcome)
  const applied = await applyProviderOutcome(deps, trx, payoutsTable, row, {
    outcome,
    source,
    result:
      result.kind === 'applied'
        ? { kind: 'applied', steps: result.steps.map((to) => ({ to, event: `payout.${to}` as const })) }
        : result,
    at: now,
    record: ({ uuid, connector, ...word }) =>
      repo.insertCallback(trx, { uuid, connector, payout_uuid: row.uuid, ...word }),
    plan: async (current, step) => ({
      fields: {
        // Taken by the provider, or refused: the destination is never needed again.
        destination_sealed: null,
        ...(step === 'processing' && {
          submitted_at: current.submitted_at ?? now,
          provider_reference: source.reference ?? current.provider_reference,
          next_check_at: new Date(now.getTime() + deps.timing.pollIntervalMs),
        }),
        ...(step === 'completed' && { completed_at: now, next_check_at: null }),
        ...(step === 'failed' && { failed_at: now, failure_reason: source.message, next_check_at: null }),
      },
      post: async (updated) => {
        if (step === 'completed') await deps.ledger.post(trx, payoutPosting(updated, 'completed', now))
        if (step === 'failed') await deps.ledger.post(trx, payoutPosting(updated, 'released', now))
      },
    }),
  })
  return applied.row
}

/** Applies a provider's word about a payout in its own database transaction. */
export async function settlePayout(
  deps: Pick<PayoutDeps, 'db' | 'ledger' | 'webhooks' | 'timing'>,
  payoutUuid: string,
  outcome: PayoutOutcome,
  source: PayoutSource,
): Promise<PayoutRow> {
  return deps.db.transaction().execute(async (trx) => {
    const row = isUuid(payoutUuid) ? await repo.lockPayout(trx, payoutUuid) : undefined
    if (!row) throw notFound('payout')
    return applyPayoutOutcome(deps, trx, row, outcome, source)
  })
}

/** The provider's answer to `ask`, or null when it could not be reached: whether it acted is then unknown. */
export async function providerAnswer(
  ask: () => Promise<ProviderPayoutResult>,
): Promise<ProviderPayoutResult | null> {
  try {
    return await ask()
  } catch {
    return null
  }
}

/** Applies what the provider answered about a payout: one it never received has failed. */
export const settleProviderAnswer = (
  deps: Pick<PayoutDeps, 'db' | 'ledger' | 'webhooks' | 'timing' | 'connector'>,
  payoutUuid: string,
  result: ProviderPayoutResult,
): Promise<PayoutRow> =>
  settlePayout(deps, payoutUuid, result.status === 'unknown' ? 'failed' : result.status, {
    connector: deps.connector.name,
    reference: result.reference,
    message: result.message,
  })

/**
 * Hands a pending payout to the provider and applies its answer. A provider that cannot be reached leaves the
 * payout pending, to be handed over again by `checkDuePayouts`: whether it took the payout is unknown, and a
 * crash or a cut connection of ours is no reason for the merchant's payout to fail.
 */
export async function handOverPayout(
  deps: Pick<PayoutDeps, 'db' | 'ledger' | 'webhooks' | 'timing' | 'connector'>,
  row: PayoutRow,
  destination: Record<string, string>,
): Promise<PayoutRow> {
  const result = await providerAnswer(() =>
    deps.connector.submitPayout({
      payoutUuid: row.uuid,
      method: row.method,
      amount: row.amount,
      currency: row.currency,
      amountUsdtMicro: row.amount_usdt_micro,
      destination,
    }),
  )
  return result ? settleProviderAnswer(deps, row.uuid, result) : row
}

/** Where a provider's payout callback enters: parsed by its connector, then the one handler. */
export async function receivePayoutCallback(
  deps: Pick<PayoutDeps, 'db' | 'ledger' | 'webhooks' | 'timing' | 'connector'>,
  body: unknown,
): Promise<PayoutRow> {
  let callback: ReturnType<PaymentConnector['parsePayoutCallback']>
  try {
    callback = deps.connector.parsePayoutCallback(body)
  } catch (error) {
    throw new AppError('malformed_request', (error as Error).message)
  }
  return settlePayout(deps, callback.payoutUuid, callback.outcome, callback)
}

import type { Updateable } from 'kysely'
import type {
  ObjectReport,
  ObjectReportResult,
  PaymentConnector,
  PayoutOutcome,
  ProviderPayoutResult,
} from '../../connectors/types.ts'
import type { Executor } from '../../db/index.ts'
import type { PayoutRow, PayoutStatus, PayoutsTable } from '../../db/types.ts'
import { AppError, notFound } from '../../http/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import { payoutHandoversUnanswered } from '../../lib/metrics.ts'
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
  /** The chain transaction that moves the money, when the account pays on a chain itself. */
  transactionHash?: string
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
        ...(source.transactionHash && { transaction_hash: source.transactionHash }),
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

/**
 * Applies a provider's word about a payout in its own database transaction. `simulatorOnly`: the word is the
 * simulator's (the sandbox's), which has no say over a payout a connector account has.
 */
export async function settlePayout(
  deps: Pick<PayoutDeps, 'db' | 'ledger' | 'webhooks' | 'timing'>,
  payoutUuid: string,
  outcome: PayoutOutcome,
  source: PayoutSource,
  simulatorOnly = false,
): Promise<PayoutRow> {
  return deps.db.transaction().execute(async (trx) => {
    const row = isUuid(payoutUuid) ? await repo.lockPayout(trx, payoutUuid) : undefined
    if (!row) throw notFound('payout')
    if (simulatorOnly && row.account_uuid)
      throw new AppError(
        'sandbox_unavailable',
        'This payout is with a payment provider, which decides it: the sandbox cannot.',
      )
    return applyPayoutOutcome(deps, trx, row, outcome, source)
  })
}

/**
 * A connector account's report (a verified callback) on the payout it has under `reference`, applied in the
 * caller's transaction; null when it has none under that reference.
 */
export async function applyPayoutReport(
  deps: Pick<PayoutDeps, 'ledger' | 'webhooks' | 'timing'>,
  trx: Executor,
  { accountUuid, reference, outcome, connector, message }: ObjectReport<Exclude<PayoutOutcome, 'processing'>>,
): Promise<ObjectReportResult | null> {
  const row = await repo.lockByAccountReference(trx, accountUuid, reference)
  if (!row) return null
  const { kind } = payoutTransition(row.status, outcome)
  await applyPayoutOutcome(deps, trx, row, outcome, { connector, reference, message })
  return { uuid: row.uuid, result: kind }
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

/** A provider's answer about a payout, and the name of the connector (or account) that gave it. */
export interface PayoutAnswer extends ProviderPayoutResult {
  connector: string
  transactionHash?: string
}

/** Applies what the provider answered about a payout: one it never received has failed. */
export const settleProviderAnswer = (
  deps: Pick<PayoutDeps, 'db' | 'ledger' | 'webhooks' | 'timing'>,
  payoutUuid: string,
  result: PayoutAnswer,
): Promise<PayoutRow> =>
  settlePayout(deps, payoutUuid, result.status === 'unknown' ? 'failed' : result.status, {
    connector: result.connector,
    reference: result.reference,
    message: result.message,
    transactionHash: result.transactionHash,
  })

/** What the payout's provider message says once its account's provider has spoken. */
const ACCOUNT_MESSAGES: Record<PayoutOutcome | 'unknown', string> = {
  processing: 'Payout accepted by the provider.',
  completed: 'Paid out by the provider.',
  failed: 'The provider reports the payout failed.',
  unknown: 'The provider never received this payout.',
}

type ProcessDeps = Pick<
  PayoutDeps,
  'db' | 'ledger' | 'webhooks' | 'timing' | 'connector' | 'providers' | 'log'
>

/** The payout as it is handed to a provider; its uuid is the hand-over's idempotency key. */
const orderOf = (row: PayoutRow, destination: Record<string, string>) => ({
  payoutUuid: row.uuid,
  method: row.method,
  amount: row.amount,
  currency: row.currency,
  amountUsdtMicro: row.amount_usdt_micro,
  destination,
})

/** Hands the payout to its provider (again: idempotent on its uuid); null when no usable answer came. */
async function submitToProvider(
  deps: ProcessDeps,
  row: PayoutRow,
  destination: Record<string, string>,
): Promise<PayoutAnswer | null> {
  if (!row.account_uuid) {
    const result = await providerAnswer(() => deps.connector.submitPayout(orderOf(row, destination)))
    return result && { ...result, connector: deps.connector.name }
  }
  const accountUuid = row.account_uuid
  return answerOf(async () => {
    const { account, connector } = await deps.providers.accounts.connector(accountUuid)
    const answer = await connector.submitPayout(orderOf(row, destination))
    if (answer.kind === 'no_answer') {
      // The payout stays pending and is handed over again at its next check: the operator is told why.
      payoutHandoversUnanswered.inc({ account: account.name })
      deps.log?.warn(
        { payout: row.uuid, account: account.name, reason: answer.reason },
        'payout hand-over got no answer; it is handed over again at its next check',
      )
      return null
    }
    if (answer.kind === 'refused')
      return {
        status: 'failed',
        reference: null,
        message: `The provider refused the payout: ${answer.code}: ${answer.message}`.slice(0, 500),
        connector: account.name,
      }
    const { reference, status, transactionHash } = answer
    return { status, reference, message: ACCOUNT_MESSAGES[status], connector: account.name, transactionHash }
  })
}

/** How a payout handed over stands at its provider; null when no usable answer came. */
export async function askPayoutStatus(deps: ProcessDeps, row: PayoutRow): Promise<PayoutAnswer | null> {
  if (!row.account_uuid) {
    const result = await providerAnswer(() =>
      deps.connector.payoutStatus({
        payoutUuid: row.uuid,
        reference: row.provider_reference,
        submittedAt: row.submitted_at,
      }),
    )
    return result && { ...result, connector: deps.connector.name }
  }
  const { account_uuid: accountUuid, provider_reference: reference } = row
  // An account's payout is processing only once the account answered its reference.
  if (!reference) return null
  return answerOf(async () => {
    const { account, connector } = await deps.providers.accounts.connector(accountUuid)
    const status = await connector.payoutStatus(reference)
    if (status.kind === 'no_answer') return null
    const known = status.kind === 'known' ? status.status : 'unknown'
    const transactionHash = status.kind === 'known' ? status.transactionHash : undefined
    return {
      status: known,
      reference,
      message: ACCOUNT_MESSAGES[known],
      connector: account.name,
      transactionHash,
    }
  })
}

/** `ask`'s answer; null when it throws (an account that cannot be built, a connection that broke). */
async function answerOf(ask: () => Promise<PayoutAnswer | null>): Promise<PayoutAnswer | null> {
  try {
    return await ask()
  } catch {
    return null
  }
}

/**
 * Hands a pending payout to its provider (the connector account of its route, or the simulator) and applies its
 * answer. A provider that cannot be reached leaves the payout pending, to be handed over again by
 * `checkDuePayouts`: whether it took the payout is unknown, and a crash or a cut connection of ours is no reason
 * for the merchant's payout to fail.
 */
export async function handOverPayout(
  deps: ProcessDeps,
  row: PayoutRow,
  destination: Record<string, string>,
): Promise<PayoutRow> {
  const result = await submitToProvider(deps, row, destination)
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
  return settlePayout(deps, callback.payoutUuid, callback.outcome, callback, true)
}

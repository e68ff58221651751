import type { Selectable } from 'kysely'
import type { PaymentHandoversTable, TransactionRow } from '../../db/types.ts'
import type { TransactionDeps } from './deps.ts'
import { failHandedOver, handoverLeaseMs, orderOf, recordAccepted, tryAccounts } from './handover.ts'
import * as repo from './repository.ts'
import { applyProviderReport } from './status.ts'

type Deps = Pick<TransactionDeps, 'db' | 'config' | 'merchants' | 'ledger' | 'webhooks' | 'providers'>
type Handover = Selectable<PaymentHandoversTable>

/** Statuses that no provider's word can change any more: status sync stops asking. */
const SETTLED = new Set(['paid', 'partially_refunded', 'refunded', 'failed'])
/** How many providers' answers one worker waits on at once. */
const CONCURRENCY = 16

/** What one ask came to: a next ask to schedule with the batch's, or nothing more to do. */
type Next = { transactionUuid: string; due: Date; count: number } | null

/**
 * Status sync (docs/OPERATIONS.md, Hand-over and status sync): up to `limit` payments whose ask is due are claimed
 * (a lease, so a killed worker's claim comes back) and their providers asked, 16 at a time. What a provider answers
 * goes through the same handler as its callback. A hand-over a killed process left unfinished is finished with the
 * same idempotent call. The batch's payments are read in one statement, and their next asks written in one.
 * Answers how many it asked about.
 */
export async function syncHandedOverPayments(deps: Deps, limit = 100, now = new Date()): Promise<number> {
  const leaseMs = handoverLeaseMs(deps)
  const due = await deps.providers.handovers.claimDue(now, limit, leaseMs)
  if (due.length === 0) return 0
  const rows = new Map(
    (
      await repo.findManyByUuid(
        deps.db,
        due.map((h) => h.transaction_uuid),
      )
    ).map((row) => [row.uuid, row]),
  )
  const connectors = new Map<string, ReturnType<Deps['providers']['accounts']['connector']>>()
  const connectorOf = (accountUuid: string) => {
    let connector = connectors.get(accountUuid)
    if (!connector) {
      connector = deps.providers.accounts.connector(accountUuid)
      connectors.set(accountUuid, connector)
    }
    return connector
  }
  const next: NonNullable<Next>[] = []
  for (let i = 0; i < due.length; i += CONCURRENCY)
    for (const planned of await Promise.all(
      due
        .slice(i, i + CONCURRENCY)
        .map((handover) => syncOne(deps, handover, rows.get(handover.transaction_uuid), connectorOf, now)),
    ))
      if (planned) next.push(planned)
  await deps.providers.handovers.scheduleMany(deps.db, next, new Date(now.getTime() + leaseMs), now)
  return due.length
}

/** The payment's route today, past the accounts it was already tried with, its tries numbered from `from`. */
async function passOn(deps: Deps, row: TransactionRow, from: number): Promise<void> {
  const tried = new Set((await deps.providers.handovers.attempts(row.uuid)).map((attempt) => attempt.account))
  const route = await deps.providers.routes.resolve({
    merchantUuid: row.merchant_uuid,
    mode: row.mode,
    subject: 'payment',
    method: row.payment_method,
    currency: row.currency,
  })
  await tryAccounts(
    deps,
    row,
    route.filter((account) => !tried.has(account.name)),
    from,
  )
}

async function syncOne(
  deps: Deps,
  handover: Handover,
  row: TransactionRow | undefined,
  connectorOf: (accountUuid: string) => ReturnType<Deps['providers']['accounts']['connector']>,
  now: Date,
): Promise<Next> {
  const records = deps.providers.handovers
  if (!row || SETTLED.has(row.status)) {
    await records.close(deps.db, handover.transaction_uuid, 'final', now)
    return null
  }
  const { account, connector } = await connectorOf(handover.account_uuid)
  if (handover.state === 'handing_over') {
    const attempt = await records.startedAttempt(deps.db, row.uuid)
    if (attempt) {
      const answer = await connector.createPayment(orderOf(deps, row))
      if (answer.kind === 'accepted') {
        await recordAccepted(deps, row, attempt.uuid, answer)
        return null
      }
      if (answer.kind === 'refused') {
        // Refused as a live try would be: the payment goes on to the rest of its route, as the try would have.
        await records.tryFailed(deps.db, attempt.uuid, 'refused', `${answer.code}: ${answer.message}`, now)
        await passOn(deps, row, attempt.position + 1)
        return null
      }
    }
    return scheduleNext(deps, handover, row, now, 'no_answer')
  }
  if (!handover.provider_reference) return scheduleNext(deps, handover, row, now, 'no_answer')
  const status = await connector.paymentStatus(handover.provider_reference)
  if (status.kind === 'known' && status.status !== 'pending') {
    const applied = await deps.db.transaction().execute(async (trx) => {
      const report = await applyProviderReport(deps, trx, row.uuid, {
        outcome: status.status as Exclude<typeof status.status, 'pending'>,
        amount: status.amount,
        currency: status.currency,
        connector: account.name,
        reference: null,
        accountUuid: account.uuid,
      })
      if (SETTLED.has(report.row.status)) await records.close(trx, row.uuid, 'final', now)
      return report
    })
    if (SETTLED.has(applied.row.status)) return null
    return scheduleNext(deps, handover, applied.row, now, status.kind)
  }
  return scheduleNext(deps, handover, row, now, status.kind)
}

/**
 * The next ask, by the schedule; past the payment's expiry and the grace there is none, and a payment its
 * provider never heard of fails then.
 */
async function scheduleNext(
  deps: Deps,
  handover: Handover,
  row: TransactionRow,
  now: Date,
  answer: 'known' | 'unknown' | 'no_answer',
): Promise<Next> {
  const { scheduleMs, graceMs } = deps.config.providerSync
  const count = handover.sync_count + 1
  const interval = scheduleMs[Math.min(count, scheduleMs.length - 1)] as number
  const due = new Date(now.getTime() + interval)
  if (due.getTime() <= row.expires_at.getTime() + graceMs) return { transactionUuid: row.uuid, due, count }
  if (answer === 'unknown' && row.status === 'pending') await failHandedOver(deps, row.uuid, 'status-sync')
  else await deps.providers.handovers.close(deps.db, row.uuid, 'final', now)
  return null
}

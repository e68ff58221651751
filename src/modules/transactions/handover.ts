import type { PaymentOrder, ProviderPayment } from '../../connectors/types.ts'
import type { TransactionRow } from '../../db/types.ts'
import { isUniqueViolation } from '../../db/unique.ts'
import type { RoutedAccount } from '../providers/service.ts'
import type { TransactionDeps } from './deps.ts'
import * as repo from './repository.ts'
import { applyTransactionOutcome } from './status.ts'

type Deps = Pick<TransactionDeps, 'db' | 'config' | 'merchants' | 'ledger' | 'webhooks' | 'providers'>

/**
 * How long a try may take before status sync takes the payment over (PROVIDER_HANDOVER_LEASE_MS, 30 s): past the
 * account's time-out, so a live try is never raced, and bounded so that a process killed mid-call leaves the
 * payment waiting that long at most.
 */
export const handoverLeaseMs = (deps: Pick<TransactionDeps, 'config'>) =>
  deps.config.providerSync.handoverLeaseMs

/** Where the provider's payment page sends the customer back: the hosted page, told the customer is back. */
export const returnUrlOf = (deps: Pick<TransactionDeps, 'config'>, row: TransactionRow) =>
  `${deps.config.publicBaseUrl}/pay/${row.payment_token}?returned=1`

/** The payment as it is handed to a provider; its uuid is the hand-over's idempotency key. */
export const orderOf = (deps: Pick<TransactionDeps, 'config'>, row: TransactionRow): PaymentOrder => ({
  paymentUuid: row.uuid,
  amount: row.amount,
  grossAmount: row.gross_amount,
  currency: row.currency,
  method: row.payment_method,
  returnUrl: returnUrlOf(deps, row),
  description: row.description,
})

/**
 * Hands a payment to the accounts of its route in order (docs/API.md, Live payments): the first that takes it
 * has it; one that refuses or gives no answer passes it on, each try recorded. The first try was begun with the
 * payment's insert (`firstAttempt`); each next one is begun before its call. A payment no account took fails.
 *
 * A try that got no answer may have left a payment at that provider, but its payment page never reaches the
 * customer (only the account that took the payment has its page shown), so the customer can be charged by one
 * provider only.
 */
export function handOverPayment(
  deps: Deps,
  row: TransactionRow,
  accounts: RoutedAccount[],
  firstAttempt: string,
): Promise<TransactionRow> {
  return tryAccounts(deps, row, accounts, 0, firstAttempt)
}

/**
 * Hands the payment to `accounts` in order, their tries numbered from `from` (the first one already begun as
 * `begun`, when given): the first that takes it has it; a refusal or no answer passes it on; none: it fails. Stops
 * where the hand-over has moved on without it (status sync, or the try it raced, finished it).
 */
export async function tryAccounts(
  deps: Deps,
  row: TransactionRow,
  accounts: RoutedAccount[],
  from: number,
  begun?: string,
): Promise<TransactionRow> {
  const records = deps.providers.handovers
  const order = orderOf(deps, row)
  for (const [index, account] of accounts.entries()) {
    const attempt =
      index === 0 && begun !== undefined ? begun : await beginTry(deps, row.uuid, account.uuid, from + index)
    if (attempt === null) return (await repo.findAnyByUuid(deps.db, row.uuid)) as TransactionRow
    const { connector } = await deps.providers.accounts.connector(account.uuid)
    const answer = await connector.createPayment(order)
    if (answer.kind === 'accepted') return recordAccepted(deps, row, attempt, answer)
    await records.tryFailed(
      deps.db,
      attempt,
      answer.kind,
      answer.kind === 'refused' ? `${answer.code}: ${answer.message}` : answer.reason,
      new Date(),
    )
  }
  return failHandedOver(deps, row.uuid, 'routing', { unlessTaken: true })
}

/**
 * The try at `position` begins with `accountUuid`; null when the hand-over no longer waits on a try, or when a
 * concurrent hand-over of the same payment began that try first (its begin is then undone).
 */
const beginTry = (deps: Deps, transactionUuid: string, accountUuid: string, position: number) =>
  deps.db
    .transaction()
    .execute((trx) =>
      deps.providers.handovers.next(trx, {
        transactionUuid,
        accountUuid,
        position,
        at: new Date(),
        leaseMs: handoverLeaseMs(deps),
      }),
    )
    .catch((error: unknown) => {
      if (isUniqueViolation(error, 'payment_attempts_position')) return null
      throw error
    })

/** No provider has the payment: it fails now, and the merchant is told as for any failed payment. */
export function failHandedOver(
  deps: Deps,
  uuid: string,
  connector: string,
  /** Only while the hand-over still waits on a try: a repeat of one (status sync's) may have been taken. */
  options: { unlessTaken?: boolean } = {},
): Promise<TransactionRow> {
  return deps.db.transaction().execute(async (trx) => {
    const locked = (await repo.lockByUuid(trx, uuid)) as TransactionRow
    const records = deps.providers.handovers
    if (!options.unlessTaken) await records.close(trx, uuid, 'failed', new Date())
    else if (!(await records.giveUp(trx, uuid, new Date()))) return locked
    return (await applyTransactionOutcome(deps, trx, locked, 'failed', { connector, reference: null })).row
  })
}

/**
 * The provider took the payment: its reference, page and requisites are kept, and status sync is scheduled; unless
 * the hand-over has moved on from this try meanwhile, which then only records what the provider answered.
 */
export function recordAccepted(
  deps: Deps,
  row: TransactionRow,
  attempt: string,
  payment: ProviderPayment,
): Promise<TransactionRow> {
  return deps.db.transaction().execute(async (trx) => {
    const at = new Date()
    const first = deps.config.providerSync.scheduleMs[0] ?? 60_000
    const kept = await deps.providers.handovers.accepted(trx, {
      transactionUuid: row.uuid,
      attemptUuid: attempt,
      payment,
      at,
      syncAt: new Date(at.getTime() + first),
    })
    if (!kept || !payment.requisites) return row
    // A host-to-host payment shows the requisites its provider gave.
    return repo.updateTransaction(trx, row.uuid, { requisites: JSON.stringify(payment.requisites) })
  })
}

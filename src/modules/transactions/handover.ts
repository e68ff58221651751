import type { PaymentOrder, ProviderPayment } from '../../connectors/types.ts'
import type { TransactionRow } from '../../db/types.ts'
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
export async function handOverPayment(
  deps: Deps,
  row: TransactionRow,
  accounts: RoutedAccount[],
  firstAttempt: string,
): Promise<TransactionRow> {
  const records = deps.providers.handovers
  const order = orderOf(deps, row)
  for (const [position, account] of accounts.entries()) {
    const attempt =
      position === 0
        ? firstAttempt
        : await deps.db.transaction().execute((trx) =>
            records.next(trx, {
              transactionUuid: row.uuid,
              accountUuid: account.uuid,
              position,
              at: new Date(),
              leaseMs: handoverLeaseMs(deps),
            }),
          )
    // Status sync finished the hand-over meanwhile: it made the try before again, which outlasted its lease.
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
  return failHandedOver(deps, row.uuid, 'routing')
}

/** No provider has the payment: it fails now, and the merchant is told as for any failed payment. */
export function failHandedOver(deps: Deps, uuid: string, connector: string): Promise<TransactionRow> {
  return deps.db.transaction().execute(async (trx) => {
    const locked = (await repo.lockByUuid(trx, uuid)) as TransactionRow
    await deps.providers.handovers.close(trx, uuid, 'failed', new Date())
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

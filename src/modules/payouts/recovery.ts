import type { PayoutDeps } from './deps.ts'
import { unsealDestination } from './destination.ts'
import { askPayoutStatus, handOverPayout, settleProviderAnswer } from './process.ts'
import * as repo from './repository.ts'

/**
 * Asks the provider about up to `limit` open payouts whose check is due (processing ones, and pending ones
 * whose hand-over was cut off) and applies what it says. Any number of workers may run it at once.
 */
export async function checkDuePayouts(
  deps: Pick<PayoutDeps, 'db' | 'ledger' | 'webhooks' | 'timing' | 'connector' | 'providers' | 'sealKey'>,
  limit = 100,
  now = new Date(),
): Promise<number> {
  const { db, timing } = deps
  const claimed = await repo.claimDue(db, now, new Date(now.getTime() + timing.leaseMs), limit)
  for (const row of claimed) {
    // A hand-over that never got its answer is made again (the provider is idempotent on the uuid).
    if (row.status === 'pending' && row.destination_sealed) {
      await handOverPayout(deps, row, unsealDestination(deps.sealKey, row.destination_sealed))
      continue
    }
    const result = await askPayoutStatus(deps, row)
    if (!result) continue // asked again when the lease runs out
    if (result.status === 'processing' && row.status === 'processing') {
      await repo.updatePayout(db, row.uuid, {
        next_check_at: new Date(Date.now() + timing.pollIntervalMs),
      })
      continue
    }
    await settleProviderAnswer(deps, row.uuid, result)
  }
  return claimed.length
}

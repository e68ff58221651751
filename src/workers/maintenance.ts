import type { FastifyBaseLogger } from 'fastify'
import { purgeExpiredIdempotencyKeys } from '../db/idempotency-keys.ts'
import type { Db } from '../db/index.ts'
import type { PayoutService } from '../modules/payouts/service.ts'

/**
 * Housekeeping that runs outside requests: idempotency keys past their 7-day retention are purged, and payout
 * quotes that can no longer be used are dropped.
 */
export function startMaintenance(
  db: Db,
  log: FastifyBaseLogger,
  payouts: PayoutService,
  intervalMs = 3_600_000,
): { stop(): void } {
  const run = async () => {
    try {
      const purged = await purgeExpiredIdempotencyKeys(db)
      if (purged) log.info({ purged }, 'purged expired idempotency keys')
      const quotes = Number((await payouts.purgeQuotes()).numDeletedRows)
      if (quotes) log.info({ quotes }, 'purged expired payout quotes')
    } catch (err) {
      log.error({ err }, 'maintenance failed')
    }
  }
  void run()
  const timer = setInterval(run, intervalMs)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}

import type { FastifyBaseLogger } from 'fastify'
import type { Db } from '../db/index.ts'
import { purgeExpiredIdempotencyKeys } from '../http/idempotency.ts'

/** Housekeeping that runs outside requests: idempotency keys past their 7-day retention are purged. */
export function startMaintenance(db: Db, log: FastifyBaseLogger, intervalMs = 3_600_000): { stop(): void } {
  const run = async () => {
    try {
      const purged = await purgeExpiredIdempotencyKeys(db)
      if (purged) log.info({ purged }, 'purged expired idempotency keys')
    } catch (err) {
      log.error({ err }, 'idempotency key purge failed')
    }
  }
  void run()
  const timer = setInterval(run, intervalMs)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}

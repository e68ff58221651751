import type { FastifyBaseLogger } from 'fastify'
import { purgeExpiredIdempotencyKeys } from '../db/idempotency-keys.ts'
import type { Db } from '../db/index.ts'
import type { PayoutService } from '../modules/payouts/service.ts'
import type { ProviderService } from '../modules/providers/service.ts'
import type { UserService } from '../modules/users/service.ts'
import type { WebhookService } from '../modules/webhooks/service.ts'

/** The services housekeeping asks to drop what they no longer need. */
export interface MaintenanceServices {
  payouts: Pick<PayoutService, 'purgeQuotes'>
  webhooks: Pick<WebhookService, 'purgeEvents'>
  users: Pick<UserService, 'purgeSessions'>
  providers: { callbacks: Pick<ProviderService['callbacks'], 'purge'> }
}

/**
 * One round of housekeeping: idempotency keys past their 7-day retention are purged, payout quotes that can no
 * longer be used are dropped, events past EVENT_RETENTION_DAYS go with their deliveries, dashboard sessions
 * that ended more than 7 days ago are deleted, and so are providers' callbacks past PROVIDER_CALLBACK_RETENTION_DAYS. A failure is logged, and the next round tries again.
 */
export async function runMaintenance(
  db: Db,
  log: FastifyBaseLogger,
  services: MaintenanceServices,
): Promise<void> {
  try {
    const purged = await purgeExpiredIdempotencyKeys(db)
    if (purged) log.info({ purged }, 'purged expired idempotency keys')
    const quotes = Number((await services.payouts.purgeQuotes()).numDeletedRows)
    if (quotes) log.info({ quotes }, 'purged expired payout quotes')
    const events = await services.webhooks.purgeEvents()
    if (events) log.info({ events }, 'purged events past their retention')
    const sessions = await services.users.purgeSessions()
    if (sessions) log.info({ sessions }, 'purged ended dashboard sessions')
    const callbacks = await services.providers.callbacks.purge()
    if (callbacks) log.info({ callbacks }, "purged providers' callbacks past their retention")
  } catch (err) {
    log.error({ err }, 'maintenance failed')
  }
}

/** Housekeeping at start and then every `intervalMs` (an hour). */
export function startMaintenance(
  db: Db,
  log: FastifyBaseLogger,
  services: MaintenanceServices,
  intervalMs = 3_600_000,
): { stop(): void } {
  const run = () => runMaintenance(db, log, services)
  void run()
  const timer = setInterval(run, intervalMs)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}

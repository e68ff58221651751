import type { WebhookDeps } from './deps.ts'
import * as deliveryRepo from './repository/deliveries.ts'
import * as eventRepo from './repository/events.ts'

const DAY_MS = 86_400_000

/**
 * Deletes the events older than the retention (EVENT_RETENTION_DAYS, at least 30 days) with their deliveries and
 * the deliveries' attempts, in batches of `batch`, each batch one transaction. An event whose delivery is still
 * pending (a redelivery asked for, a retry due) stays until its delivery is final. Any number of workers may
 * run it at once. Returns how many events it deleted.
 */
export async function purgeExpiredEvents(
  deps: Pick<WebhookDeps, 'db' | 'config'>,
  now = new Date(),
  batch = 500,
): Promise<number> {
  const before = new Date(now.getTime() - deps.config.eventRetentionDays * DAY_MS)
  let purged = 0
  for (;;) {
    const { found, deleted } = await deps.db.transaction().execute(async (trx) => {
      const candidates = await eventRepo.lockExpiredEvents(trx, before, batch)
      if (candidates.length === 0) return { found: 0, deleted: 0 }
      const deliveries = await deliveryRepo.lockDeliveriesOf(trx, candidates)
      // Pending since the candidates were chosen (a redelivery): kept, like any event still being delivered.
      const busy = new Set(deliveries.filter((d) => d.status === 'pending').map((d) => d.event_id))
      await deliveryRepo.deleteDeliveries(
        trx,
        deliveries.filter((d) => !busy.has(d.event_id)).map((d) => d.uuid),
      )
      const count = await eventRepo.deleteEvents(
        trx,
        candidates.filter((uuid) => !busy.has(uuid)),
      )
      return { found: candidates.length, deleted: count }
    })
    purged += deleted
    if (found < batch) return purged
  }
}

import type { FastifyBaseLogger } from 'fastify'
import type { Services } from '../app.ts'
import type { DbHandle } from '../db/index.ts'
import { WAKE_CHANNEL } from '../modules/webhooks/service.ts'
import { type DispatcherOptions, startDispatcher } from './dispatcher.ts'
import { startExpiry } from './expiry.ts'
import { startMaintenance } from './maintenance.ts'

export interface WorkerOptions {
  dispatcher?: Partial<DispatcherOptions>
  expiryIntervalMs?: number
}

/** Everything a `--role worker` process runs: the outbox dispatcher, the expiry job and housekeeping. */
export function startWorkers(
  handle: DbHandle,
  services: Services,
  log: FastifyBaseLogger,
  options: WorkerOptions = {},
) {
  const dispatcher = startDispatcher({
    db: handle.db,
    webhooks: services.webhooks,
    log,
    listen: (onNotify) => handle.listen(WAKE_CHANNEL, onNotify),
    options: { leaseMs: services.webhooks.leaseMs, ...options.dispatcher },
  })
  const expiry = startExpiry({
    transactions: services.transactions,
    log,
    intervalMs: options.expiryIntervalMs,
  })
  const maintenance = startMaintenance(handle.db, log)
  return {
    dispatcher,
    async stop() {
      maintenance.stop()
      await Promise.all([expiry.stop(), dispatcher.stop()])
    },
  }
}

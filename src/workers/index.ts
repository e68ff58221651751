import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import type { Services } from '../app.ts'
import type { DbHandle } from '../db/index.ts'
import { newId } from '../lib/ids.ts'
import type { WatchOptions } from '../modules/transactions/deposits.ts'
import { WAKE_CHANNEL } from '../modules/webhooks/service.ts'
import { startBatchJob } from './batch-job.ts'
import { type DispatcherOptions, startDispatcher } from './dispatcher.ts'
import { startMaintenance } from './maintenance.ts'

export interface WorkerOptions {
  dispatcher?: Partial<DispatcherOptions>
  /** How often the expiry and settlement jobs look for work. */
  jobIntervalMs?: number
  /** How often the payout and refund jobs look for open ones whose check is due (default 1 s). */
  payoutIntervalMs?: number
  /** How often the chain watchers look for new blocks (default 1 s), and how they read. */
  chainIntervalMs?: number
  chainWatch?: WatchOptions
}

/**
 * Everything a `--role worker` process runs: the outbox dispatcher, the expiry, settlement, payout and refund
 * recovery jobs, status sync of payments handed to providers, and housekeeping. The dispatcher and housekeeping query `handle.background`, the workers' own
 * connections; `services` should be built on it too (`createServices(handle.background, config)`), so that no
 * job waits behind requests for a connection.
 */
export function startWorkers(
  handle: DbHandle,
  services: Services,
  log: FastifyBaseLogger,
  options: WorkerOptions = {},
) {
  const dispatcher = startDispatcher({
    db: handle.background,
    webhooks: services.webhooks,
    log,
    listen: (onNotify) => handle.listen(WAKE_CHANNEL, onNotify),
    options: { leaseMs: services.webhooks.leaseMs, ...options.dispatcher },
  })
  const { transactions, payouts, refunds } = services
  // This process's name as the leader of a chain watcher: one process at a time follows each account's chain.
  const watcher = { leader: `${hostname()}:${process.pid}:${newId()}`, log }
  const jobs = [
    startBatchJob({
      name: 'expiry',
      step: (n) => transactions.expireOverdue(n),
      log,
      intervalMs: options.jobIntervalMs,
    }),
    startBatchJob({
      name: 'settlement',
      step: (n) => transactions.settleDue(n),
      log,
      intervalMs: options.jobIntervalMs,
    }),
    startBatchJob({
      name: 'payouts',
      step: (n) => payouts.checkDue(n),
      log,
      intervalMs: options.payoutIntervalMs ?? Math.min(options.jobIntervalMs ?? 1000, 1000),
    }),
    startBatchJob({
      name: 'refunds',
      step: (n) => refunds.checkDue(n),
      log,
      intervalMs: options.payoutIntervalMs ?? Math.min(options.jobIntervalMs ?? 1000, 1000),
    }),
    startBatchJob({
      name: 'chain-watch',
      step: () => transactions.watchChains(watcher, options.chainWatch).then(() => 0),
      log,
      intervalMs: options.chainIntervalMs ?? 1000,
    }),
    startBatchJob({
      name: 'chain-count',
      step: () => transactions.countDeposits(log).then(() => 0),
      log,
      intervalMs: options.chainIntervalMs ?? 1000,
    }),
    startBatchJob({
      name: 'status-sync',
      step: (n) => transactions.syncHandedOver(n),
      log,
      intervalMs: options.payoutIntervalMs ?? Math.min(options.jobIntervalMs ?? 1000, 1000),
    }),
  ]
  const maintenance = startMaintenance(handle.background, log, services)
  return {
    dispatcher,
    async stop() {
      maintenance.stop()
      await Promise.all([...jobs.map((job) => job.stop()), dispatcher.stop()])
    },
  }
}

import type { FastifyBaseLogger } from 'fastify'
import type { TransactionService } from '../modules/transactions/service.ts'

/**
 * Expires overdue pending transactions, each with its event, in batches. Rows are claimed with
 * FOR UPDATE SKIP LOCKED, so several workers can run this side by side without doing a row twice.
 */
export function startExpiry(deps: {
  transactions: TransactionService
  log: FastifyBaseLogger
  intervalMs?: number
  batchSize?: number
}): {
  stop(): Promise<void>
} {
  const batchSize = deps.batchSize ?? 100
  let current: Promise<void> = Promise.resolve()
  let stopped = false
  const run = async () => {
    try {
      let expired = 0
      for (;;) {
        const n = await deps.transactions.expireOverdue(batchSize)
        expired += n
        if (n < batchSize || stopped) break
      }
      if (expired) deps.log.info({ expired }, 'expired overdue transactions')
    } catch (err) {
      deps.log.error({ err }, 'expiring transactions failed')
    }
  }
  const timer = setInterval(() => {
    current = current.then(run)
  }, deps.intervalMs ?? 5000)
  timer.unref()
  current = run()
  return {
    async stop() {
      stopped = true
      clearInterval(timer)
      await current
    },
  }
}

import type { FastifyBaseLogger } from 'fastify'
import { jobLag, jobRuns } from '../lib/metrics.ts'

/**
 * Runs `step` every `intervalMs`, again at once while it keeps finding a full batch. Each step claims its rows
 * with FOR UPDATE SKIP LOCKED, so any number of worker processes may run the same job side by side.
 */
export function startBatchJob(deps: {
  name: string
  step: (limit: number) => Promise<number>
  log: FastifyBaseLogger
  intervalMs?: number
  batchSize?: number
}): { stop(): Promise<void> } {
  const batchSize = deps.batchSize ?? 100
  let current: Promise<void> = Promise.resolve()
  let stopped = false
  const intervalMs = deps.intervalMs ?? 5000
  let dueAt = Date.now()
  const run = async () => {
    const started = Date.now()
    jobLag.set({ job: deps.name }, Math.max(0, started - dueAt) / 1000)
    const endTimer = jobRuns.startTimer({ job: deps.name })
    try {
      let done = 0
      for (;;) {
        const n = await deps.step(batchSize)
        done += n
        if (n < batchSize || stopped) break
      }
      if (done) deps.log.info({ job: deps.name, rows: done }, `${deps.name}: done`)
    } catch (err) {
      deps.log.error({ err, job: deps.name }, `${deps.name} failed`)
    } finally {
      endTimer()
    }
  }
  const timer = setInterval(() => {
    dueAt = Date.now()
    current = current.then(run)
  }, intervalMs)
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

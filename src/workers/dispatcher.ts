import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import type { Db } from '../db/index.ts'
import { randomBase62 } from '../lib/ids.ts'
import type { AttemptRecord, ClaimedDelivery, WebhookService } from '../modules/webhooks/service.ts'
import { TargetQueue } from './target-queue.ts'

export interface DispatcherOptions {
  /** HTTP attempts in flight at once in this process. */
  concurrency: number
  /** Attempts in flight at once to one host: a slow endpoint holds at most this many slots. */
  perTargetCap: number
  /** How long a claim is held; a worker that dies loses its claims after this. Longer than the HTTP timeout. */
  leaseMs: number
  /** Polling interval, in case a notification was missed. */
  pollMs: number
  /** Finished attempts are recorded together once this many are waiting, or after `flushMs`. */
  flushBatch: number
  flushMs: number
  workerId: string
}

export interface Dispatcher {
  readonly workerId: string
  /** Looks for due deliveries now (after an event is written, or a slot frees). */
  wake(): void
  /** Stops claiming, waits for the attempts in flight, records them, and gives back the claims it still holds. */
  stop(): Promise<void>
}

type Outcome = { delivery: ClaimedDelivery; record: AttemptRecord; disable: boolean }

export function startDispatcher(deps: {
  db: Db
  webhooks: WebhookService
  log: FastifyBaseLogger
  /** Subscribes to event notifications; returns the unsubscribe. */
  listen?: (onNotify: () => void) => Promise<() => Promise<void>>
  options?: Partial<DispatcherOptions>
}): Dispatcher {
  const { db, webhooks, log } = deps
  const options: DispatcherOptions = {
    concurrency: 128,
    perTargetCap: 32,
    leaseMs: 60_000,
    pollMs: 1000,
    flushBatch: 200,
    flushMs: 5,
    workerId: `${hostname()}-${process.pid}-${randomBase62(6)}`,
    ...deps.options,
  }
  const targets = new TargetQueue<ClaimedDelivery>(options.perTargetCap)
  const running = new Set<Promise<void>>()
  let finished: Outcome[] = []
  let flushing: Promise<void> = Promise.resolve()
  let flushTimer: NodeJS.Timeout | null = null
  let stopping = false
  let ticking = false
  let again = false
  let unlisten: (() => Promise<void>) | null = null

  /** Records what finished since the last flush, in one database transaction. */
  function flush(): Promise<void> {
    if (flushTimer) clearTimeout(flushTimer)
    flushTimer = null
    const batch = finished
    finished = []
    if (batch.length === 0) return flushing
    flushing = flushing.then(async () => {
      try {
        await webhooks.record(batch)
        for (const o of batch) {
          if (o.record.next.status === 'failed') {
            log.warn(
              { delivery: o.delivery.uuid, event: o.delivery.event, error: o.record.error },
              'webhook delivery failed for good',
            )
          }
        }
      } catch (err) {
        // The claims stay until their lease runs out; then the deliveries are attempted again (at least once).
        log.error({ err, attempts: batch.length }, 'recording webhook attempts failed')
      }
    })
    return flushing
  }

  /** Sends a delivery that holds a slot of its target; the slot goes to the next waiting one when it ends. */
  function deliver(delivery: ClaimedDelivery): void {
    const job = webhooks
      .send(delivery, options.workerId)
      .then(
        (outcome) => {
          finished.push({ delivery, ...outcome })
          if (finished.length >= options.flushBatch) void flush()
          else flushTimer ??= setTimeout(() => void flush(), options.flushMs)
        },
        (err: unknown) => log.error({ err, delivery: delivery.uuid }, 'webhook attempt failed unexpectedly'),
      )
      .finally(() => {
        running.delete(job)
        const next = targets.release(delivery.target)
        // A claim only when the freed slot found no delivery waiting for it.
        if (next) deliver(next)
        else wake()
      })
    running.add(job)
  }

  async function tick(): Promise<void> {
    if (stopping) return
    if (ticking) {
      again = true
      return
    }
    ticking = true
    try {
      do {
        again = false
        // Slots are attempts in flight; a delivery waiting for its target's slot holds none (its target's
        // queue is bounded, so they are at most 2 × concurrency in all). One claim takes at most what one
        // target can hold (its slots and its queue): a backlog for one endpoint then fills its queue without
        // claiming rows only to give them back.
        const free = Math.min(options.concurrency - running.size, targets.capacity)
        if (free <= 0) break
        const now = new Date()
        const claimed = await webhooks.claimDue(
          db,
          options.workerId,
          now,
          new Date(now.getTime() + options.leaseMs),
          free,
          // A backlog of full targets could otherwise fill every claim ahead of other merchants' deliveries.
          targets.saturated(),
        )
        const giveBack: string[] = []
        for (const delivery of claimed) {
          // Sent now, or waiting for a slot of its target; back when that queue is full too, or at shutdown.
          const admission = stopping ? 'full' : targets.admit(delivery)
          if (admission === 'start') deliver(delivery)
          else if (admission === 'full') giveBack.push(delivery.uuid)
        }
        if (giveBack.length) await webhooks.releaseClaims(options.workerId, giveBack)
        // A full batch suggests more are due.
        if (claimed.length === free && giveBack.length === 0) again = true
      } while (again && !stopping)
    } catch (err) {
      log.error({ err }, 'claiming webhook deliveries failed')
    } finally {
      ticking = false
    }
  }

  function wake(): void {
    if (!stopping) void tick()
  }

  const timer = setInterval(wake, options.pollMs)
  timer.unref()
  deps.listen?.(wake).then(
    (off) => {
      unlisten = off
      if (stopping) void off()
    },
    (err: unknown) => log.error({ err }, 'could not listen for webhook notifications; polling only'),
  )
  wake()

  return {
    workerId: options.workerId,
    wake,
    async stop() {
      stopping = true
      // What waits is given back with the rest of the claims below; a slot that frees starts nothing.
      targets.dropWaiting()
      clearInterval(timer)
      await unlisten?.()
      await Promise.allSettled([...running])
      await flush()
      await webhooks.releaseClaims(options.workerId)
    },
  }
}

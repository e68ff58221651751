/** What the queue holds: anything sent to a target (a delivery, grouped by its URL's host). */
export interface Targeted {
  target: string
}

/** Where an admitted item goes: sent now (it holds a slot), into its target's queue, or back (both are full). */
export type Admission = 'start' | 'wait' | 'full'

/**
 * The dispatcher's slots and queues, per target. At most `perTargetCap` items are in flight to one target, so
 * a slow endpoint holds at most that many of the process's attempts; behind them at most twice as many wait,
 * and start in the order they came as slots free, so a claim never waits longer than two rounds of its
 * target's attempts (2 × the HTTP timeout, inside the lease). It only counts: the caller sends, and tells it
 * when an attempt ends (`release`).
 */
export class TargetQueue<T extends Targeted> {
  /** How many items may wait for one target's slots. */
  readonly maxWaiting: number
  readonly #inflight = new Map<string, number>()
  readonly #waiting = new Map<string, T[]>()

  constructor(readonly perTargetCap: number) {
    this.maxWaiting = 2 * perTargetCap
  }

  /** What one target can hold, its slots and its queue: a claim need take no more than this. */
  get capacity(): number {
    return this.perTargetCap + this.maxWaiting
  }

  /** Items in flight to `target`. */
  inflight(target: string): number {
    return this.#inflight.get(target) ?? 0
  }

  /** Items waiting for a slot of `target`. */
  waiting(target: string): number {
    return this.#waiting.get(target)?.length ?? 0
  }

  /**
   * A claimed item: `start` when its target has a free slot (it now holds it: send it), `wait` when it joined
   * its target's queue, `full` when that queue is full too (give its claim back).
   */
  admit(item: T): Admission {
    if (this.inflight(item.target) < this.perTargetCap) {
      this.#take(item.target)
      return 'start'
    }
    const queue = this.#waiting.get(item.target) ?? []
    if (queue.length >= this.maxWaiting) return 'full'
    queue.push(item)
    this.#waiting.set(item.target, queue)
    return 'wait'
  }

  /**
   * An attempt to `target` ended: frees its slot. The item that has waited longest for it takes the slot and is
   * returned, to be sent now; undefined when none waits.
   */
  release(target: string): T | undefined {
    const left = this.inflight(target) - 1
    if (left > 0) this.#inflight.set(target, left)
    else this.#inflight.delete(target)
    const queue = this.#waiting.get(target)
    const next = queue?.shift()
    if (queue && queue.length === 0) this.#waiting.delete(target)
    if (next) this.#take(target)
    return next
  }

  /** The targets whose slots and queue are full: their rows would only be given back, so a claim leaves them out. */
  saturated(): string[] {
    return [...this.#inflight]
      .filter(([target, n]) => n + this.waiting(target) >= this.capacity)
      .map(([target]) => target)
  }

  /**
   * Drops every waiting item (at shutdown: their claims are given back with the rest); what is in flight stays
   * counted until released, and starts nothing after it.
   */
  dropWaiting(): void {
    this.#waiting.clear()
  }

  #take(target: string): void {
    this.#inflight.set(target, this.inflight(target) + 1)
  }
}

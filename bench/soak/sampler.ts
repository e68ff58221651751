/**
 * What the soak records every second: the requests answered and their latencies (written by the traffic), both
 * processes' RSS and event-loop delay, the outbox, the deliveries received, and the CPU time of the API, the
 * worker, the runner, PostgreSQL and the whole machine; and the figures of any stretch of seconds.
 */
import {
  cpuSeconds,
  machineBusySeconds,
  postgresCpuSeconds,
  postgresCpuSince,
  rssMiB,
  sleep,
} from '../lib.ts'
import { BUCKETS, merge, percentileOf } from './histogram.ts'

export interface Second {
  done: number
  errors: number
  histogram: Uint32Array
  apiRss: number
  workerRss: number
  /** prom-client's nodejs_eventloop_lag_p99_seconds over the second, in ms (NaN: the scrape failed). */
  apiEld: number
  workerEld: number
  deliveries: number
  outboxDepth: number
  inFlight: number
  /** The latest the runner's clock handed a request of this second to the pool after it was due, in ms. */
  lateMax: number
  /** CPU time the API, the worker and the runner itself used in the second, in ms (1,000 is one core). */
  apiCpu: number
  workerCpu: number
  runnerCpu: number
  /** CPU time PostgreSQL's processes used in the second, and the whole machine over its cores, in ms. */
  pgCpu: number
  machineCpu: number
}

export const newSecond = (): Second => ({
  done: 0,
  errors: 0,
  histogram: new Uint32Array(BUCKETS),
  apiRss: Number.NaN,
  workerRss: Number.NaN,
  apiCpu: Number.NaN,
  workerCpu: Number.NaN,
  runnerCpu: Number.NaN,
  pgCpu: Number.NaN,
  machineCpu: Number.NaN,
  apiEld: Number.NaN,
  workerEld: Number.NaN,
  deliveries: 0,
  outboxDepth: Number.NaN,
  inFlight: 0,
  lateMax: 0,
})

export interface Aggregate {
  seconds: number
  rps: number
  errors: number
  p50: number
  p99: number
  apiRss: number
  workerRss: number
  apiEld: number
  workerEld: number
  deliveries: number
  outboxMax: number
  /** Mean CPU of the second, in ms per second (1,000: one core busy). */
  apiCpu: number
  workerCpu: number
  runnerCpu: number
  pgCpu: number
  machineCpu: number
  /** The API's CPU per request answered, in ms. */
  apiCpuPerRequest: number
}

const mean = (xs: number[]) => {
  const ok = xs.filter(Number.isFinite)
  return ok.length ? ok.reduce((a, b) => a + b, 0) / ok.length : Number.NaN
}

export function aggregate(seconds: Second[]): Aggregate {
  const histogram = new Uint32Array(BUCKETS)
  for (const s of seconds) merge(histogram, s.histogram)
  const n = Math.max(1, seconds.length)
  const rps = seconds.reduce((a, s) => a + s.done, 0) / n
  const apiCpu = mean(seconds.map((s) => s.apiCpu))
  return {
    seconds: seconds.length,
    rps,
    errors: seconds.reduce((a, s) => a + s.errors, 0),
    p50: percentileOf(histogram, 50),
    p99: percentileOf(histogram, 99),
    apiRss: mean(seconds.map((s) => s.apiRss)),
    workerRss: mean(seconds.map((s) => s.workerRss)),
    apiEld: mean(seconds.map((s) => s.apiEld)),
    workerEld: mean(seconds.map((s) => s.workerEld)),
    deliveries: seconds.reduce((a, s) => a + s.deliveries, 0) / n,
    outboxMax: Math.max(...seconds.map((s) => (Number.isFinite(s.outboxDepth) ? s.outboxDepth : 0))),
    apiCpu,
    apiCpuPerRequest: apiCpu / Math.max(1, rps),
    workerCpu: mean(seconds.map((s) => s.workerCpu)),
    runnerCpu: mean(seconds.map((s) => s.runnerCpu)),
    pgCpu: mean(seconds.map((s) => s.pgCpu)),
    machineCpu: mean(seconds.map((s) => s.machineCpu)),
  }
}

// ---------------------------------------------------------------------------------------------- metrics

/** One gauge's value from a Prometheus text exposition (the unlabelled series, or the first). */
function gauge(text: string, name: string): number {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([^ \\n]+)`, 'm').exec(text)
  return match ? Number(match[1]) : Number.NaN
}

/** The sum of a counter's series whose labels contain `label`. */
function counterSum(text: string, name: string, label: string): number {
  let total = 0
  for (const match of text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} ([^ \\n]+)`, 'gm')))
    if ((match[1] ?? '').includes(label)) total += Number(match[2])
  return total
}

async function scrape(port: number): Promise<string | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(900) })
    return res.ok ? await res.text() : null
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------------------------- sampler

export interface SamplerInput {
  apiPid: number
  workerPid: number
  apiMetricsPort: number
  workerMetricsPort: number
  /** The deliveries the receiver got since the last call. */
  takeDeliveries: () => number
  /** The requests in flight now. */
  inFlight: () => number
}

/**
 * Samples the run's seconds, one `sample` call a second. The CPU of the first second counts from the sampler's
 * creation.
 */
export function createSampler(input: SamplerInput) {
  const { apiPid, workerPid, apiMetricsPort, workerMetricsPort } = input
  /** The worker's delivery attempts that failed or wait to be retried, at the latest scrape. */
  const attempts = { failed: Number.NaN, retry: Number.NaN }
  const readAttempts = (workerText: string) => {
    attempts.failed = counterSum(workerText, 'webhook_delivery_attempts_total', 'outcome="failed"')
    attempts.retry = counterSum(workerText, 'webhook_delivery_attempts_total', 'outcome="retry"')
  }
  // CPU time at the previous sample, to take each second's share.
  const cpuSample = () => ({
    api: cpuSeconds(apiPid),
    worker: cpuSeconds(workerPid),
    runner: cpuSeconds(process.pid),
    pg: postgresCpuSeconds(),
    machine: machineBusySeconds(),
  })
  let cpuBefore = cpuSample()

  return {
    attempts,
    /** Fills in the second's RSS, CPU, deliveries, requests in flight, then its scraped metrics. */
    async sample(second: Second) {
      second.apiRss = rssMiB(apiPid)
      second.workerRss = rssMiB(workerPid)
      const cpuNow = cpuSample()
      second.apiCpu = (cpuNow.api - cpuBefore.api) * 1000
      second.workerCpu = (cpuNow.worker - cpuBefore.worker) * 1000
      second.runnerCpu = (cpuNow.runner - cpuBefore.runner) * 1000
      second.pgCpu = postgresCpuSince(cpuBefore.pg, cpuNow.pg) * 1000
      second.machineCpu = (cpuNow.machine - cpuBefore.machine) * 1000
      cpuBefore = cpuNow
      second.deliveries = input.takeDeliveries()
      second.inFlight = input.inFlight()
      const [apiText, workerText] = await Promise.all([scrape(apiMetricsPort), scrape(workerMetricsPort)])
      if (apiText) second.apiEld = gauge(apiText, 'nodejs_eventloop_lag_p99_seconds') * 1000
      if (workerText) {
        second.workerEld = gauge(workerText, 'nodejs_eventloop_lag_p99_seconds') * 1000
        second.outboxDepth = gauge(workerText, 'webhook_outbox_depth')
        readAttempts(workerText)
      }
    },
    /** Waits (30 s at most) for the worker's outbox to empty: its depth at the end (NaN: no answer). */
    async outboxDrained(): Promise<number> {
      let outboxDepth = Number.NaN
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
        const text = await scrape(workerMetricsPort)
        outboxDepth = text ? gauge(text, 'webhook_outbox_depth') : Number.NaN
        if (text) readAttempts(text)
        if (outboxDepth === 0) break
        await sleep(500)
      }
      return outboxDepth
    },
  }
}

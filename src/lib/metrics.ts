import { createServer, type Server } from 'node:http'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/**
 * The process's Prometheus metrics. One registry per process, served on its own port (METRICS_PORT) so that
 * the merchant API never exposes it. Gauges that need the database read it when scraped.
 */
export const registry = new Registry()
collectDefaultMetrics({ register: registry })

export const httpDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'API request latency by route and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
})

export const deliveryOutcomes = new Counter({
  name: 'webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts by what they led to: succeeded, retry (pending) or failed',
  labelNames: ['outcome'] as const,
  registers: [registry],
})

export const jobRuns = new Histogram({
  name: 'worker_job_run_seconds',
  help: 'How long one run of a worker job took',
  labelNames: ['job'] as const,
  buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
  registers: [registry],
})

export const jobLag = new Gauge({
  name: 'worker_job_lag_seconds',
  help: 'How late the last run of a worker job started after it was due',
  labelNames: ['job'] as const,
  registers: [registry],
})

/** What the database-backed gauges read on every scrape. */
export interface MetricSources {
  outbox(): Promise<{ depth: number; oldestAgeSeconds: number }>
  pool(): { total: number; idle: number; waiting: number; max: number } | null
}

let sources: MetricSources | null = null

/** Points the database gauges at this process's database. */
export function setMetricSources(next: MetricSources | null): void {
  sources = next
}

new Gauge({
  name: 'webhook_outbox_depth',
  help: 'Webhook deliveries waiting to be sent (pending)',
  registers: [registry],
  async collect() {
    if (sources) this.set((await sources.outbox()).depth)
  },
})

new Gauge({
  name: 'webhook_outbox_oldest_age_seconds',
  help: 'Age of the oldest pending delivery (0 when none)',
  registers: [registry],
  async collect() {
    if (sources) this.set((await sources.outbox()).oldestAgeSeconds)
  },
})

new Gauge({
  name: 'db_pool_connections',
  help: 'Database pool connections by state (PostgreSQL only)',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    const pool = sources?.pool()
    if (!pool) return
    this.set({ state: 'total' }, pool.total)
    this.set({ state: 'idle' }, pool.idle)
    this.set({ state: 'waiting' }, pool.waiting)
    this.set({ state: 'max' }, pool.max)
  },
})

/** Serves GET /metrics on its own port; nothing else. */
export async function startMetricsServer(port: number, host: string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end()
      return
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    )
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  return server
}

import { createServer, type Server } from 'node:http'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/**
 * The process's Prometheus metrics. One registry per process, served on its own port (METRICS_PORT) so that
 * the merchant API never exposes it. Gauges that need the database read it when scraped.
 */
export const registry = new Registry()
collectDefaultMetrics({ register: registry })

/** A histogram of this registry; `buckets` are the upper bounds, in seconds. */
const histogram = <L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets: number[],
) => new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] })

/** A gauge of this registry; with `collect`, set on every scrape from what it reads. */
const gauge = <L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
  collect?: (gauge: Gauge<L>) => void | Promise<void>,
) =>
  new Gauge<L>({
    name,
    help,
    labelNames,
    registers: [registry],
    ...(collect && {
      collect() {
        return collect(this)
      },
    }),
  })

export const httpDuration = histogram(
  'http_request_duration_seconds',
  'API request latency by route and status',
  ['method', 'route', 'status'],
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
)

export const deliveryOutcomes = new Counter({
  name: 'webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts by what they led to: succeeded, retry (pending) or failed',
  labelNames: ['outcome'] as const,
  registers: [registry],
})

export const payoutHandoversUnanswered = new Counter({
  name: 'payout_handovers_unanswered_total',
  help: 'Payout hand-overs to a connector account that got no answer (an unreachable provider, a hot wallet short of funds); the payout is handed over again',
  labelNames: ['account'] as const,
  registers: [registry],
})

export const providerCallbacks = new Counter({
  name: 'provider_callbacks_total',
  help: "Providers' callbacks received, by connector account and what they did",
  labelNames: ['account', 'result'] as const,
  registers: [registry],
})

export const jobRuns = histogram(
  'worker_job_run_seconds',
  'How long one run of a worker job took',
  ['job'],
  [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
)

export const jobLag = gauge(
  'worker_job_lag_seconds',
  'How late the last run of a worker job started after it was due',
  ['job'],
)

/** What the database-backed gauges read on every scrape. */
export interface MetricSources {
  outbox(): Promise<{ depth: number; oldestAgeSeconds: number }>
  pool(): { total: number; idle: number; waiting: number; max: number } | null
  /** How far status sync is behind, and how many route keys no enabled account serves. */
  providers?(): Promise<{ syncLagSeconds: number; routesWithoutAccount: number }>
}

let sources: MetricSources | null = null

/** Points the database gauges at this process's database. */
export function setMetricSources(next: MetricSources | null): void {
  sources = next
}

gauge('webhook_outbox_depth', 'Webhook deliveries waiting to be sent (pending)', [], async (depth) => {
  if (sources) depth.set((await sources.outbox()).depth)
})

gauge(
  'webhook_outbox_oldest_age_seconds',
  'Age of the oldest pending delivery (0 when none)',
  [],
  async (age) => {
    if (sources) age.set((await sources.outbox()).oldestAgeSeconds)
  },
)

gauge(
  'db_pool_connections',
  'Database pool connections by state (PostgreSQL only)',
  ['state'],
  (connections) => {
    const pool = sources?.pool()
    if (!pool) return
    for (const state of ['total', 'idle', 'waiting', 'max'] as const) connections.set({ state }, pool[state])
  },
)

gauge(
  'provider_status_sync_lag_seconds',
  'How long the most overdue status sync of a payment handed to a provider has been due (0 when none)',
  [],
  async (lag) => {
    if (sources?.providers) lag.set((await sources.providers()).syncLagSeconds)
  },
)

gauge(
  'provider_routes_without_account',
  'Routes whose connector accounts are all disabled: their payments or payouts are refused',
  [],
  async (routes) => {
    if (sources?.providers) routes.set((await sources.providers()).routesWithoutAccount)
  },
)

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

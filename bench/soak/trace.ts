/**
 * `--trace <file>`: one CSV line per second of the soak, the runner's figures beside PostgreSQL's, to find what
 * a stall coincides with. PostgreSQL's side: the WAL written (records, full-page images, bytes, writes and
 * fsyncs, and their time when `track_wal_io_timing` is on), the checkpointer's and backends' buffer writes
 * (`pg_stat_bgwriter`), and what the database's active backends were waiting on, sampled every 100 ms and
 * averaged over the second (`lock:tuple=2.3` is 2.3 backends on average).
 */
import { appendFileSync, writeFileSync } from 'node:fs'
import pg from 'pg'
import type { Second } from './sampler.ts'

const COUNTERS = {
  wal_records: 'w.wal_records',
  wal_fpi: 'w.wal_fpi',
  wal_kib: 'w.wal_bytes / 1024',
  wal_writes: 'w.wal_write',
  wal_syncs: 'w.wal_sync',
  wal_write_ms: 'w.wal_write_time',
  wal_sync_ms: 'w.wal_sync_time',
  checkpoints: 'b.checkpoints_timed + b.checkpoints_req',
  buffers_checkpoint: 'b.buffers_checkpoint',
  buffers_clean: 'b.buffers_clean',
  buffers_backend: 'b.buffers_backend',
  buffers_backend_fsync: 'b.buffers_backend_fsync',
  buffers_alloc: 'b.buffers_alloc',
} as const
type Counter = keyof typeof COUNTERS

/** The runner's own figures for the second: its number (from 1), its percentiles, and what the sampler took. */
export type TraceRow = { second: number; p50: number; p99: number } & Pick<
  Second,
  | 'done'
  | 'errors'
  | 'inFlight'
  | 'apiEld'
  | 'apiRss'
  | 'lateMax'
  | 'apiCpu'
  | 'workerCpu'
  | 'runnerCpu'
  | 'pgCpu'
  | 'machineCpu'
>

export class PgTrace {
  private readonly client: pg.Client
  private previous: Record<Counter, number> | null = null
  private waits = new Map<string, number>()
  private samples = 0
  private timer: NodeJS.Timeout | null = null
  private sampling = false

  constructor(
    databaseUrl: string,
    private readonly file: string,
  ) {
    this.client = new pg.Client({ connectionString: databaseUrl })
    this.client.on('error', () => {})
  }

  async start(): Promise<void> {
    await this.client.connect()
    writeFileSync(
      this.file,
      `${['second', 'done', 'errors', 'p50_ms', 'p99_ms', 'in_flight', 'api_eld_ms', 'api_rss_mib', 'runner_late_max_ms', 'api_cpu_ms', 'worker_cpu_ms', 'runner_cpu_ms', 'pg_cpu_ms', 'machine_cpu_ms', ...Object.keys(COUNTERS), 'active_backends', 'waits'].join(',')}\n`,
    )
    this.previous = await this.counters()
    this.timer = setInterval(() => void this.sampleWaits(), 100)
  }

  private async counters(): Promise<Record<Counter, number>> {
    const columns = Object.entries(COUNTERS).map(([name, expr]) => `(${expr})::float8 AS ${name}`)
    const { rows } = await this.client.query<Record<Counter, number>>(
      `SELECT ${columns.join(', ')} FROM pg_stat_wal w, pg_stat_bgwriter b`,
    )
    return rows[0] as Record<Counter, number>
  }

  private async sampleWaits(): Promise<void> {
    if (this.sampling) return
    this.sampling = true
    try {
      const { rows } = await this.client.query<{ wait: string; n: number }>(
        `SELECT coalesce(lower(wait_event_type) || ':' || wait_event, 'cpu') AS wait, count(*)::int AS n
         FROM pg_stat_activity
         WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
         GROUP BY 1`,
      )
      this.samples++
      for (const { wait, n } of rows) this.waits.set(wait, (this.waits.get(wait) ?? 0) + n)
    } catch {
      // A missed sample: the second's averages are over the samples taken.
    } finally {
      this.sampling = false
    }
  }

  /** Appends the second's line: the runner's figures, then PostgreSQL's since the previous line. */
  async write(row: TraceRow): Promise<void> {
    const now = await this.counters().catch(() => null)
    const deltas = Object.keys(COUNTERS).map((name) => {
      const key = name as Counter
      if (!now || !this.previous) return ''
      return String(Math.round((now[key] - this.previous[key]) * 10) / 10)
    })
    if (now) this.previous = now
    const samples = Math.max(1, this.samples)
    const waits = [...this.waits].sort((a, b) => b[1] - a[1])
    const active = waits.reduce((sum, [, n]) => sum + n, 0) / samples
    const waitText = waits.map(([wait, n]) => `${wait}=${(n / samples).toFixed(1)}`).join(' ')
    this.waits = new Map()
    this.samples = 0
    const r = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '')
    const fields = [
      row.second,
      row.done,
      row.errors,
      r(row.p50, 2),
      r(row.p99, 2),
      row.inFlight,
      r(row.apiEld, 2),
      r(row.apiRss),
      r(row.lateMax),
      r(row.apiCpu, 0),
      r(row.workerCpu, 0),
      r(row.runnerCpu, 0),
      r(row.pgCpu, 0),
      r(row.machineCpu, 0),
      ...deltas,
      r(active, 2),
      `"${waitText}"`,
    ]
    appendFileSync(this.file, `${fields.join(',')}\n`)
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    await this.client.end().catch(() => {})
  }
}

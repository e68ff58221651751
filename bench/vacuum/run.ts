/**
 * What each vacuum of `transactions` has to do as the table grows, with its pages filled to 100 % (the table's
 * default) and to 90 % (a fillfactor tried as migration 0018 and reverted: bench/results/2026-11-29-vacuum.md). A model of the soak's
 * writes, without the HTTP load: payments inserted in batches at the soak's rate of creates (one every 1.67 ms), one
 * in twelve of each batch paid, one in twenty-four of the batch before partially refunded (each a new row version,
 * as the service's status changes are), and a `VACUUM (VERBOSE, PARALLEL 0)` whenever autovacuum's default
 * thresholds say one is due (the soak runner's rule). Each vacuum's pages scanned and its buffers (hit, missed,
 * dirtied) come from its VERBOSE report; the seconds a vacuum takes at the server's autovacuum throttle are
 * estimated from them by the cost model (a hit costs 1, a miss 2, a dirtied page 20;
 * `autovacuum_vacuum_cost_limit` per `autovacuum_vacuum_cost_delay`), which is where a throttled vacuum spends its
 * time. The vacuums themselves run unthrottled.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:vacuum [-- --rows 1060000 --batch 10000]
 *
 * It prints its report and records it in bench/results/<date>T<time>-vacuum.md (bench/lib.ts, writeResult).
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { benchDatabase, benchEnv, benchMerchant, benchOptions, fmt, writeResult } from '../lib.ts'

const values = benchOptions({
  rows: '1060000',
  batch: '10000',
})
const ROWS = Number(values.rows)
const BATCH = Number(values.batch)
const adminUrl = process.env.BENCH_DATABASE_URL
if (!adminUrl)
  throw new Error('BENCH_DATABASE_URL is required (a PostgreSQL the benchmark may create databases on)')

interface Vacuum {
  rows: number
  heapPages: number
  scanned: number
  hits: number
  misses: number
  dirtied: number
  walMiB: number
  /** Seconds at the server's autovacuum throttle, by the cost model. */
  throttledS: number
}

/** The payments' times: the i-th is created 1.67 ms after the (i − 1)-th. */
const AT = (i: string) => `timestamptz '2026-11-29 00:00:00+00' + (${i}) * interval '1.67 ms'`
/** A UUIDv7's first 12 hex digits: the milliseconds of the time `t`. */
const MS_HEX = (t: string) => `lpad(to_hex((extract(epoch FROM ${t}) * 1000)::bigint), 12, '0')`
/** The smallest UUIDv7 of the payments after the i-th (whose times are later). */
const SINCE = (i: string) => `(${MS_HEX(AT(`(${i})::int + 1`))} || '00000000000000000000')::uuid`

async function model(fillfactor: 100 | 90) {
  const database = await benchDatabase(adminUrl as string, 'mg_bench_vacuum')
  try {
    const env = benchEnv(database.url, randomBytes(32).toString('hex'))
    for (let i = 0; i < 4; i++) await benchMerchant(env, `Vacuum ${i}`)
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    const reports: string[] = []
    client.on('notice', (notice) => reports.push(notice.message ?? ''))
    try {
      await client.query(`ALTER TABLE transactions SET (fillfactor = ${fillfactor})`)
      await client.query('SET vacuum_cost_delay = 0')
      const { delay, limit } = database.autovacuumThrottle
      const unitsPerSecond = (Number(limit) * 1000) / Number.parseFloat(delay)
      const vacuums: Vacuum[] = []
      for (let offset = 0; offset < ROWS; offset += BATCH) {
        await client.query(
          `INSERT INTO transactions (uuid, merchant_uuid, mode, type, external_id, amount, gross_amount, net_amount,
             fee_amount, fee_bps, fee_payer, merchant_fee_share_bps, merchant_fee_merchant_amount,
             merchant_fee_customer_amount, currency, settlement_currency, settlement_amount, fx_rate,
             fx_rate_updated_at, payment_method, status, description, payment_token, expires_at, created_at, updated_at)
           SELECT (${MS_HEX('t')} || '7' || substr(md5(i::text || random()::text), 1, 19))::uuid,
             m.uuid, 'test', 'payment', 'v-' || i, a, a, a - a * 250 / 10000, a * 250 / 10000, 250, 'merchant', 10000,
             a * 250 / 10000, 0, 'RUB', 'USDT', (a - a * 250 / 10000) * 10000 / 9215, '92.15', t, 'card', 'pending',
             'Soak order ' || i, substr(md5(random()::text || i::text), 1, 22), t + interval '30 minutes', t, t
           FROM (SELECT i, 100000 + i % 1000 AS a, ${AT('i')} AS t
                 FROM generate_series($1::int + 1, $1::int + $2::int) AS i) AS g
           JOIN (SELECT uuid, row_number() OVER (ORDER BY uuid) - 1 AS k FROM merchants) AS m ON m.k = g.i % 4`,
          [offset, BATCH],
        )
        // The status changes: paid in this batch, partially refunded in the batch before. Each batch's rows are
        // found by their ids' time (UUIDv7, as the service's), through the primary key: a scan of the whole table
        // would prune its pages, which the service's reads of a few rows do not.
        await client.query(
          `UPDATE transactions SET status = 'paid', paid_at = created_at, settle_available_at = created_at,
             settled_at = created_at, aggregate_version = 2
           WHERE uuid >= ${SINCE('$1')} AND substr(external_id, 3)::int % 12 = 0`,
          [offset],
        )
        await client.query(
          `UPDATE transactions SET status = 'partially_refunded', aggregate_version = 3
           WHERE uuid >= ${SINCE('$1::int - $2::int')} AND uuid < ${SINCE('$1')} AND substr(external_id, 3)::int % 24 = 0`,
          [offset, BATCH],
        )
        const { rows: due } = await client.query<{ due: boolean }>(
          `SELECT n_dead_tup > 50 + 0.2 * n_live_tup OR n_ins_since_vacuum > 1000 + 0.2 * n_live_tup AS due
           FROM pg_stat_user_tables WHERE relname = 'transactions'`,
        )
        if (!due[0]?.due) continue
        reports.length = 0
        await client.query('VACUUM (VERBOSE, PARALLEL 0) transactions')
        const report =
          reports.find((r) => r.includes('public.transactions"') && r.includes('buffer usage')) ?? ''
        const pages = /(\d+) remain, (\d+) scanned/.exec(report)
        const buffers = /buffer usage: (\d+) hits, (\d+) misses, (\d+) dirtied/.exec(report)
        const wal = /WAL usage: \d+ records, \d+ full page images, (\d+) bytes/.exec(report)
        if (!pages || !buffers || !wal) throw new Error(`unexpected VACUUM VERBOSE report: ${report}`)
        const [hits, misses, dirtied] = [Number(buffers[1]), Number(buffers[2]), Number(buffers[3])]
        vacuums.push({
          rows: offset + BATCH,
          heapPages: Number(pages[1]),
          scanned: Number(pages[2]),
          hits,
          misses,
          dirtied,
          walMiB: Number(wal[1]) / 2 ** 20,
          throttledS: (hits + 2 * misses + 20 * dirtied) / unitsPerSecond,
        })
        const v = vacuums.at(-1) as Vacuum
        console.log(
          `[bench:vacuum] fillfactor ${fillfactor}, ${fmt(v.rows, 0)} payments: scanned ${fmt(v.scanned, 0)} of ${fmt(v.heapPages, 0)} pages, dirtied ${fmt(v.dirtied, 0)}, ~${fmt(v.throttledS)} s at the throttle`,
        )
      }
      const { rows: sizes } = await client.query<{ heap: string; indexes: string }>(
        `SELECT pg_size_pretty(pg_relation_size('transactions')) AS heap,
                pg_size_pretty(pg_indexes_size('transactions')) AS indexes`,
      )
      return { vacuums, sizes: sizes[0], database }
    } finally {
      await client.end()
    }
  } finally {
    await database.close(false)
  }
}

const first = await model(100)
const runs = [
  { fillfactor: 100, ...first },
  { fillfactor: 90, ...(await model(90)) },
]
const { info, autovacuumThrottle: throttle } = first.database
const total = (vacuums: Vacuum[], key: keyof Vacuum) => vacuums.reduce((sum, v) => sum + v[key], 0)
const lines = [
  `Run of ${info.date}: ${fmt(ROWS, 0)} payments in batches of ${fmt(BATCH, 0)}; a vacuum whenever autovacuum's default thresholds say one is due; the throttle of this server's autovacuum (vacuum_cost_delay ${throttle.delay}, vacuum_cost_limit ${throttle.limit}) applied to each vacuum's buffers by the cost model.`,
  '',
  '| fillfactor | payments at the vacuum | heap pages | scanned | hits | misses | dirtied | WAL MiB | seconds at the throttle |',
  '|---|---|---|---|---|---|---|---|---|',
  ...runs.flatMap((run) =>
    run.vacuums.map(
      (v) =>
        `| ${run.fillfactor} | ${fmt(v.rows, 0)} | ${fmt(v.heapPages, 0)} | ${fmt(v.scanned, 0)} (${fmt((100 * v.scanned) / v.heapPages)} %) | ${fmt(v.hits, 0)} | ${fmt(v.misses, 0)} | ${fmt(v.dirtied, 0)} | ${fmt(v.walMiB)} | ${fmt(v.throttledS)} |`,
    ),
  ),
  '',
  '| fillfactor | vacuums | pages scanned | pages dirtied | WAL MiB | seconds at the throttle | table at the end |',
  '|---|---|---|---|---|---|---|',
  ...runs.map(
    (run) =>
      `| ${run.fillfactor} | ${run.vacuums.length} | ${fmt(total(run.vacuums, 'scanned'), 0)} | ${fmt(total(run.vacuums, 'dirtied'), 0)} | ${fmt(total(run.vacuums, 'walMiB'))} | ${fmt(total(run.vacuums, 'throttledS'))} | heap ${run.sizes?.heap}, indexes ${run.sizes?.indexes} |`,
  ),
]
console.log(writeResult('vacuum', info, lines.join('\n')))

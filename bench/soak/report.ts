/**
 * The soak's verdict and its report: the second window of --window-minutes against the last, a table per minute,
 * a table per kind of request, and the notes that say what the figures rest on.
 */
import { fmt, type Machine, round } from '../lib.ts'
import { maxOf, percentileOf } from './histogram.ts'
import type { Maintenance } from './maintenance.ts'
import type { SoakOptions } from './options.ts'
import { type Aggregate, aggregate, type Second } from './sampler.ts'
import type { Op, OpSummary } from './traffic.ts'

/** The most a checked figure may grow from the second window to the last. */
const MAX_RATIO = 1.1
/** In flight at a second's end above this, with the machine's CPU low, the second counts as stalled. */
const STALL_IN_FLIGHT = 100
/** monitorEventLoopDelay's sampling interval, which every event-loop delay it reports includes. */
const ELD_FLOOR_MS = 10

export interface Check {
  what: string
  second: number
  last: number
  unit: string
  ratio: number
  met: boolean
  information?: boolean
}

/**
 * The run's minutes and windows, and the verdict: the API's and the worker's mean RSS, the API's mean event-loop
 * delay p99 and the request p99 at most MAX_RATIO × in the last window, no error, and the whole run ran.
 */
export function judge(ran: Second[], options: SoakOptions, errors: number) {
  const { windowS } = options
  const minutes: Aggregate[] = []
  for (let from = 0; from < ran.length; from += 60) minutes.push(aggregate(ran.slice(from, from + 60)))
  /** Where the second and the last window start, in seconds of the run. */
  const windowStarts = { second: windowS, last: Math.max(0, ran.length - windowS) }
  const windowOf = (from: number) => ran.slice(from, from + windowS)
  const second = aggregate(windowOf(windowStarts.second))
  const last = aggregate(windowOf(windowStarts.last))
  const check = (what: string, a: number, b: number, unit: string, information = false): Check => ({
    what,
    second: a,
    last: b,
    unit,
    ratio: b / a,
    met: Number.isFinite(b / a) && b / a <= MAX_RATIO,
    information,
  })
  const checks = [
    check('API RSS, mean', second.apiRss, last.apiRss, 'MiB'),
    check('worker RSS, mean', second.workerRss, last.workerRss, 'MiB'),
    check('API event-loop delay p99, mean of the seconds', second.apiEld, last.apiEld, 'ms'),
    check('request latency p99', second.p99, last.p99, 'ms'),
    check('worker event-loop delay p99, mean of the seconds', second.workerEld, last.workerEld, 'ms', true),
    check('request latency p50', second.p50, last.p50, 'ms', true),
    check('requests/s', second.rps, last.rps, 'req/s', true),
    check('deliveries/s', second.deliveries, last.deliveries, '/s', true),
    check('API CPU per request answered', second.apiCpuPerRequest, last.apiCpuPerRequest, 'ms', true),
    check('worker CPU, mean', second.workerCpu / 10, last.workerCpu / 10, '% of a core', true),
    check('runner CPU, mean', second.runnerCpu / 10, last.runnerCpu / 10, '% of a core', true),
    check('PostgreSQL CPU, mean', second.pgCpu / 10, last.pgCpu / 10, '% of a core', true),
    check('machine CPU busy, mean', second.machineCpu / 10, last.machineCpu / 10, '% of a core', true),
  ]
  const passed =
    ran.length === options.durationS && errors === 0 && checks.every((c) => c.information || c.met)
  return { minutes, windowStarts, second, last, checks, passed }
}

// ---------------------------------------------------------------------------------------------- notes

/**
 * Seconds when requests queued while the machine computed little: the service and PostgreSQL waiting on the
 * disk (a WAL flush held up), not on CPU. One such second puts hundreds of requests above a window's p99.
 */
export function stalledNote(ran: Second[], windowS: number, windowStarts: { second: number; last: number }) {
  const busy = ran
    .map((s) => s.machineCpu)
    .filter(Number.isFinite)
    .sort((a, b) => a - b)
  const medianBusy = busy[Math.floor(busy.length / 2)] ?? Number.NaN
  const stalled = ran.flatMap((s, i) =>
    s.inFlight > STALL_IN_FLIGHT && s.machineCpu < medianBusy / 2 ? [i] : [],
  )
  const inWindow = (from: number) => stalled.filter((i) => i >= from && i < from + windowS).length
  return (
    `Stalled seconds (more than ${STALL_IN_FLIGHT} requests in flight while the machine's CPU was under half its median ` +
    `of ${fmt(medianBusy / 10)} % of a core): ${stalled.length}` +
    (stalled.length
      ? ` (at ${stalled.map((i) => `${fmt((i + 1) / 60, 1)} min`).join(', ')}); ${inWindow(windowStarts.second)} in the second window, ` +
        `${inWindow(windowStarts.last)} in the last`
      : '') +
    '.'
  )
}

export const eventLoopNote = (second: Aggregate, last: Aggregate) =>
  `The event-loop delay is prom-client's \`nodejs_eventloop_lag_p99_seconds\` (perf_hooks' monitorEventLoopDelay ` +
  `at its default ${ELD_FLOOR_MS} ms resolution, reset at every scrape), scraped once a second: it includes the ` +
  `${ELD_FLOOR_MS} ms sampling interval (an idle loop reads about 10.1 ms). Above it, the API's loop was ` +
  `${fmt(second.apiEld - ELD_FLOOR_MS, 2)} ms late at p99 in the second window and ${fmt(last.apiEld - ELD_FLOOR_MS, 2)} ms in the last.`

export const maintenanceNote = (m: Maintenance, throttle: { delay: string; limit: string }) =>
  `autovacuum is off on this PostgreSQL: the runner ran ANALYZE before the load and, once a minute during it, ` +
  `what autovacuum would have by its default thresholds (throttled as this server's autovacuum is: vacuum_cost_delay ${throttle.delay}, vacuum_cost_limit ${throttle.limit}): ` +
  `${m.done.vacuum} table vacuums and ${m.done.analyze} analyses in ${m.rounds.length} rounds of ` +
  `${m.rounds.length ? `${fmt(Math.min(...m.rounds))}–${fmt(Math.max(...m.rounds))} s` : 'none finished'}` +
  (m.tables.size
    ? `; by table, the seconds it took: ${[...m.tables]
        .sort(([, a], [, b]) => b.seconds - a.seconds)
        .map(([name, t]) => `${name} ${fmt(t.seconds, 1)} s (${t.vacuum} vacuums, ${t.analyze} analyses)`)
        .join(', ')}`
    : '') +
  '.'

/** Every kind of error, by request: how many, the seconds they fell in, the first one's body (null: none). */
export function errorsNote(ops: Map<Op, OpSummary>): string | null {
  const errorRows = [...ops].flatMap(([op, s]) =>
    [...s.errorKinds].map(
      ([kind, e]) =>
        `| ${op} | ${kind} | ${e.count} | ${e.firstSecond + 1}–${e.lastSecond + 1} | \`${e.example.replace(/[`|\n]/g, "'")}\` |`,
    ),
  )
  if (!errorRows.length) return null
  return (
    `Errors by kind (status and error code; the seconds of the run they fell in; the first one's body):\n\n` +
    `| request | kind | count | seconds | first body |\n|---|---|---|---|---|\n${errorRows.join('\n')}`
  )
}

// ---------------------------------------------------------------------------------------------- report

export function report(input: {
  options: SoakOptions
  info: Machine
  rate: number
  rateNote: string
  minutes: Aggregate[]
  second: Aggregate
  last: Aggregate
  checks: Check[]
  ops: Map<Op, OpSummary>
  totals: { sent: number; done: number; errors: number; shed: number; deliveries: number }
  /** How late the load generator sent requests after they were due (its own event loop's lag). */
  lateness: Uint32Array
  end: { outboxDepth: number; failedAttempts: number; retryAttempts: number }
  notes: string[]
  passed: boolean
}): string {
  const { info, options } = input
  const { minutes, windowMinutes, merchants, durationS, windowS } = options
  const lines: string[] = []
  const window = (from: number, to: number) => `${round(from / 60, 2)}–${round(to / 60, 2)} min`
  lines.push(
    `Run of ${info.date}: ${minutes} min at ${fmt(input.rate)} req/s (${input.rateNote}), reached over the first ` +
      `${options.rampSeconds} s, from ${merchants} merchant${merchants === 1 ? '' : 's'} taking turns, windows of ${windowMinutes} min.`,
  )
  lines.push('')
  lines.push(
    '| minute | req/s | errors | p50 ms | p99 ms | API RSS MiB | worker RSS MiB | API event-loop p99 ms | worker event-loop p99 ms | deliveries/s | outbox max | API CPU ms/req | worker CPU % | runner CPU % | PostgreSQL CPU % | machine CPU % |',
  )
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
  input.minutes.forEach((m, i) => {
    lines.push(
      `| ${i + 1} | ${fmt(m.rps)} | ${m.errors} | ${fmt(m.p50, 2)} | ${fmt(m.p99, 2)} | ${fmt(m.apiRss)} | ${fmt(m.workerRss)} | ` +
        `${fmt(m.apiEld, 2)} | ${fmt(m.workerEld, 2)} | ${fmt(m.deliveries)} | ${fmt(m.outboxMax, 0)} | ` +
        `${fmt(m.apiCpuPerRequest, 3)} | ${fmt(m.workerCpu / 10)} | ${fmt(m.runnerCpu / 10)} | ${fmt(m.pgCpu / 10)} | ${fmt(m.machineCpu / 10)} |`,
    )
  })
  lines.push('')
  lines.push('| request | sent | answered | errors | p50 ms | p99 ms | max ms |')
  lines.push('|---|---|---|---|---|---|---|')
  for (const [op, s] of input.ops)
    lines.push(
      `| ${op} | ${s.sent} | ${s.done} | ${s.errors} | ${fmt(percentileOf(s.histogram, 50), 2)} | ` +
        `${fmt(percentileOf(s.histogram, 99), 2)} | ${fmt(maxOf(s.histogram), 1)} |`,
    )
  lines.push('')
  lines.push(
    `Verdict: the second window (${window(windowS, 2 * windowS)}) against the last (${window(durationS - windowS, durationS)}); ` +
      `each ratio last / second at most ${MAX_RATIO}, and no errors.`,
  )
  lines.push('')
  lines.push('| check | second window | last window | ratio | target | met |')
  lines.push('|---|---|---|---|---|---|')
  for (const c of input.checks)
    lines.push(
      `| ${c.what} | ${fmt(c.second, 2)} ${c.unit} | ${fmt(c.last, 2)} ${c.unit} | ${fmt(c.ratio, 3)} × | ` +
        `${c.information ? '—' : `≤ ${MAX_RATIO} ×`} | ${c.information ? '(information)' : c.met ? 'yes' : '**no**'} |`,
    )
  const t = input.totals
  lines.push(
    `| errors (non-2xx, network, not sent) | ${input.second.errors} | ${input.last.errors} | | 0 over the run: ${t.errors} | ${t.errors === 0 ? 'yes' : '**no**'} |`,
  )
  lines.push('')
  lines.push(
    `Totals: ${t.sent.toLocaleString('en-US')} requests due, ${t.done.toLocaleString('en-US')} answered, ` +
      `${t.errors} errors (${t.shed} not sent because ${options.maxInFlight} were in flight); ` +
      `${t.deliveries.toLocaleString('en-US')} webhook deliveries received; after the load, outbox depth ` +
      `${fmt(input.end.outboxDepth, 0)}, delivery attempts that failed ${fmt(input.end.failedAttempts, 0)} and ` +
      `to be retried ${fmt(input.end.retryAttempts, 0)} (worker metrics). The load generator handed the requests ` +
      `to its pool ${fmt(percentileOf(input.lateness, 50), 2)} ms (p50) and ${fmt(percentileOf(input.lateness, 99), 2)} ms ` +
      `(p99) after they were due (its 5 ms clock and its own event loop); the latencies include that. ` +
      `**${input.passed ? 'PASSED' : 'FAILED'}.**`,
  )
  for (const note of input.notes) {
    lines.push('')
    lines.push(note)
  }
  return lines.join('\n')
}

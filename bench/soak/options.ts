/** The soak's command line: its flags, their defaults, and what --help prints. */
import { parseArgs } from 'node:util'
import { type Op, parseMix } from './traffic.ts'

export const USAGE = `Soak: the API and one worker under a fixed rate of mixed traffic, on a database of its own.

  BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:soak -- [flags]

  --minutes 30            length of the load (fractions allowed); at least twice --window-minutes
  --window-minutes 5      the verdict compares the second window of this length with the last
  --rate <req/s>          the total rate; without it, the create throughput is measured first
  --fraction 0.5          without --rate: the rate is this fraction of the measured create throughput
  --ramp-seconds 60       the rate rises linearly from 0 over these seconds, then holds
  --merchants 1           merchants taking turns, each with its keys, webhook URL and transactions
  --connections 64        keep-alive connections of the load generator's pool
  --max-in-flight 5000    above this many requests waiting, a request due is not sent (an error)
  --mix create=12,get=24,list=2,paid=1,refund=1
                          how many of each kind in every round of requests, spread evenly
  --source                run the server from the sources with tsx (default: the build, dist/main.js)
  --keep-database         do not drop the run's database at the end
  --profile <dir>         the API and the worker write a V8 CPU profile there when they stop
  --trace <file>          a CSV line per second: the runner's figures beside PostgreSQL's
  --wal-compression <m>   wal_compression on the run's database only (pglz, lz4, zstd, on, off)
  --max-load 1.5          before measuring the create throughput, wait for the 1-minute load to be at most this
  --load-wait 600         ... for at most this many seconds
  --help                  this text

A run that ends prints its report and records it in bench/results/<date>T<time>-soak.md.
Exit code: 0 when the verdict passes, 2 when it does not, 1 on an error.
`

export interface SoakOptions {
  minutes: number
  windowMinutes: number
  durationS: number
  windowS: number
  /** --rate as given (undefined: measure the create throughput first). */
  rate: number | undefined
  /** --fraction as given, checked only when the throughput is measured. */
  fraction: string
  rampSeconds: number
  merchants: number
  connections: number
  maxInFlight: number
  mix: Op[]
  /** The production build (dist/main.js) rather than the sources. */
  compiled: boolean
  keepDatabase: boolean
  profile: string | undefined
  trace: string | undefined
  walCompression: string | undefined
  maxLoad: number
  loadWait: number
  help: boolean
}

export function soakOptions(args: string[] = process.argv.slice(2)): SoakOptions {
  const { values } = parseArgs({
    args,
    options: {
      minutes: { type: 'string', default: '30' },
      rate: { type: 'string' },
      fraction: { type: 'string', default: '0.5' },
      'ramp-seconds': { type: 'string', default: '60' },
      merchants: { type: 'string', default: '1' },
      'window-minutes': { type: 'string', default: '5' },
      connections: { type: 'string', default: '64' },
      'max-in-flight': { type: 'string', default: '5000' },
      mix: { type: 'string', default: 'create=12,get=24,list=2,paid=1,refund=1' },
      compiled: { type: 'boolean', default: true },
      source: { type: 'boolean', default: false },
      'keep-database': { type: 'boolean', default: false },
      profile: { type: 'string' },
      trace: { type: 'string' },
      'wal-compression': { type: 'string' },
      'max-load': { type: 'string', default: '1.5' },
      'load-wait': { type: 'string', default: '600' },
      help: { type: 'boolean', default: false },
    },
  })
  const minutes = Number(values.minutes)
  const windowMinutes = Number(values['window-minutes'])
  return {
    minutes,
    windowMinutes,
    durationS: Math.round(minutes * 60),
    windowS: Math.round(windowMinutes * 60),
    rate: values.rate ? Number(values.rate) : undefined,
    fraction: values.fraction,
    rampSeconds: Number(values['ramp-seconds']),
    merchants: Number(values.merchants),
    connections: Number(values.connections),
    maxInFlight: Number(values['max-in-flight']),
    mix: values.help ? [] : parseMix(values.mix),
    compiled: values.compiled && !values.source,
    keepDatabase: values['keep-database'],
    profile: values.profile,
    trace: values.trace,
    walCompression: values['wal-compression'],
    maxLoad: Number(values['max-load']),
    loadWait: Number(values['load-wait']),
    help: values.help,
  }
}

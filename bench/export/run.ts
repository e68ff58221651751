/**
 * Export benchmark: the compiled server (`node dist/main.js serve --role api`, what `npm start` runs) exports
 * every transaction of a merchant with `Accept: text/csv`, on PostgreSQL, on a database of its own.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:export -- \
 *     [--rows 1000000] [--runs 2] [--starts 3] [--node-flags '…'] [--keep-database]
 *
 * 1. Seeds --rows transactions of one merchant in SQL (bench/lib.ts), as bench:api does.
 * 2. Warms the server up: a JSON page and a small filtered export, so what is loaded once is loaded.
 * 3. Reads the server's RSS (VmRSS from /proc) at rest, then exports every row --runs times, sampling RSS
 *    every 50 ms: growth = peak − the RSS at rest before the first export. Time to first byte is from
 *    sending the request to the first chunk of the body; every line is counted (rows + the header).
 *
 * The targets: RSS grows by less than 50 MB exporting 1 million transactions; first byte in under 1 s.
 * It prints its figures as JSON on stdout, and its report on stderr, recorded in
 * bench/results/<date>T<time>-export.md (bench/lib.ts, writeResult).
 */
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createServices } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { connectPostgres, migrateToLatest } from '../../src/db/index.ts'
import {
  benchDatabase,
  benchEnv,
  benchOptions,
  round,
  rssMiB,
  sampleRss,
  seedDatabase,
  startServer,
  writeResult,
} from '../lib.ts'

const values = benchOptions({
  rows: '1000000',
  runs: '2',
  starts: '3',
  'node-flags': '',
  'keep-database': false,
})
const ROWS = Number(values.rows)
const RUNS = Number(values.runs)
const STARTS = Number(values.starts)
const nodeFlags = (values['node-flags'] as string).split(' ').filter(Boolean)
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const RSS_TARGET_MB = 50
const TTFB_TARGET_MS = 1000
const log = (line: string) => process.stderr.write(`[bench:export] ${line}\n`)

interface Export {
  ttfbMs: number
  seconds: number
  lines: number
  bytes: number
}

/** One export, read to the end as a client would: time to first byte, lines and bytes. */
async function exportAll(base: string, headers: Record<string, string>, query = ''): Promise<Export> {
  const started = performance.now()
  const res = await fetch(`${base}/integration/transactions${query}`, {
    headers: { ...headers, accept: 'text/csv' },
  })
  if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status}: ${await res.text()}`)
  let ttfbMs = -1
  let lines = 0
  let bytes = 0
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    if (ttfbMs < 0) ttfbMs = performance.now() - started
    bytes += chunk.length
    for (const byte of chunk) if (byte === 0x0a) lines++
  }
  return { ttfbMs: round(ttfbMs), seconds: round((performance.now() - started) / 1000, 2), lines, bytes }
}

async function main() {
  if (!existsSync('dist/main.js')) throw new Error('dist/main.js is missing: run `npm run build` first')
  const database = await benchDatabase(adminUrl, 'mg_bench_export')
  const { name, info } = database
  const databaseUrl = database.url
  log(`database ${name}`)
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  try {
    const env = benchEnv(databaseUrl, randomBytes(32).toString('hex'))
    const handle = await connectPostgres(databaseUrl, 2)
    await migrateToLatest(handle.db)
    const services = createServices(handle.db, loadConfig(env))
    const { merchant, keys } = await services.merchants.createMerchant({ name: 'Bench export' })
    await services.close()
    await handle.close()
    await seedDatabase(databaseUrl, merchant.uuid, ROWS, log)

    const headers = { 'x-api-key': keys.test.secret }
    const runs: (Export & {
      start: number
      restMiB: number
      afterMiB: number
      peakMiB: number
      growthMiB: number
    })[] = []
    for (let start = 1; start <= STARTS; start++) {
      server = await startServer(
        'API',
        [...nodeFlags, 'dist/main.js', 'serve', '--role', 'api'],
        env,
        '/integration/health',
      )
      const pid = server.child.pid as number
      // Warm-up: what is loaded once (routes, serializers, prepared statements, pool) is loaded before measuring.
      await (await fetch(`${server.base}/integration/transactions?per_page=100`, { headers })).text()
      const warm = await exportAll(server.base, headers, '?status=failed&date_from=2000-01-01&search=amber')
      log(`start ${start}: warm-up export of ${warm.lines} lines`)
      const restMiB = round(rssMiB(pid))
      for (let run = 1; run <= RUNS; run++) {
        const sampler = sampleRss(pid, 50)
        const measured = await exportAll(server.base, headers)
        const peakMiB = sampler.stop()
        if (measured.lines !== ROWS + 1) throw new Error(`expected ${ROWS + 1} lines, got ${measured.lines}`)
        const afterMiB = round(rssMiB(pid))
        runs.push({ ...measured, start, restMiB, afterMiB, peakMiB, growthMiB: round(peakMiB - restMiB) })
        log(`start ${start}, run ${run}: ${JSON.stringify(runs[runs.length - 1])}`)
      }
      await server.stop()
      server = undefined
    }
    const worstGrowth = Math.max(...runs.map((r) => r.growthMiB))
    const worstTtfb = Math.max(...runs.map((r) => r.ttfbMs))
    const result = { machine: info, rows: ROWS, starts: STARTS, nodeFlags, runs, worstGrowth, worstTtfb }
    console.log(JSON.stringify(result, null, 2))

    const MB = 1_000_000 / 2 ** 20 // one MB (10^6 bytes) in MiB
    const block = [
      `The server is started ${STARTS} times; each start is warmed up, then exports every row ${RUNS} times. Growth is the peak RSS during an export minus the RSS at rest after that start's warm-up.`,
      '',
      '| start | run | rows | CSV size | total time | rows/s | time to first byte | vs target (< 1 s) | RSS at rest | RSS peak | RSS after | RSS growth | vs target (< 50 MB) |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
      ...runs.map(
        (r) =>
          `| ${r.start} | ${runs.filter((x) => x.start === r.start).indexOf(r) + 1} | ${ROWS.toLocaleString('en-US')} | ${round(r.bytes / 2 ** 20)} MiB | ${r.seconds} s | ${Math.round(ROWS / r.seconds).toLocaleString('en-US')} | ${r.ttfbMs} ms | ${round(r.ttfbMs / TTFB_TARGET_MS, 3)} × | ${r.restMiB} MiB | ${r.peakMiB} MiB | ${r.afterMiB} MiB | ${r.growthMiB} MiB (${round(r.growthMiB / MB)} MB) | ${round(r.growthMiB / MB / RSS_TARGET_MB, 2)} × |`,
      ),
      '',
      `Both targets ${worstGrowth / MB < RSS_TARGET_MB && worstTtfb < TTFB_TARGET_MS ? 'met' : 'NOT met'}: worst growth ${round(worstGrowth / MB)} MB, worst first byte ${worstTtfb} ms.`,
    ].join('\n')
    console.error(writeResult('export', info, block))
  } finally {
    await server?.stop()
    await database.close(Boolean(values['keep-database']))
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})

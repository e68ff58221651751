/**
 * Webhook delivery benchmark: deliveries per second to a local receiver that answers at once, and the
 * event-to-receipt latency at idle. Runs the real worker process(es) against PostgreSQL.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/webhooks/run.ts \
 *     [--events 5000] [--workers 1] [--latency-samples 200] [--source]
 *
 * The workers run the production build as `npm start` runs it (`npm run build` first); --source runs them from
 * the sources with tsx. It prints its figures as JSON and records them in bench/results/<date>T<time>-webhooks.md
 * (bench/lib.ts, writeResult).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createServices } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { connectPostgres, migrateToLatest } from '../../src/db/index.ts'
import { benchDatabase, benchOptions, round, serveArgs, writeResult } from '../lib.ts'

const values = benchOptions({
  events: '5000',
  workers: '1',
  'latency-samples': '200',
  source: false,
})
const EVENTS = Number(values.events)
const WORKERS = Number(values.workers)
const SAMPLES = Number(values['latency-samples'])
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const masterKey = randomBytes(32).toString('hex')

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN

async function waitFor(check: () => boolean, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

async function main() {
  // A database of its own.
  const database = await benchDatabase(adminUrl, 'mg_bench_webhooks')
  const databaseUrl = database.url

  // The receiver: answers 200 at once and notes when each event arrived.
  const receivedAt = new Map<string, number>()
  const byTransaction = new Map<string, number>()
  let received = 0
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const now = performance.timeOrigin + performance.now()
      received++
      const id = String(req.headers['webhook-id'])
      if (!receivedAt.has(id)) receivedAt.set(id, now)
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      if (body.transaction?.uuid) byTransaction.set(body.transaction.uuid, now)
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`

  const env = { APP_ENV: 'development', DATABASE_URL: databaseUrl, MASTER_KEY: masterKey, LOG_LEVEL: 'warn' }
  const config = loadConfig(env)
  const handle = await connectPostgres(databaseUrl, 10)
  await migrateToLatest(handle.db)
  const services = createServices(handle.db, config)
  await services.rates.setMarketRate('RUB', '92.15')
  const { merchant } = await services.merchants.createMerchant({ name: 'Bench' })
  const auth = { keyId: 'bench', mode: 'test' as const, merchant }
  await services.webhooks.updateConfig(auth, { url: receiverUrl })

  const createPaid = async (i: number) => {
    const tx = await services.transactions.create(auth, {
      amount: 10000 + i,
      currency: 'RUB',
      payment_method: 'card',
      external_id: `bench-${i}-${randomBytes(3).toString('hex')}`,
    })
    await services.sandbox.simulateTransaction(auth, tx.uuid, 'paid')
    return tx.uuid
  }

  // Throughput: queue the events with no worker running, then start the workers and time the drain.
  const queueStart = performance.now()
  const concurrency = 16
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < EVENTS) await createPaid(next++)
    }),
  )
  const queueSeconds = (performance.now() - queueStart) / 1000

  const workers: ChildProcess[] = []
  const drainStart = performance.timeOrigin + performance.now()
  for (let i = 0; i < WORKERS; i++) {
    workers.push(
      spawn(process.execPath, serveArgs('worker', { source: values.source }), {
        env: { ...process.env, ...env },
        stdio: 'inherit',
      }),
    )
  }
  await waitFor(() => receivedAt.size >= EVENTS, 600_000, 'the queued events')
  const times = [...receivedAt.values()].sort((a, b) => a - b)
  const first = times[0] as number
  const last = times[times.length - 1] as number
  const drainSeconds = (last - first) / 1000

  // Latency at idle: one event at a time, from its commit to its arrival.
  const latencies: number[] = []
  for (let i = 0; i < SAMPLES; i++) {
    const tx = await services.transactions.create(auth, {
      amount: 5000,
      currency: 'RUB',
      payment_method: 'card',
      external_id: `lat-${i}-${randomBytes(3).toString('hex')}`,
    })
    // Counted from before the paid callback is handled, so the figure includes writing the event too.
    const startedAt = performance.timeOrigin + performance.now()
    await services.sandbox.simulateTransaction(auth, tx.uuid, 'paid')
    await waitFor(() => byTransaction.has(tx.uuid), 10_000, 'a latency sample')
    latencies.push((byTransaction.get(tx.uuid) as number) - startedAt)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  latencies.sort((a, b) => a - b)

  for (const w of workers) w.kill('SIGTERM')
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('exit', resolve))))
  const duplicates = received - receivedAt.size
  await services.close()
  await handle.close()
  receiver.close()
  await database.close(false)

  const result = {
    machine: database.info,
    events: EVENTS,
    workers: WORKERS,
    queue_seconds: round(queueSeconds, 2),
    drain_seconds: round(drainSeconds, 2),
    deliveries_per_second: round(EVENTS / drainSeconds),
    first_delivery_after_worker_start_ms: round(first - drainStart),
    duplicate_receipts: duplicates,
    latency_ms: {
      samples: SAMPLES,
      p50: round(percentile(latencies, 50)),
      p99: round(percentile(latencies, 99)),
      max: round(latencies[latencies.length - 1] ?? NaN),
    },
  }
  const json = JSON.stringify(result, null, 2)
  console.log(json)
  writeResult('webhooks', database.info, `\`\`\`json\n${json}\n\`\`\``)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})

/**
 * Provider benchmark: inbound callbacks applied per second against the create-payment throughput of the same run,
 * and status sync of many pending payments at one poll each. Runs the real server (`serve --role api`, and
 * `serve --role worker` processes for status sync) against PostgreSQL, with the provider emulator in this process.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx bench/callbacks/run.ts \
 *     [--duration 15] [--connections 16] [--merchants 8] [--sync-payments 100000] [--workers 2] [--source] [--keep-database] [--profile DIR]
 *
 * 1. create: POST /integration/transactions (a unique external_id per request), `--duration` seconds.
 * 2. callbacks: POST /providers/{account}/callbacks, each a `payment.succeeded` signed with the account's secret
 *    about a different pending live payment handed to the account, so that every request moves a payment to paid
 *    (its ledger entry and its event included); `--duration` seconds. Every answer must be 200 `applied`. Run
 *    twice: payments of one merchant (whose balances every posting locks in turn), then payments spread over
 *    `--merchants` merchants.
 * 3. status sync: `--sync-payments` pending payments handed to the emulator (which holds each of them) are made
 *    due at once; `--workers` worker processes ask the emulator about each; the time until every one has been
 *    asked once, against the first interval of the schedule (PROVIDER_SYNC_SCHEDULE's first, 60 s by default).
 *
 * It prints its report and records it in bench/results/<date>T<time>-callbacks.md (bench/lib.ts, writeResult).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import pg from 'pg'
import { Agent, request } from 'undici'
import { signCallback } from '../../src/connectors/http-acquirer/signature.ts'
import { buildEmulator } from '../../src/emulator/server.ts'
import {
  benchDatabase,
  benchEnv,
  benchMerchant,
  benchOptions,
  fmt,
  freePort,
  loadRun,
  round,
  type Server,
  sleep,
  startService,
  writeResult,
} from '../lib.ts'

const values = benchOptions({
  duration: '15',
  connections: '16',
  'sync-payments': '100000',
  merchants: '8',
  workers: '2',
  source: false,
  'keep-database': false,
  profile: '',
})
const DURATION = Number(values.duration)
const CONNECTIONS = Number(values.connections)
const SYNC_PAYMENTS = Number(values['sync-payments'])
const WORKERS = Number(values.workers)
/** The second callback run spreads its payments over this many merchants. */
const MERCHANTS = Number(values.merchants)
/** The first status sync interval: what the sync of every payment must finish within. */
const INTERVAL_S = 60
/** `--profile DIR`: the API's V8 CPU profile (`--cpu-prof`), written to DIR when it stops. */
const nodeArgs = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : []
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const masterKey = randomBytes(32).toString('hex')
const log = (line: string) => process.stderr.write(`[bench:callbacks] ${line}\n`)

/** A load run at `CONNECTIONS` for `DURATION` seconds (or `seconds`), each request made by `next`. */
const fire = (base: string, next: Parameters<typeof loadRun>[3], seconds = DURATION) =>
  loadRun(base, CONNECTIONS, seconds, next)

/** `count` pending live card payments of 100.00 RUB handed to `accountUuid`, with the references `refOf(i)`. */
async function seedHandedOver(
  client: pg.Client,
  merchantUuid: string,
  accountUuid: string,
  rows: { uuid: string; reference: string }[],
  syncDue: boolean,
) {
  const chunk = 20_000
  for (let from = 0; from < rows.length; from += chunk) {
    const part = rows.slice(from, from + chunk)
    const uuids = part.map((r) => r.uuid)
    const references = part.map((r) => r.reference)
    await client.query(
      `INSERT INTO transactions (uuid, merchant_uuid, mode, type, external_id, amount, gross_amount, net_amount,
         fee_amount, fee_bps, fee_payer, merchant_fee_share_bps, merchant_fee_merchant_amount,
         merchant_fee_customer_amount, currency, settlement_currency, settlement_amount, fx_rate,
         fx_rate_updated_at, payment_method, status, payment_token, expires_at, aggregate_version, created_at,
         updated_at)
       SELECT u, $1::uuid, 'live', 'payment', 'seed-' || u, 10000, 10000, 9750, 250, 250, 'merchant', 10000, 250,
         0, 'RUB', 'USDT', 1058034, '92.15', now(), 'card', 'pending', md5(u::text), now() + interval '1 day', 1,
         now(), now()
       FROM unnest($2::uuid[]) AS u`,
      [merchantUuid, uuids],
    )
    await client.query(
      `INSERT INTO payment_handovers (transaction_uuid, account_uuid, state, provider_reference, sync_due_at,
         created_at, updated_at)
       SELECT u, $1::uuid, 'handed_over', r, CASE WHEN $4 THEN now() END, now(), now()
       FROM unnest($2::uuid[], $3::text[]) AS t(u, r)`,
      [accountUuid, uuids, references, syncDue],
    )
  }
  await client.query('VACUUM (ANALYZE) transactions, payment_handovers')
}

async function main() {
  const database = await benchDatabase(adminUrl, 'mg_bench_callbacks')
  const servers: Server[] = []
  const emulator = buildEmulator({ apiKey: 'sk_bench', publicUrl: 'http://emulator.bench' })
  await emulator.listen({ port: 0, host: '127.0.0.1' })
  const emulatorBase = `http://127.0.0.1:${(emulator.server.address() as AddressInfo).port}`
  const client = new pg.Client({ connectionString: database.url })
  try {
    // Status sync waits the first interval after each ask: nothing is asked twice within the run.
    const env = { ...benchEnv(database.url, masterKey), PROVIDER_SYNC_SCHEDULE: String(INTERVAL_S) }
    let account = { uuid: '', name: '' }
    let secret = ''
    const others: string[] = []
    const { merchant, keys } = await benchMerchant(env, 'Bench callbacks', async (services) => {
      for (let i = 1; i < MERCHANTS; i++)
        others.push((await services.merchants.createMerchant({ name: `Bench callbacks ${i}` })).merchant.uuid)
      const added = await services.providers.accounts.add({
        name: 'bench-acquirer',
        kind: 'http-acquirer',
        mode: 'live',
        settings: { base_url: `${emulatorBase}/v1`, timeout_ms: '10000' },
        secrets: { api_key: 'sk_bench' },
      })
      account = { uuid: added.account.uuid, name: added.account.name }
      secret = added.callbackSecret as string
    })
    await client.connect()

    // Enough handed-over payments for every callback a run can send: one merchant's (`cb-`), and the same number
    // spread over MERCHANTS merchants (`mb-`, payment i the merchant i mod MERCHANTS's).
    const callbackPayments = Math.max(20_000, DURATION * 4_000)
    log(`seeding ${fmt(2 * callbackPayments)} handed-over payments for the callbacks`)
    const merchants = [merchant.uuid, ...others]
    const refs = (prefix: string) =>
      Array.from({ length: callbackPayments }, (_, i) => ({
        uuid: randomUUID(),
        reference: `${prefix}-${i}`,
      }))
    await seedHandedOver(client, merchant.uuid, account.uuid, refs('cb'), false)
    const spread = refs('mb')
    for (const [m, uuid] of merchants.entries())
      await seedHandedOver(
        client,
        uuid,
        account.uuid,
        spread.filter((_, i) => i % merchants.length === m),
        false,
      )

    const api = await startService('api', env, { source: values.source, nodeArgs })
    servers.push(api)
    const runTag = randomBytes(3).toString('hex')
    let seq = 0
    const create = () => ({
      path: '/integration/transactions',
      headers: { 'x-api-key': keys.test.secret },
      body: JSON.stringify({
        amount: 10000 + (seq % 90000),
        currency: 'RUB',
        payment_method: 'card',
        external_id: `${runTag}-${seq++}`,
      }),
    })
    const sent = { cb: 0, mb: 0 }
    const callbackOf = (prefix: 'cb' | 'mb') => () => {
      const n = sent[prefix]++
      const id = `evt_${runTag}_${prefix}_${n}`
      const body = JSON.stringify({
        id,
        type: 'payment.succeeded',
        data: { reference: `${prefix}-${n}`, amount: 10000, currency: 'RUB' },
      })
      return {
        path: `/providers/${account.uuid}/callbacks`,
        body,
        headers: signCallback([secret], id, new Date(), body),
      }
    }
    log('warming up')
    await fire(api.base, create, 3)
    await fire(api.base, callbackOf('cb'), 3)
    log(`create for ${DURATION} s`)
    const creates = await fire(api.base, create)
    log(`callbacks for ${DURATION} s, one merchant's payments`)
    const callbacks = await fire(api.base, callbackOf('cb'))
    log(`callbacks for ${DURATION} s, payments of ${MERCHANTS} merchants`)
    const spreadCallbacks = await fire(api.base, callbackOf('mb'))
    const { rows: counted } = await client.query<{ result: string; n: string }>(
      'SELECT result, count(*) AS n FROM connector_callbacks GROUP BY result ORDER BY result',
    )
    const paid = Number(
      (
        await client.query<{ n: string }>(
          "SELECT count(*) AS n FROM transactions WHERE mode = 'live' AND status = 'paid'",
        )
      ).rows[0]?.n,
    )
    await api.stop()

    // Status sync: payments the emulator holds, all due now, and the workers started.
    log(`handing ${fmt(SYNC_PAYMENTS)} payments to the emulator`)
    const agent = new Agent({ connections: 64 })
    const held: { uuid: string; reference: string }[] = []
    for (let from = 0; from < SYNC_PAYMENTS; from += 256) {
      const batch = Array.from({ length: Math.min(256, SYNC_PAYMENTS - from) }, () => randomUUID())
      held.push(
        ...(await Promise.all(
          batch.map(async (uuid) => {
            const res = await request(`${emulatorBase}/v1/payments`, {
              method: 'POST',
              dispatcher: agent,
              headers: {
                authorization: 'Bearer sk_bench',
                'content-type': 'application/json',
                'idempotency-key': uuid,
              },
              body: JSON.stringify({
                order_id: uuid,
                amount: 10000,
                currency: 'RUB',
                method: 'card',
                return_url: 'http://gateway.bench/pay/t',
              }),
            })
            const created = (await res.body.json()) as { reference: string }
            return { uuid, reference: created.reference }
          }),
        )),
      )
    }
    await agent.close()
    log('seeding their hand-overs, due now')
    await seedHandedOver(client, merchant.uuid, account.uuid, held, true)
    const syncStarted = performance.now()
    for (let i = 0; i < WORKERS; i++) {
      const port = await freePort()
      servers.push(
        await startService('worker', { ...env, METRICS_PORT: String(port) }, { source: values.source }),
      )
    }
    const asked = async () =>
      Number(
        (
          await client.query<{ n: string }>(
            'SELECT count(*) AS n FROM payment_handovers WHERE sync_count >= 1 AND transaction_uuid = ANY($1::uuid[])',
            [held.map((h) => h.uuid)],
          )
        ).rows[0]?.n,
      )
    const deadline = syncStarted + 10 * INTERVAL_S * 1000
    let done = await asked()
    while (done < held.length && performance.now() < deadline) {
      await sleep(500)
      done = await asked()
    }
    const syncSeconds = round((performance.now() - syncStarted) / 1000)

    const ratio = callbacks.rps / creates.rps
    const p99Ratio = callbacks.p99 / creates.p99
    const spreadRatio = spreadCallbacks.rps / creates.rps
    const spreadP99 = spreadCallbacks.p99 / creates.p99
    const report = [
      '| what | requests | req/s | p50 ms | p99 ms | max ms | non-2xx |',
      '|---|---|---|---|---|---|---|',
      `| create | ${fmt(creates.requests, 0)} | ${fmt(creates.rps)} | ${creates.p50} | ${creates.p99} | ${creates.max} | ${creates.non2xx} |`,
      `| callbacks applied, one merchant | ${fmt(callbacks.requests, 0)} | ${fmt(callbacks.rps)} | ${callbacks.p50} | ${callbacks.p99} | ${callbacks.max} | ${callbacks.non2xx} |`,
      `| callbacks applied, ${MERCHANTS} merchants | ${fmt(spreadCallbacks.requests, 0)} | ${fmt(spreadCallbacks.rps)} | ${spreadCallbacks.p50} | ${spreadCallbacks.p99} | ${spreadCallbacks.max} | ${spreadCallbacks.non2xx} |`,
      '',
      '| check | measured | target | met |',
      '|---|---|---|---|',
      `| callbacks/s vs create/s, one merchant | ${round(ratio, 2)} × | ≥ 1.0 × | ${ratio >= 1 ? 'yes' : 'no'} |`,
      `| callback p99 vs create p99, one merchant | ${round(p99Ratio, 2)} × | ≤ 1.5 × | ${p99Ratio <= 1.5 ? 'yes' : 'no'} |`,
      `| callbacks/s vs create/s, ${MERCHANTS} merchants | ${round(spreadRatio, 2)} × | ≥ 1.0 × | ${spreadRatio >= 1 ? 'yes' : 'no'} |`,
      `| callback p99 vs create p99, ${MERCHANTS} merchants | ${round(spreadP99, 2)} × | ≤ 1.5 × | ${spreadP99 <= 1.5 ? 'yes' : 'no'} |`,
      `| status sync of ${fmt(held.length, 0)} payments, ${WORKERS} workers | ${syncSeconds} s (${fmt(done, 0)} asked) | ≤ ${INTERVAL_S} s | ${done === held.length && syncSeconds <= INTERVAL_S ? 'yes' : 'no'} |`,
      '',
      `Callback log by result: ${counted.map((r) => `${r.result} ${fmt(Number(r.n), 0)}`).join(', ')}; live payments paid: ${fmt(paid, 0)}.`,
    ].join('\n')
    process.stdout.write(
      writeResult('callbacks', database.info, report, [
        ['duration', `${DURATION} s per measurement, ${CONNECTIONS} connections`],
        ['server', values.source ? 'sources (tsx)' : 'production build'],
      ]),
    )
  } finally {
    for (const server of servers.reverse()) await server.stop()
    await client.end().catch(() => {})
    await emulator.close()
    await database.close(values['keep-database'])
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})

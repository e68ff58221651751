/**
 * The soak's traffic: its merchants, the mix of requests, the create throughput it takes its rate from, and the
 * open-model load loop, which sends each request when it is due whatever the answers, and counts every answer's
 * latency from when it was due.
 */
import { randomBytes } from 'node:crypto'
import autocannon from 'autocannon'
import type { Pool } from 'undici'
import { sign } from '../../src/http/auth.ts'
import { benchMerchant } from '../lib.ts'
import { BUCKETS, record } from './histogram.ts'
import { newSecond, type Second } from './sampler.ts'

export type Op = 'create' | 'get' | 'list' | 'paid' | 'refund'
export const OPS: Op[] = ['create', 'get', 'list', 'paid', 'refund']

/**
 * `--mix`: how many of each kind in every round of requests (by default 12 creates, 24 gets, 2 lists, 1 paid
 * and 1 refund in 40), the kinds spread evenly through the round.
 */
export function parseMix(text: string): Op[] {
  const counts = text.split(',').map((part) => {
    const [op, count] = part.split('=')
    if (!OPS.includes(op as Op) || !/^\d+$/.test(count ?? '')) throw new Error(`--mix: cannot read "${part}"`)
    return [op as Op, Number(count)] as const
  })
  const total = counts.reduce((sum, [, count]) => sum + count, 0)
  if (total === 0) throw new Error('--mix: no requests')
  return counts
    .flatMap(([op, count]) =>
      Array.from({ length: count }, (_, k) => ({ op, at: ((k + 0.5) * total) / count })),
    )
    .sort((a, b) => a.at - b.at)
    .map((slot) => slot.op)
}

// ---------------------------------------------------------------------------------------------- merchants

/** A merchant of the traffic: its keys, and the transactions its requests draw from. */
export interface Shop {
  keys: { test: { key_id: string; secret: string } }
  apiKey: Record<string, string>
  /** Created transactions (gets), the newest pending ones (paid), paid ones (refunds): rings of 10,000. */
  created: string[]
  createdNext: number
  pending: string[]
  paid: string[]
  paidNext: number
}

const RING = 10_000
const remember = (ring: string[], at: number, uuid: string) => {
  if (ring.length < RING) ring.push(uuid)
  else ring[at % RING] = uuid
}

/** `--merchants`: the traffic's merchants, each with its own keys, webhook URL and transactions. */
export async function createShops(
  env: Record<string, string>,
  count: number,
  webhookUrl: string,
): Promise<Shop[]> {
  const shops: Shop[] = []
  for (let i = 0; i < count; i++) {
    const { keys } = await benchMerchant(env, `Bench soak ${i + 1}`, (services, { merchant, keys }) =>
      services.webhooks
        .updateConfig({ keyId: keys.test.key_id, mode: 'test', merchant }, { url: webhookUrl })
        .then(() => undefined),
    )
    shops.push({
      keys,
      apiKey: { 'x-api-key': keys.test.secret },
      created: [],
      createdNext: 0,
      pending: [],
      paid: [],
      paidNext: 0,
    })
  }
  return shops
}

// ---------------------------------------------------------------------------------------------- throughput

/** Creates for 20 s at 50 connections, after 3 s of warm-up: the mean requests a second. */
export async function measureCreateThroughput(
  base: string,
  headers: Record<string, string>,
): Promise<number> {
  let n = 0
  const tag = randomBytes(3).toString('hex')
  const run = (seconds: number) =>
    (autocannon as unknown as (o: autocannon.Options) => Promise<autocannon.Result>)({
      url: base,
      connections: 50,
      duration: seconds,
      headers: { 'content-type': 'application/json', ...headers },
      requests: [
        {
          setupRequest: (req) => ({
            ...req,
            method: 'POST',
            path: '/integration/transactions',
            body: JSON.stringify({
              amount: 100_000 + (n % 1000),
              currency: 'RUB',
              payment_method: 'card',
              external_id: `m${tag}-${n++}`,
            }),
          }),
        },
      ],
    })
  await run(3)
  const result = await run(20)
  const bad = result.non2xx + result.errors + result.timeouts
  if (bad > 0) throw new Error(`the create throughput run had ${bad} errors or non-2xx answers`)
  return result.requests.average
}

// ---------------------------------------------------------------------------------------------- requests

/** One request of the mix, ready to send. */
export interface Made {
  op: Op
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  body?: string
  uuid?: string
  shop: Shop
}

/** The requests of the mix, made from what the merchants' earlier requests created. */
export function requestMaker(shops: Shop[], mix: Op[]) {
  const tag = randomBytes(3).toString('hex')
  let seq = 0
  const createBody = () => {
    const n = seq++
    return JSON.stringify({
      amount: 100_000 + (n % 1000),
      currency: 'RUB',
      payment_method: 'card',
      external_id: `s${tag}-${n}`,
      description: `Soak order ${n}`,
    })
  }

  let turn = 0
  const make = (wanted: Op): Made => {
    // The merchants take turns, one further on at each round of the mix: taking turns by request alone,
    // a mix whose length the number of merchants divides gave each kind of request to one merchant always
    // (with 4, the paid callbacks all went to one and the refunds all to another, whose balance they drained).
    const round = Math.floor(turn / mix.length)
    const shop = shops[(turn++ + round) % shops.length] as Shop
    const { created, pending, paid, apiKey, keys } = shop
    let op = wanted
    // Nothing to draw from yet: a create instead.
    if ((op === 'get' && created.length === 0) || (op === 'paid' && pending.length === 0)) op = 'create'
    if (op === 'refund' && paid.length === 0) op = 'create'
    switch (op) {
      case 'create':
        return {
          op,
          method: 'POST',
          path: '/integration/transactions',
          headers: { 'content-type': 'application/json', ...apiKey },
          body: createBody(),
          shop,
        }
      case 'get': {
        const uuid = created[Math.floor(Math.random() * created.length)] as string
        return { op, method: 'GET', path: `/integration/transactions/${uuid}`, headers: apiKey, shop }
      }
      case 'list':
        return { op, method: 'GET', path: '/integration/transactions?per_page=25', headers: apiKey, shop }
      case 'paid': {
        // The newest pending one: far from its expiry.
        const uuid = pending.pop() as string
        return {
          op,
          method: 'POST',
          path: `/integration/sandbox/transactions/${uuid}/paid`,
          headers: apiKey,
          uuid,
          shop,
        }
      }
      case 'refund': {
        const uuid = paid[Math.floor(Math.random() * paid.length)] as string
        const body = JSON.stringify({ transaction_uuid: uuid, amount_minor: 100 })
        const idempotencyKey = `soak-${tag}-${seq++}`
        const t = Math.floor(Date.now() / 1000)
        const path = '/integration/refunds'
        const v1 = sign(keys.test.secret, t, 'POST', path, idempotencyKey, body)
        return {
          op,
          method: 'POST',
          path,
          headers: {
            'content-type': 'application/json',
            'idempotency-key': idempotencyKey,
            'x-signature': `key_id=${keys.test.key_id},t=${t},v1=${v1}`,
          },
          body,
          shop,
        }
      }
    }
  }
  return { createBody, make }
}

/** A few transactions to draw from before the clock starts: 200 created, 50 of them paid, per merchant. */
export async function seedShops(
  http: Pool,
  shops: Shop[],
  createBody: () => string,
  signal: AbortSignal,
): Promise<void> {
  for (let i = 0; i < 200 * shops.length; i++) {
    signal.throwIfAborted()
    const { created, pending, paid, apiKey } = shops[i % shops.length] as Shop
    const res = await http.request({
      method: 'POST',
      path: '/integration/transactions',
      headers: { 'content-type': 'application/json', ...apiKey },
      body: createBody(),
    })
    const body = (await res.body.json()) as { uuid?: string }
    if (res.statusCode !== 201 || !body.uuid)
      throw new Error(`seeding a create: ${res.statusCode} ${JSON.stringify(body).slice(0, 300)}`)
    created.push(body.uuid)
    if (i < 50 * shops.length) {
      const payRes = await http.request({
        method: 'POST',
        path: `/integration/sandbox/transactions/${body.uuid}/paid`,
        headers: apiKey,
      })
      const text = await payRes.body.text()
      if (payRes.statusCode !== 200)
        throw new Error(`seeding a paid: ${payRes.statusCode} ${text.slice(0, 300)}`)
      paid.push(body.uuid)
    } else pending.push(body.uuid)
  }
  for (const shop of shops) shop.createdNext = shop.created.length
}

// ---------------------------------------------------------------------------------------------- the load

export interface ErrorKind {
  count: number
  firstSecond: number
  lastSecond: number
  example: string
}

export interface OpSummary {
  sent: number
  done: number
  errors: number
  histogram: Uint32Array
  /** Every kind of error seen (status and error code, a refusal, a network error): how many, when, one body. */
  errorKinds: Map<string, ErrorKind>
}

/** What kind of error an answer is: its status and the envelope's code, or the reason it has no answer. */
function errorKindOf(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown }; code?: unknown }
    const code = body.error?.code ?? body.code
    if (typeof code === 'string') return `${status} ${code}`
  } catch {}
  return String(status)
}

export interface LoadInput {
  http: Pool
  make: (op: Op) => Made
  mix: Op[]
  /** Requests a second once the ramp is over. */
  rate: number
  rampSeconds: number
  durationS: number
  maxInFlight: number
}

export type Load = ReturnType<typeof startLoad>

/**
 * Starts the clock: every 5 ms it sends what has come due since, each request stamped with the instant it was
 * due. Over the first --ramp-seconds the rate rises linearly from 0 (a cold server, its connections and JIT, is
 * not met with the whole rate at once); then it holds. Each answer goes into the second it came in.
 */
export function startLoad(input: LoadInput) {
  const { http, make, mix, rate, durationS, maxInFlight } = input
  const seconds: Second[] = Array.from({ length: durationS }, newSecond)
  const ops = new Map<Op, OpSummary>(
    OPS.map((op) => [
      op,
      { sent: 0, done: 0, errors: 0, histogram: new Uint32Array(BUCKETS), errorKinds: new Map() },
    ]),
  )
  const totals = { sent: 0, done: 0, errors: 0, shed: 0, deliveries: 0 }
  /** How late the runner handed requests to the pool after they were due. */
  const lateness = new Uint32Array(BUCKETS)
  let inFlight = 0
  const start = performance.now()
  const secondAt = (now: number) => Math.min(durationS - 1, Math.floor((now - start) / 1000))
  const fail = (op: OpSummary, at: number, kind: string, example: string) => {
    op.errors++
    ;(seconds[at] as Second).errors++
    totals.errors++
    const seen = op.errorKinds.get(kind)
    if (seen) {
      seen.count++
      seen.lastSecond = at
    } else
      op.errorKinds.set(kind, { count: 1, firstSecond: at, lastSecond: at, example: example.slice(0, 300) })
  }

  const send = (made: Made, due: number) => {
    const op = ops.get(made.op) as OpSummary
    op.sent++
    if (inFlight >= maxInFlight) {
      totals.shed++
      fail(op, secondAt(due), 'not sent', `${inFlight} in flight`)
      if (made.op === 'paid' && made.uuid) made.shop.pending.push(made.uuid)
      return
    }
    inFlight++
    const lateMs = performance.now() - due
    record(lateness, lateMs)
    const dueSecond = seconds[secondAt(due)] as Second
    if (lateMs > dueSecond.lateMax) dueSecond.lateMax = lateMs
    http
      .request({ method: made.method, path: made.path, headers: made.headers, body: made.body })
      .then(async (res) => {
        const text = await res.body.text()
        return { status: res.statusCode, text }
      })
      .then(
        ({ status, text }) => {
          const now = performance.now()
          const at = secondAt(now)
          const second = seconds[at] as Second
          const ms = now - due
          record(second.histogram, ms)
          record(op.histogram, ms)
          second.done++
          op.done++
          totals.done++
          if (status < 200 || status > 299) {
            fail(op, at, errorKindOf(status, text), text)
            return
          }
          const { shop } = made
          if (made.op === 'create') {
            const uuid = (JSON.parse(text) as { uuid: string }).uuid
            remember(shop.created, shop.createdNext++, uuid)
            shop.pending.push(uuid)
            if (shop.pending.length > 2 * RING) shop.pending.splice(0, RING)
          } else if (made.op === 'paid' && made.uuid) remember(shop.paid, shop.paidNext++, made.uuid)
        },
        (error: unknown) => {
          const at = secondAt(performance.now())
          ;(seconds[at] as Second).done++
          op.done++
          totals.done++
          const message = error instanceof Error ? error.message : String(error)
          fail(op, at, `network: ${message}`, message)
        },
      )
      .finally(() => {
        inFlight--
      })
  }

  const rampS = Math.min(input.rampSeconds, durationS)
  const dueBy = (s: number) =>
    rampS > 0 && s < rampS ? (rate * s * s) / (2 * rampS) : rate * (s - rampS / 2)
  /** When request n (from 0) is due, in seconds from the start: dueBy's inverse. */
  const dueAtS = (n: number) =>
    rampS > 0 && n < (rate * rampS) / 2 ? Math.sqrt((2 * rampS * n) / rate) : n / rate + rampS / 2
  let mixAt = 0
  const end = start + durationS * 1000
  const clock = setInterval(() => {
    const now = Math.min(performance.now(), end)
    const due = Math.floor(dueBy((now - start) / 1000))
    while (totals.sent < due) {
      const dueAt = start + dueAtS(totals.sent) * 1000
      totals.sent++
      send(make(mix[mixAt++ % mix.length] as Op), dueAt)
    }
  }, 5)

  return {
    /** When the clock started (performance.now()). */
    start,
    seconds,
    ops,
    totals,
    lateness,
    get inFlight() {
      return inFlight
    },
    stop() {
      clearInterval(clock)
    },
  }
}

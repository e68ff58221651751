/**
 * The fuzz run: each request generated from its index, sent through app.inject with a deadline, and judged;
 * what came back tallied for the suite to report and assert on.
 */
import type { LightMyRequestResponse } from 'fastify'
import type { Sender } from '../../src/modules/webhooks/delivery.ts'
import { injectToEnd, type TestContext } from '../helpers/harness.ts'
import { finalize, generate } from './generators.ts'
import { judge, NEVER_OWN } from './judge.ts'
import type { FuzzContext } from './targets.ts'

export const COUNT = Number(process.env.FUZZ_COUNT ?? 1500)
export const ONLY = process.env.FUZZ_ONLY
  ? process.env.FUZZ_ONLY.split(',').map((s) => Number(s.trim()))
  : null
const HANG_MS = 5000

/** Webhook attempts fail at once: the fuzz never leaves the machine, whatever URL it configures. */
export const offlineSender: Sender = {
  send: async () => ({
    ok: false,
    status: null,
    body: null,
    error: 'fuzz: deliveries are not sent',
    durationMs: 0,
    retryAfterSeconds: null,
    startedAt: new Date(),
  }),
  close: async () => {},
}

/** What the server logged as the error of a request (the first error line carrying its id). */
function serverCause(ctx: TestContext, requestId: string): string {
  for (const line of ctx.logs) {
    if (!line.includes(requestId) || !line.includes('"level":50')) continue
    const err = (JSON.parse(line) as { err?: { code?: string; message?: string } }).err
    return [err?.code, err?.message].filter(Boolean).join(' ').slice(0, 160)
  }
  return ''
}

const countBy = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)
export const show = (map: Map<string | number, number>) =>
  [...map.entries()]
    .sort(([a], [b]) => (String(a) < String(b) ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')

/** What a run saw. */
export interface Tally {
  statuses: Map<number, number>
  perRoute: Map<string, { total: number; ok: number; refused: number }>
  tags: Map<string, number>
  clientErrors: Map<string, number>
  problems: string[]
  /** One line per kind of failure: route, status, first problem. */
  problemKinds: Map<string, { count: number; first: number }>
  hung: string[]
  /** The request's own Idempotency-Keys of requests refused before they owned them (NEVER_OWN). */
  refusedKeys: string[]
  hostedPage404: number
  expectations: number
  sentCount: number
  seconds: number
}

/** Generates, sends and judges the requests of these indices, one after another. */
export async function runRequests(fc: FuzzContext, indices: number[]): Promise<Tally> {
  const { ctx } = fc
  const statuses = new Map<number, number>()
  const perRoute = new Map<string, { total: number; ok: number; refused: number }>()
  const tags = new Map<string, number>()
  const clientErrors = new Map<string, number>()
  const problems: string[] = []
  const problemKinds = new Map<string, { count: number; first: number }>()
  const hung: string[] = []
  const refusedKeys: string[] = []
  let hostedPage404 = 0
  let expectations = 0
  let sentCount = 0
  const started = Date.now()

  for (const index of indices) {
    const d = generate(index, fc)
    const sent = finalize(d)
    for (const tag of d.tags) countBy(tags, tag)
    let timer: NodeJS.Timeout | undefined
    let res: LightMyRequestResponse | 'hung'
    try {
      res = await Promise.race([
        injectToEnd(fc.ctx, sent.options),
        new Promise<'hung'>((resolve) => {
          timer = setTimeout(() => resolve('hung'), HANG_MS)
        }),
      ])
    } catch (error) {
      // light-my-request refused to build the request: not a server result.
      countBy(clientErrors, (error as Error).message.slice(0, 80))
      continue
    } finally {
      clearTimeout(timer)
    }
    sentCount++
    if (res === 'hung') {
      hung.push(sent.describe())
      continue
    }
    statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
    const route = perRoute.get(d.target.name) ?? { total: 0, ok: 0, refused: 0 }
    route.total++
    if (res.statusCode < 400) route.ok++
    else route.refused++
    perRoute.set(d.target.name, route)

    if (process.env.FUZZ_DEBUG && d.tags.join() === 'valid' && res.statusCode >= 400)
      console.log('valid refused', sent.describe(), res.statusCode, res.body.slice(0, 300))
    const verdict = judge(d, sent, res)
    if (d.expect !== undefined || d.forbid !== undefined) expectations++
    if (verdict.hostedPage404) hostedPage404++
    if (verdict.problems.length) {
      const cause = res.statusCode >= 500 ? serverCause(ctx, String(res.headers['x-request-id'])) : ''
      const kind = `${d.target.name} → ${res.statusCode}: ${verdict.problems.join('; ')}${cause && ` [server log: ${cause}]`}`
      const seen = problemKinds.get(kind) ?? { count: 0, first: d.index }
      seen.count++
      problemKinds.set(kind, seen)
      problems.push(
        `${sent.describe()}\n    → ${res.statusCode} ${res.headers['content-type']} ${res.body.slice(0, 400)}\n    problems: ${verdict.problems.join('; ')}`,
      )
    }
    if (d.uniqueKey && verdict.code && NEVER_OWN.has(verdict.code))
      refusedKeys.push(d.idempotencyKey as string)
  }
  const seconds = (Date.now() - started) / 1000
  return {
    statuses,
    perRoute,
    tags,
    clientErrors,
    problems,
    problemKinds,
    hung,
    refusedKeys,
    hostedPage404,
    expectations,
    sentCount,
    seconds,
  }
}

/**
 * What a run left behind: the refused requests' keys that were stored anyway, the keys left running, and whether
 * the ledger still verifies.
 */
export async function leftovers(ctx: TestContext, refusedKeys: string[]) {
  const stored: string[] = []
  for (let i = 0; i < refusedKeys.length; i += 500) {
    const rows = await ctx.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('key', 'in', refusedKeys.slice(i, i + 500))
      .execute()
    stored.push(...rows.map((row) => row.key))
  }
  const running = await ctx.db
    .selectFrom('idempotency_keys')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('state', '=', 'running')
    .executeTakeFirstOrThrow()
  const ledger = await ctx.services.ledger.verify()
  return { stored, running, ledger }
}

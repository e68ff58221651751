import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { selectScoped } from '../../src/db/queries.ts'
import { sign } from '../../src/http/auth.ts'
import { serviceEnv } from '../helpers/config.ts'
import { call, createTestContext, eventually, postgresUrlOf, type TestContext } from '../helpers/harness.ts'
import { onPostgres, sessionsOf, sessionUrl } from '../helpers/postgres.ts'
import { assertLedgerVerifies, type Reply, untilHealthy } from '../helpers/processes.ts'
import { freePort, type Program, spawnProgram, stopProgram } from '../helpers/program.ts'
import { seededRandom } from '../helpers/random.ts'

/**
 * Chaos drill: refunds and payouts are exactly once per Idempotency-Key, whatever
 * instant the process dies at.
 *
 * On PostgreSQL, each round starts the real program (`serve`, role all), sends a signed refund (every round)
 * and a signed payout (at least every other round) with fresh keys, and SIGKILLs the process a seeded random
 * 0–120 ms later without waiting for the answers. The next round's program (whose worker also recovers what the
 * killed one left in flight) is started on the same database and first retries the killed round's keys while
 * their leases may still run: a committed object is replayed at once, a claimed but uncommitted key is 409 in
 * progress, an unclaimed one runs afresh. After the last round the program is started once more and every key
 * is retried with its body (twice at once) until it answers 201. Then: one refund or payout per key, the same
 * uuid on every answer (including any that arrived before a kill), every refund and payout final within the
 * recovery bound, each transaction refunded once by its amount, each ledger entry and event posted once, the
 * merchant's balances equal to exactly-once arithmetic, and `ledger verify` clean.
 *
 * The default (16 rounds, 17 program starts: `npm test` and CI, which must stay within their time) takes 60–75 s
 * on a 2-core machine. The long drill, for an operator (200 rounds: about 10 minutes):
 *
 *   CHAOS_ROUNDS=200 CHAOS_SEED=$RANDOM TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \
 *     node --import tsx --test test/chaos/money.test.ts
 *
 * Also CHAOS_KILL_MAX_MS (default 120) and CHAOS_RECOVERY_BOUND_MS (default 15000). The summary (what the kills
 * hit, how the retries found it, the timings) is printed as test diagnostics, also when the drill fails.
 *
 * A failure prints the seed: the same seed draws the same amounts, destinations and kill delays.
 */

onPostgres()

const ROUNDS = Number(process.env.CHAOS_ROUNDS ?? 16)
const SEED = Number(process.env.CHAOS_SEED ?? 20261125)
/**
 * The SIGKILL lands a seeded, uniformly drawn 0..KILL_MAX_MS after the requests went out. A freshly started
 * process answers its first refund and payout in roughly 40–110 ms on a 2-core machine (the calibration batch
 * below prints it), so 0–120 ms spreads the kills from before the first byte is read to after the answer; a
 * slower machine shifts them towards the early instants.
 */
const KILL_MAX_MS = Number(process.env.CHAOS_KILL_MAX_MS ?? 120)
/**
 * How long a request that died holds its key (IDEMPOTENCY_LEASE_MS): longer than a restart (~2 s), so that the
 * next program's first retry of a claimed key meets the lease; and the provider recheck delay.
 */
const LEASE_MS = 4000
const RECHECK_MS = 1000
/**
 * After the last restart, every refund and payout is final within this: with the settings below a cut hand-over
 * is made again after 1 s and the sandbox completes a payout 2 s after it took it, so ~10 s is plenty.
 */
const RECOVERY_BOUND_MS = Number(process.env.CHAOS_RECOVERY_BOUND_MS ?? 15_000)
/** Every paid transaction that is refunded: 1500.00 RUB or 100.00 USD by card, with a 250 bps fee. */
const CARD_FEE_BPS = 250
const PAYOUT_FEE_BPS = 100
const PAYOUT_FIXED_FEE_MICRO = 100_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One money-moving request of the drill: its key and exact body bytes, kept for every retry. */
interface Operation {
  kind: 'refund' | 'payout'
  round: number
  key: string
  path: '/integration/refunds' | '/integration/payouts'
  body: string
  /** The refunded transaction, or the payout's external_id. */
  target: string
  amount: number
  currency: string
  /** When the round's requests went out. */
  sentAt?: number
  /** Its row's uuid once the killed process's database sessions were gone, if it had committed one. */
  rowAtKill?: string
  /** Whether its Idempotency-Key was claimed (idempotency_keys row) at that point. */
  claimedAtKill?: boolean
  /** Until when the dead request's claim held the key (its lease), if it had claimed it. */
  leaseUntil?: number
  /** The answer that arrived before the kill, if any. */
  answeredBeforeKill?: { status: number; uuid: string | null; afterMs: number }
  /** The next program's first retry, right after its start. */
  early?: 'replayed' | 'in_progress' | 'fresh'
  /** The final phase: the first 201 and what it said. */
  final?: { uuid: string; replayed: boolean; waitedForLease: boolean }
  uuids: string[]
}

/** An exact micro-USDT conversion: ceil(amount in major units / rate), the rate written as a decimal string. */
function ceilMicro(amountMinor: number, exponent: number, rate: string): bigint {
  const [whole = '0', fraction = ''] = rate.split('.')
  const r = BigInt(whole + fraction)
  const scale = 10n ** BigInt(fraction.length)
  const numerator = BigInt(amountMinor) * 10n ** 6n * scale
  const denominator = 10n ** BigInt(exponent) * r
  return (numerator + denominator - 1n) / denominator
}

describe(`chaos: refunds and payouts under SIGKILL, exactly once (PostgreSQL, ${ROUNDS} rounds, seed ${SEED})`, () => {
  let ctx: TestContext
  let baseUrl: URL
  const programs: Program[] = []
  let keyId: string
  let secret: string

  /** A process's environment: its sessions carry `name`, so they can be told apart; `port` where it serves. */
  const env = (name: string, port: number | null = null) =>
    serviceEnv(sessionUrl(baseUrl, name), port, {
      RATE_LIMIT_PER_SECOND: '100000',
      RATE_LIMIT_BURST: '100000',
      IDEMPOTENCY_LEASE_MS: String(LEASE_MS),
      PROVIDER_RECHECK_MS: String(RECHECK_MS),
    })

  /** Starts `serve` and waits until it answers its health check; its base URL. */
  async function startServer(name: string): Promise<{ program: Program; base: string }> {
    const port = await freePort()
    const program = spawnProgram(['serve', '--role', 'all'], env(name, port))
    programs.push(program)
    const base = `http://127.0.0.1:${port}`
    await untilHealthy(program, base, name)
    // Its sessions carry its name (the health check used one): what it committed is read once they are gone.
    assert.ok((await sessionsOf(ctx.db, name)) > 0, `${name}: no session named ${name} in pg_stat_activity`)
    return { program, base }
  }

  /** The operation sent once, signed now (a retry signs again: same method, path, key and body). */
  async function send(base: string, op: Operation): Promise<Reply> {
    const t = Math.floor(Date.now() / 1000)
    const v1 = sign(secret, t, 'POST', op.path, op.key, op.body)
    const res = await fetch(`${base}${op.path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': op.key,
        'x-signature': `key_id=${keyId},t=${t},v1=${v1}`,
      },
      body: op.body,
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) }
  }

  before(async () => {
    ctx = await createTestContext('postgres')
    baseUrl = new URL(await postgresUrlOf(ctx))
    keyId = ctx.merchant.keys.test.key_id
    secret = ctx.merchant.keys.test.secret
  })

  after(async () => {
    await Promise.all(programs.map((p) => stopProgram(p, 'SIGKILL')))
    await ctx?.close()
  })

  it('refund-then-SIGKILL and payout-then-SIGKILL rounds, then every key retried: each moved money exactly once', async (t) => {
    const random = seededRandom(SEED)
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T
    const merchant = ctx.merchant

    // The merchant: a card fee it bears, and a payout fee, so that the arithmetic is not trivially 1:1.
    await ctx.services.merchants.setFee(merchant.uuid, 'card', CARD_FEE_BPS, 10_000)
    await ctx.services.merchants.updateMerchant(merchant.uuid, {
      payoutFeeBps: PAYOUT_FEE_BPS,
      payoutFixedFeeMicro: PAYOUT_FIXED_FEE_MICRO,
    })

    // One paid transaction per round (and one for the calibration) to refund, and one large payment that funds
    // the payouts; test mode settles at once into `available`.
    const payments: { uuid: string; amount: number; currency: string }[] = []
    const pay = async (amount: number, currency: string, externalId: string) => {
      const created = await call(ctx, 'POST', '/integration/transactions', {
        amount,
        currency,
        payment_method: 'card',
        external_id: externalId,
      })
      assert.equal(created.statusCode, 201, created.body)
      const paid = await call(ctx, 'POST', `/integration/sandbox/transactions/${created.json().uuid}/paid`)
      assert.equal(paid.statusCode, 200, paid.body)
      assert.equal(paid.json().status, 'paid')
      return { uuid: created.json().uuid as string, amount, currency }
    }
    for (let round = 0; round <= ROUNDS; round++) {
      const currency = pick(['RUB', 'USD'] as const)
      payments.push(await pay(currency === 'RUB' ? 150_000 : 10_000, currency, `chaos-pay-${round}`))
    }
    await pay(10_000_000, 'USD', 'chaos-funding')
    const paidVersion = new Map(
      (
        await ctx.db
          .selectFrom('transactions')
          .select(['uuid', 'aggregate_version'])
          .where('merchant_uuid', '=', merchant.uuid)
          .execute()
      ).map((r) => [r.uuid, r.aggregate_version]),
    )

    /** A round's requests: a refund of its own payment, and (every other round at least) a payout. */
    const batchOf = (round: number, label: string, withPayout: boolean): Operation[] => {
      const payment = payments[round] as (typeof payments)[number]
      const full = random() < 0.25
      const refundAmount = full ? payment.amount : 1 + Math.floor(random() * (payment.amount - 1))
      const batch: Operation[] = [
        {
          kind: 'refund',
          round,
          key: `chaos-${SEED}-${label}-refund`,
          path: '/integration/refunds',
          body: JSON.stringify({
            transaction_uuid: payment.uuid,
            amount_minor: refundAmount,
            reason: `chaos ${label}`,
          }),
          target: payment.uuid,
          amount: refundAmount,
          currency: payment.currency,
          uuids: [],
        },
      ]
      if (withPayout) {
        const currency = pick(['USD', 'RUB'] as const)
        const amount =
          currency === 'USD' ? 100 + Math.floor(random() * 4900) : 10_000 + Math.floor(random() * 90_000)
        const destination = pick([
          { method: 'card', destination: { card_number: '4111 1111 1111 1111', holder_name: 'A. Smith' } },
          {
            method: 'usdt_wallet',
            destination: { network: 'TRC20', address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE' },
          },
          {
            method: 'usdt_wallet',
            destination: { network: 'ERC20', address: '0x52908400098527886E0F7030069857D2E4169EE7' },
          },
        ])
        const externalId = `chaos-${SEED}-${label}-payout`
        batch.push({
          kind: 'payout',
          round,
          key: `chaos-${SEED}-${label}-payout`,
          path: '/integration/payouts',
          body: JSON.stringify({ external_id: externalId, amount, currency, ...destination }),
          target: externalId,
          amount,
          currency,
          uuids: [],
        })
      }
      return batch
    }

    /** The refund or payout a key made, if any, straight from the database. */
    const rowOf = async (op: Operation): Promise<string | undefined> => {
      const row =
        op.kind === 'refund'
          ? ctx.db.selectFrom('refunds').select('uuid').where('transaction_uuid', '=', op.target)
          : ctx.db.selectFrom('payouts').select('uuid').where('external_id', '=', op.target)
      return (await row.executeTakeFirst())?.uuid
    }

    /** Sends the batch and SIGKILLs the program `delay` ms later (never, when null), whatever it is doing. */
    async function drill(
      name: string,
      base: string,
      program: Program,
      batch: Operation[],
      delay: number | null,
    ) {
      const sentAt = Date.now()
      const inFlight = batch.map((op) =>
        send(base, op).then(
          (reply) => {
            let uuid: string | null = null
            try {
              uuid = reply.json().uuid ?? null
            } catch {}
            op.answeredBeforeKill = { status: reply.status, uuid, afterMs: Date.now() - sentAt }
          },
          () => {},
        ),
      )
      if (delay === null) {
        await Promise.all(inFlight)
        return sentAt
      }
      await sleep(delay)
      program.child.kill('SIGKILL')
      assert.equal(await program.exited, null, 'the program was killed')
      await Promise.all(inFlight)
      // What the dead process committed is known once PostgreSQL has finished with its sessions.
      await eventually(async () => (await sessionsOf(ctx.db, name)) === 0, 10_000)
      // Refunds and payouts whose next check lies far beyond the recheck and poll delays: a recovery job's
      // claim that died with the process, which holds them until the job's claim lease runs out.
      const farOff = new Date(Date.now() + 10_000)
      for (const table of ['refunds', 'payouts'] as const) {
        const held = await ctx.db
          .selectFrom(table)
          .select('uuid')
          .where('merchant_uuid', '=', merchant.uuid)
          .where('status', 'in', ['pending', 'processing'])
          .where('next_check_at', '>', farOff)
          .execute()
        for (const { uuid } of held) deadClaims.add(uuid)
      }
      for (const op of batch) {
        op.rowAtKill = await rowOf(op)
        const claim = await ctx.db
          .selectFrom('idempotency_keys')
          .select(['state', 'locked_until'])
          .where('merchant_uuid', '=', merchant.uuid)
          .where('mode', '=', 'test')
          .where('key', '=', op.key)
          .executeTakeFirst()
        op.claimedAtKill = claim !== undefined
        op.leaseUntil = claim?.locked_until ? new Date(claim.locked_until).getTime() : undefined
        op.sentAt = sentAt
      }
      return sentAt
    }

    const deadClaims = new Set<string>()

    /** Whatever answered before the kill: only a 201 (nothing else refuses these requests), naming the row. */
    const checkAnswered = (op: Operation) => {
      if (!op.answeredBeforeKill) return
      assert.equal(op.answeredBeforeKill.status, 201, `${op.key}: answered ${op.answeredBeforeKill.status}`)
      assert.ok(op.answeredBeforeKill.uuid)
      op.uuids.push(op.answeredBeforeKill.uuid)
    }

    /**
     * The first retry of a killed round's keys, by the next program as soon as it is up (the key's lease may
     * still run): a committed object is answered at once, replayed; a key the dead request claimed without
     * committing is in progress until its lease runs out; a key it never claimed runs afresh.
     */
    async function earlyRetry(base: string, op: Operation) {
      const reply = await send(base, op)
      // The server decided after the request left and before its answer arrived: a take-over it made is only
      // right if the answer came after the dead claim's lease ran out (a slow first request of a freshly
      // started program may legitimately be decided after the lease, although it was sent before).
      const answeredAt = Date.now()
      if (reply.status === 409) {
        assert.equal(reply.json().error.code, 'idempotency_request_in_progress', `${op.key}: ${reply.text}`)
        assert.equal(reply.headers.get('retry-after'), '1')
        assert.equal(op.rowAtKill, undefined, `${op.key}: its object was committed, yet 409: ${reply.text}`)
        assert.ok(op.claimedAtKill, `${op.key}: 409 for a key nobody claimed`)
        op.early = 'in_progress'
        return
      }
      assert.equal(reply.status, 201, `${op.key}: ${reply.text}`)
      const replayed = reply.headers.get('idempotent-replayed') === 'true'
      op.uuids.push(reply.json().uuid)
      if (op.rowAtKill) {
        assert.ok(replayed, `${op.key}: committed before the kill, but the retry ran it afresh`)
        assert.equal(reply.json().uuid, op.rowAtKill)
        op.early = 'replayed'
      } else {
        assert.ok(!replayed, `${op.key}: nothing was committed before the kill, yet a replay`)
        // A claim made by the dead request, with its lease still running, must not be taken over.
        if (op.claimedAtKill)
          assert.ok(
            op.leaseUntil !== undefined && answeredAt > op.leaseUntil,
            `${op.key}: ran afresh while the dead request's lease held it (answered ${answeredAt - (op.leaseUntil ?? 0)} ms before it ran out)`,
          )
        op.early = 'fresh'
      }
    }

    // What the kills hit, and how the retries found it: printed whether the drill passes or fails.
    const operations: Operation[] = []
    const killDelays: number[] = []
    const timings: { rounds?: number; retried?: number; recovered?: number } = {}
    let calibrationMs = 0
    const summarize = () => {
      const describeOps = (ops: Operation[]) => {
        const killed = ops.filter((op) => op.sentAt !== undefined)
        const count = (test: (op: Operation) => boolean) => killed.filter(test).length
        const answered = count((op) => op.answeredBeforeKill !== undefined)
        const unanswered = count((op) => op.rowAtKill !== undefined && !op.answeredBeforeKill)
        const claimed = count((op) => op.claimedAtKill === true && op.rowAtKill === undefined)
        const untouched = count((op) => !op.claimedAtKill && op.rowAtKill === undefined)
        const early = (kind: Operation['early']) => count((op) => op.early === kind)
        const finalFresh = count((op) => op.final?.replayed === false)
        const finalWaited = count((op) => op.final?.waitedForLease === true)
        return (
          `${killed.length} killed: ${answered} answered before the kill, ${unanswered} committed unanswered, ` +
          `${claimed} key claimed but nothing committed, ${untouched} key not claimed; ` +
          `next program's retry: ${early('replayed')} replayed, ${early('in_progress')} 409 in progress, ` +
          `${early('fresh')} ran afresh; after the last restart ${finalFresh} ran afresh ` +
          `(${finalWaited} after 409s until the dead request's lease ran out), the rest replayed`
        )
      }
      t.diagnostic(
        `seed ${SEED}, ${ROUNDS} rounds, calibration batch answered in ${calibrationMs} ms, ` +
          `kill delays 0–${KILL_MAX_MS} ms (mean ${(killDelays.reduce((a, b) => a + b, 0) / Math.max(1, killDelays.length)).toFixed(1)})`,
      )
      const latencies = operations
        .flatMap((op) => (op.answeredBeforeKill ? [`${op.kind[0]}${op.answeredBeforeKill.afterMs}`] : []))
        .join(' ')
      if (latencies) t.diagnostic(`answered before the kill after (ms): ${latencies}`)
      t.diagnostic(`refunds ${describeOps(operations.filter((op) => op.kind === 'refund'))}`)
      if (deadClaims.size)
        t.diagnostic(
          `${deadClaims.size} refund(s)/payout(s) were held by a recovery job's claim that died with its process`,
        )
      t.diagnostic(`payouts ${describeOps(operations.filter((op) => op.kind === 'payout'))}`)
      const seconds = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`)
      t.diagnostic(
        `rounds ${seconds(timings.rounds)}; after the restart: retries done in ${seconds(timings.retried)}, ` +
          `all final in ${seconds(timings.recovered)} (bound ${RECOVERY_BOUND_MS / 1000} s)`,
      )
    }

    try {
      // Calibration: one batch answered without a kill, on a freshly started program: the program works, and
      // how long such requests take here is printed next to the kill delays.
      const calibration = batchOf(ROUNDS, 'calibration', true)
      operations.push(...calibration)
      const started = Date.now()
      {
        const { program, base } = await startServer('mg-chaos-calibration')
        await drill('mg-chaos-calibration', base, program, calibration, null)
        for (const op of calibration) {
          assert.ok(op.answeredBeforeKill, `${op.key}: no answer`)
          checkAnswered(op)
        }
        assert.equal(await stopProgram(program), 0, program.output())
      }
      calibrationMs = Math.max(...calibration.map((op) => op.answeredBeforeKill?.afterMs ?? 0))

      // The rounds.
      let previous: Operation[] = []
      for (let round = 0; round < ROUNDS; round++) {
        const batch = batchOf(round, `round-${round}`, round % 2 === 0 || random() < 0.3)
        operations.push(...batch)
        const delay = Math.floor(random() * (KILL_MAX_MS + 1))
        killDelays.push(delay)
        const name = `mg-chaos-round-${round}`
        const { program, base } = await startServer(name)
        await Promise.all(previous.map((op) => earlyRetry(base, op)))
        await drill(name, base, program, batch, delay)
        for (const op of batch) checkAnswered(op)
        previous = batch
      }
      timings.rounds = Date.now() - started

      // The restart: every key retried with its body until it answers 201, two retries of each at once.
      const restarted = Date.now()
      const { program: final, base } = await startServer('mg-chaos-final')
      const retryUntilCreated = async (op: Operation) => {
        const deadline = Date.now() + LEASE_MS + 30_000
        let inProgress = 0
        for (let attempts = 1; ; attempts++) {
          const reply = await send(base, op)
          if (reply.status === 201) {
            const replayed = reply.headers.get('idempotent-replayed') === 'true'
            return { uuid: reply.json().uuid as string, replayed, inProgress, attempts }
          }
          assert.equal(reply.status, 409, `${op.key}: ${reply.status} ${reply.text}`)
          assert.equal(reply.json().error.code, 'idempotency_request_in_progress', `${op.key}: ${reply.text}`)
          assert.equal(reply.headers.get('retry-after'), '1')
          inProgress++
          assert.ok(Date.now() < deadline, `${op.key}: still in progress after ${attempts} attempts`)
          await sleep(1000)
        }
      }
      await Promise.all(
        operations.map(async (op) => {
          const [first, second] = await Promise.all([retryUntilCreated(op), retryUntilCreated(op)])
          assert.ok(first && second)
          op.uuids.push(first.uuid, second.uuid)
          // The two concurrent retries: at most one ran the request afresh.
          assert.ok(first.replayed || second.replayed, `${op.key}: both concurrent retries ran afresh`)
          // The one that ran it afresh, if any: did the dead request's lease hold it up first?
          const fresh = [first, second].find((r) => !r.replayed)
          op.final = {
            uuid: first.uuid,
            replayed: fresh === undefined,
            waitedForLease: (fresh?.inProgress ?? 0) > 0,
          }
        }),
      )
      // And once more each, now that all are done: a replay of the same object.
      for (const op of operations) {
        const reply = await send(base, op)
        assert.equal(reply.status, 201, `${op.key}: ${reply.text}`)
        assert.equal(reply.headers.get('idempotent-replayed'), 'true', `${op.key}: a late retry is a replay`)
        op.uuids.push(reply.json().uuid)
      }
      timings.retried = Date.now() - restarted

      // Exactly one object per key, the same uuid on every answer, and what the kill left agrees with it.
      for (const op of operations) {
        assert.equal(new Set(op.uuids).size, 1, `${op.key}: uuids ${[...new Set(op.uuids)].join(', ')}`)
        const committed =
          op.rowAtKill !== undefined ||
          op.answeredBeforeKill !== undefined ||
          op.early === 'replayed' ||
          op.early === 'fresh'
        if (committed)
          assert.ok(op.final?.replayed, `${op.key}: committed before the restart, yet run afresh`)
        else
          assert.equal(
            op.final?.replayed,
            false,
            `${op.key}: nothing committed before the restart, yet a replay`,
          )
      }
      const refundOps = operations.filter((op) => op.kind === 'refund')
      const payoutOps = operations.filter((op) => op.kind === 'payout')

      // Every refund and payout final within the recovery bound after the restart.
      const finalWithin = Math.max(0, restarted + RECOVERY_BOUND_MS - Date.now())
      /** The merchant's refunds and payouts that are not final yet. */
      const notFinal = async () => ({
        refunds: await ctx.db
          .selectFrom('refunds')
          .select(['uuid', 'status', 'next_check_at', 'created_at'])
          .where('merchant_uuid', '=', merchant.uuid)
          .where('status', '=', 'pending')
          .execute(),
        payouts: await ctx.db
          .selectFrom('payouts')
          .select(['uuid', 'status', 'next_check_at', 'created_at', 'submitted_at'])
          .where('merchant_uuid', '=', merchant.uuid)
          .where('status', 'in', ['pending', 'processing'])
          .execute(),
      })
      await eventually(
        async () => {
          const { refunds, payouts } = await notFinal()
          return refunds.length === 0 && payouts.length === 0
        },
        finalWithin,
        100,
      ).catch(async (error) => {
        const { refunds, payouts } = await notFinal()
        // A next check far past the recheck delay is a worker's claim on it that died with its process.
        throw new Error(
          `not final ${RECOVERY_BOUND_MS} ms after the restart (at ${new Date(restarted).toISOString()}; ` +
            `${error.message}): ${JSON.stringify({ refunds, payouts })}; held by a dead recovery claim during ` +
            `the rounds: ${[...deadClaims].filter((u) => [...refunds, ...payouts].some((r) => r.uuid === u)).length} of them`,
        )
      })
      timings.recovered = Date.now() - restarted

      // Everything the drill made was made with the merchant's test keys.
      const scope = { merchantUuid: merchant.uuid, mode: 'test' } as const
      // Refunds: one per key and transaction, as asked, succeeded, debited once at the transaction's rate.
      const refunds = await selectScoped(ctx.db, 'refunds', scope).execute()
      assert.equal(refunds.length, refundOps.length, 'one refund per refund key, and no other')
      const transactions = new Map(
        (await selectScoped(ctx.db, 'transactions', scope).execute()).map((tx) => [tx.uuid, tx]),
      )
      for (const op of refundOps) {
        const rows = refunds.filter((r) => r.transaction_uuid === op.target)
        assert.equal(rows.length, 1, `${op.key}: ${rows.length} refunds of its transaction`)
        const [row] = rows
        const tx = transactions.get(op.target)
        assert.ok(row && tx)
        assert.equal(row.uuid, op.final?.uuid, `${op.key}: the refund the retries named`)
        assert.equal(row.idempotency_key, op.key)
        assert.equal(row.amount_minor, op.amount)
        assert.equal(row.status, 'succeeded', `${op.key}: refund ${row.uuid} ${row.status}`)
        assert.equal(
          BigInt(row.settlement_debit),
          ceilMicro(op.amount, 2, tx.fx_rate),
          `${op.key}: debit of ${op.amount} ${op.currency} at ${tx.fx_rate}`,
        )
        // The transaction: refunded once, by exactly this amount.
        assert.equal(
          tx.status,
          op.amount === tx.amount ? 'refunded' : 'partially_refunded',
          `${op.key}: ${tx.status}`,
        )
        assert.equal(
          tx.aggregate_version,
          (paidVersion.get(tx.uuid) ?? 0) + 1,
          `${op.key}: one applied change`,
        )
      }
      // Payouts: one per key, as asked, completed, with the quote's arithmetic.
      const payouts = await selectScoped(ctx.db, 'payouts', scope).execute()
      assert.equal(payouts.length, payoutOps.length, 'one payout per payout key, and no other')
      for (const op of payoutOps) {
        const rows = payouts.filter((p) => p.external_id === op.target)
        assert.equal(rows.length, 1, `${op.key}: ${rows.length} payouts`)
        const [row] = rows
        assert.ok(row)
        assert.equal(row.uuid, op.final?.uuid, `${op.key}: the payout the retries named`)
        assert.equal(row.idempotency_key, op.key)
        assert.equal(row.amount, op.amount)
        assert.equal(row.currency, op.currency)
        assert.equal(
          row.status,
          'completed',
          `${op.key}: payout ${row.uuid} ${row.status} (${row.failure_reason})`,
        )
        assert.equal(row.aggregate_version, 3, `${op.key}: pending → processing → completed`)
        const inUsdt = ceilMicro(op.amount, 2, row.fx_rate)
        const fee = (inUsdt * BigInt(PAYOUT_FEE_BPS) + 5000n) / 10_000n + BigInt(PAYOUT_FIXED_FEE_MICRO)
        assert.equal(
          BigInt(row.amount_usdt_micro),
          inUsdt,
          `${op.key}: ${op.amount} ${op.currency} at ${row.fx_rate}`,
        )
        assert.equal(BigInt(row.fee_usdt_micro), fee)
        assert.equal(BigInt(row.payout_usdt_amount_micro), inUsdt + fee)
      }

      // The journal: each movement posted exactly once; and each change's event written exactly once.
      const entries = await ctx.db
        .selectFrom('journal_entries')
        .select(['kind', 'reference_uuid'])
        .where('merchant_uuid', '=', merchant.uuid)
        .execute()
      const posted = (uuid: string) =>
        entries
          .filter((e) => e.reference_uuid === uuid)
          .map((e) => e.kind)
          .sort()
      for (const r of refunds) assert.deepEqual(posted(r.uuid), ['refund_debited'], `refund ${r.uuid}`)
      for (const p of payouts)
        assert.deepEqual(posted(p.uuid), ['payout_completed', 'payout_reserved'], `payout ${p.uuid}`)
      const events = await ctx.db
        .selectFrom('events')
        .select(['event', 'aggregate_uuid', 'aggregate_version'])
        .where('merchant_uuid', '=', merchant.uuid)
        .execute()
      const eventsOf = (uuid: string) =>
        events
          .filter((e) => e.aggregate_uuid === uuid)
          .map((e) => `${e.event}@${e.aggregate_version}`)
          .sort()
      for (const op of refundOps) {
        const tx = transactions.get(op.target)
        assert.ok(tx)
        const refunded = `transaction.${tx.status}@${tx.aggregate_version}`
        assert.ok(eventsOf(tx.uuid).includes(refunded), `${op.key}: ${eventsOf(tx.uuid).join()}`)
        assert.equal(
          eventsOf(tx.uuid).filter(
            (e) => e.startsWith('transaction.partially_refunded') || e.startsWith('transaction.refunded'),
          ).length,
          1,
          `${op.key}: ${eventsOf(tx.uuid).join()}`,
        )
      }
      for (const p of payouts)
        assert.deepEqual(eventsOf(p.uuid), ['payout.completed@3', 'payout.processing@2'], `payout ${p.uuid}`)

      // Balances: what the payments credited, less each refund's debit and each payout's total, once.
      const credited = [...transactions.values()]
        .filter((tx) => tx.paid_at !== null)
        .reduce((sum, tx) => sum + BigInt(tx.settlement_amount), 0n)
      const debited = refunds.reduce((sum, r) => sum + BigInt(r.settlement_debit), 0n)
      const paidOut = payouts.reduce((sum, p) => sum + BigInt(p.payout_usdt_amount_micro), 0n)
      const t0 = Math.floor(Date.now() / 1000)
      const balancesRes = await fetch(`${base}/integration/balances`, {
        headers: {
          'x-signature': `key_id=${keyId},t=${t0},v1=${sign(secret, t0, 'GET', '/integration/balances', '', '')}`,
        },
      })
      const balancesText = await balancesRes.text()
      assert.equal(balancesRes.status, 200, balancesText)
      const usdt = (
        JSON.parse(balancesText).data as {
          currency: string
          available: number
          pending: number
          reserved: number
          total: number
        }[]
      ).find((b) => b.currency === 'USDT')
      assert.ok(usdt, balancesText)
      assert.deepEqual(
        { available: BigInt(usdt.available), pending: BigInt(usdt.pending), reserved: BigInt(usdt.reserved) },
        { available: credited - debited - paidOut, pending: 0n, reserved: 0n },
        `credited ${credited}, refunded ${debited}, paid out ${paidOut}`,
      )
      assert.equal(BigInt(usdt.total), credited - debited - paidOut)

      // The program stops cleanly, and the ledger's journal and balances agree.
      assert.equal(await stopProgram(final), 0, final.output())
      await assertLedgerVerifies(env('mg-chaos-verify'))
    } finally {
      summarize()
    }
  })
})

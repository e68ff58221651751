import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { type Address, decodeFunctionData, erc20Abi, type Hex, keccak256, parseTransaction } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { minorToTokenUnits } from '../../src/chain/token.ts'
import { sign } from '../../src/http/auth.ts'
import { suiteEvm } from '../helpers/evm.ts'
import { addEvmAccount, addressOf, fundHotWallet, keyOf, transfersFrom } from '../helpers/evm-account.ts'
import { type GatewayProgram, gatewayProgram } from '../helpers/gateway-program.ts'
import { eventually, paidTransaction, postgresUrlOf } from '../helpers/harness.ts'
import { onPostgres } from '../helpers/postgres.ts'
import { assertLedgerVerifies, assertRunning } from '../helpers/processes.ts'
import { stopProgram } from '../helpers/program.ts'
import { seededRandom } from '../helpers/random.ts'
import { type HoldStage, type RpcProxy, startRpcProxy } from '../helpers/rpc-proxy.ts'
import { beforeClose, suiteContext } from '../helpers/suite.ts'

/**
 * Crash drill: ERC-20 payouts paid by an `evm-erc20` account from its hot wallet are paid once each, and none is
 * lost, whichever step of the payout the gateway is killed at (docs/CONNECTORS.md, The evm-erc20 kind).
 *
 * On PostgreSQL, with the real program (`serve`, role all: the API and its worker) and a real Hardhat node, the
 * account's `rpc_url` points at a JSON-RPC proxy in front of the node (test/helpers/rpc-proxy.ts). Each round
 * makes a few payouts at once through the API and SIGKILLs the gateway at one point:
 *
 * - signed: the proxy holds their `eth_sendRawTransaction` requests, so the transfers are signed and kept in
 *   chain_transactions, and the node never had them;
 * - broadcast: the proxy forwards them and holds the node's answers, so the node has mined them (the lowest
 *   nonce at least: an automining node refuses a nonce past a gap) and the payouts never recorded it;
 * - confirming: the payouts are processing, mined, short of their confirmations; a block is mined, the gateway
 *   checks them, another is mined, and the gateway is killed at once.
 *
 * Then the gateway is started again; its payouts job hands the pending payouts over again (the same signed bytes)
 * and counts the confirmations of the others. The next round starts once no payout is pending and the node holds
 * every nonce signed so far (a broadcast the node refused is sent again by the payout's next check). At the end every
 * payout is completed, paid by exactly one Transfer of its exact amount to its own address; the hot wallet's
 * nonces are 0..n-1 without a gap (a nonce kept twice only for a replacement), the node counts n transactions
 * from it; each payout sent its two events once; `ledger verify` is clean.
 *
 * Rounds are drawn by a seeded random source: the points in a shuffled order (each of the three in every three
 * rounds), 2 to 6 payouts each. Each round costs a start of the gateway (5 to 7 s on a 2-core machine, 4 s of it
 * tsx loading the program; twice that on one busy with other suites) and a few seconds of waiting for the
 * payouts job. By default the drill runs until it has killed the gateway at least 6 times and with 30 payouts in
 * flight over all (9 rounds, 34 payouts with the default seed). EVM_DRILL_ROUNDS=30 runs that many rounds
 * instead; EVM_DRILL_SEED (default 20261207) draws other rounds, or replays a run that failed.
 */

onPostgres()

const SEED = Number(process.env.EVM_DRILL_SEED ?? 20261207)
/** The number of rounds to run; by default, at least MIN_ROUNDS and MIN_IN_FLIGHT payouts in flight at the kills. */
const ROUNDS = process.env.EVM_DRILL_ROUNDS ? Number(process.env.EVM_DRILL_ROUNDS) : null
if (ROUNDS !== null && !(Number.isInteger(ROUNDS) && ROUNDS > 0))
  throw new Error(`EVM_DRILL_ROUNDS is not a positive whole number: ${process.env.EVM_DRILL_ROUNDS}`)
if (!Number.isInteger(SEED))
  throw new Error(`EVM_DRILL_SEED is not a whole number: ${process.env.EVM_DRILL_SEED}`)
const MIN_ROUNDS = 6
const MIN_IN_FLIGHT = 30
/** A round makes from FEWEST_IN_FLIGHT to MOST_IN_FLIGHT payouts at once. */
const FEWEST_IN_FLIGHT = 2
const MOST_IN_FLIGHT = 6
/**
 * Above what a round mines before its kill (its own payouts, a block per transfer, and two blocks), so that a
 * confirming round's payouts are all short of it when the gateway is killed.
 */
const CONFIRMATIONS = MOST_IN_FLIGHT + 4
const REPLACE_AFTER = 20
/**
 * PROVIDER_RECHECK_MS: a payout whose hand-over got no answer is handed over again this long after it was made,
 * and a worker's claim on a payout it checks lasts this long (the payouts job looks every second).
 */
const RECHECK_MS = 1500
/** How long a call to the node may take: a broadcast the proxy holds waits for the kill, never times out. */
const ACCOUNT_TIMEOUT_MS = 60_000
/** What a start leaves to the payouts job is done within this, after the gateway answers. */
const RECOVERY_BOUND_MS = 30_000

type Point = 'signed' | 'broadcast' | 'confirming'
const POINTS: Point[] = ['signed', 'broadcast', 'confirming']
const STAGE: Record<Exclude<Point, 'confirming'>, HoldStage> = { signed: 'request', broadcast: 'response' }

interface Round {
  point: Point
  count: number
}

/** The rounds of the drill, drawn with `draw`: every three rounds take each point once, in a shuffled order. */
function drawRounds(draw: () => number): Round[] {
  const rounds: Round[] = []
  let bag: Point[] = []
  let inFlight = 0
  const more = () =>
    ROUNDS === null ? rounds.length < MIN_ROUNDS || inFlight < MIN_IN_FLIGHT : rounds.length < ROUNDS
  while (more()) {
    if (bag.length === 0) {
      bag = [...POINTS]
      for (let i = bag.length - 1; i > 0; i--) {
        const j = Math.floor(draw() * (i + 1))
        ;[bag[i], bag[j]] = [bag[j] as Point, bag[i] as Point]
      }
    }
    const count = FEWEST_IN_FLIGHT + Math.floor(draw() * (MOST_IN_FLIGHT - FEWEST_IN_FLIGHT + 1))
    rounds.push({ point: bag.pop() as Point, count })
    inFlight += count
  }
  return rounds
}

interface Planned {
  externalId: string
  to: Address
  /** USD cents. */
  amount: number
  round: number
  point: Point
}

/** The recipient of a signed ERC-20 transfer, in lower case. */
function recipientOf(raw: string): string | null {
  const { data } = parseTransaction(raw as Hex)
  if (!data) return null
  const call = decodeFunctionData({ abi: erc20Abi, data })
  return call.functionName === 'transfer' ? String(call.args[0]).toLowerCase() : null
}

describe('chaos: ERC-20 payouts from a hot wallet, the gateway killed at each step (PostgreSQL)', () => {
  const ctx = suiteContext('postgres')
  const evm = suiteEvm()
  const hotKey = keyOf('evm payouts drill hot wallet')
  const hot = privateKeyToAccount(hotKey).address
  let proxy: RpcProxy
  let gateway: GatewayProgram
  const planned: Planned[] = []
  const draw = seededRandom(SEED)
  const rounds = drawRounds(draw)
  /** What the drill pays out at most, in USD cents: each payout is 5.00 to 19.99. */
  const mostPaid = rounds.reduce((sum, r) => sum + r.count, 0) * 2000

  /** SIGKILLs the gateway, drops what the proxy holds, and waits until PostgreSQL has ended its sessions. */
  const killGateway = () =>
    gateway.kill(() => {
      proxy.drop()
      proxy.hold(null)
    })

  /** POST /integration/payouts to the running gateway, signed with the merchant's test key. */
  async function createPayout(plan: Planned): Promise<number | 'no answer'> {
    const path = '/integration/payouts'
    const body = JSON.stringify({
      external_id: plan.externalId,
      amount: plan.amount,
      currency: 'USD',
      method: 'usdt_wallet',
      destination: { network: 'ERC20', address: plan.to },
    })
    const key = ctx.merchant.keys.test
    const idempotencyKey = `idem-${plan.externalId}`
    const t = Math.floor(Date.now() / 1000)
    const v1 = sign(key.secret, t, 'POST', path, idempotencyKey, body)
    try {
      const res = await fetch(`${gateway.base}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': idempotencyKey,
          'x-signature': `key_id=${key.key_id},t=${t},v1=${v1}`,
        },
        body,
      })
      await res.arrayBuffer()
      return res.status
    } catch {
      return 'no answer'
    }
  }

  const payoutsOf = (plans: Planned[]) =>
    ctx.db
      .selectFrom('payouts')
      .selectAll()
      .where('merchant_uuid', '=', ctx.merchant.uuid)
      .where(
        'external_id',
        'in',
        plans.map((p) => p.externalId),
      )
      .execute()
  const keptOf = (payoutUuids: string[]) =>
    ctx.db.selectFrom('chain_transactions').selectAll().where('payout_uuid', 'in', payoutUuids).execute()
  const pendingCount = async () =>
    (
      await ctx.db
        .selectFrom('payouts')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow()
    ).n
  const receiptOf = (hash: string) =>
    evm.node.public.getTransactionReceipt({ hash: hash as Hex }).catch(() => null)

  /** The drill's open payouts, for a failure's message. */
  const open = async () =>
    JSON.stringify(
      await ctx.db
        .selectFrom('payouts')
        .select(['external_id', 'status', 'provider_reference', 'next_check_at'])
        .where('status', 'in', ['pending', 'processing'])
        .execute(),
    )

  /** Polls `check` while the gateway runs; fails with its output and the open payouts on its exit or at `bound`. */
  const whileRunning = <T>(
    what: string,
    check: () => Promise<T | null | undefined | false>,
    bound = RECOVERY_BOUND_MS,
  ) =>
    eventually(
      async () => {
        assertRunning(gateway.program, gateway.name)
        return check()
      },
      bound,
      25,
    ).catch(async (error: Error) => {
      throw new Error(`${what}: ${error.message}\nopen payouts: ${await open()}\n${gateway.program.output()}`)
    })

  /** Counts for the diagnostics. */
  const tally = { rounds: { signed: 0, broadcast: 0, confirming: 0 }, killedInFlight: 0, nodeHadAtKill: 0 }

  /** One round: `count` payouts made at once, the gateway killed at `point`, then started again. */
  async function round(index: number, point: Point, count: number): Promise<void> {
    // Every payout made before is handed over: the node holds all the nonces signed so far, none past a gap.
    await whileRunning(
      'the payouts left pending were handed over again, and the node holds every nonce',
      async () => {
        if ((await pendingCount()) !== 0) return false
        const wallet = await ctx.db.selectFrom('chain_wallets').select('next_nonce').executeTakeFirst()
        const atNode = await evm.node.public.getTransactionCount({ address: hot, blockTag: 'pending' })
        return atNode === Number(wallet?.next_nonce ?? 0)
      },
    )
    const plans: Planned[] = Array.from({ length: count }, (_, i) => ({
      externalId: `drill-${index}-${i}`,
      to: addressOf(`evm payouts drill ${SEED} ${index} ${i}`),
      amount: 500 + Math.floor(draw() * 1500),
      round: index,
      point,
    }))
    planned.push(...plans)
    const recipients = new Set(plans.map((p) => p.to.toLowerCase()))
    if (point !== 'confirming') {
      const stage = STAGE[point]
      proxy.hold((raw) => (recipients.has(recipientOf(raw) ?? '') ? stage : null))
    }
    const replies = plans.map((plan) => createPayout(plan))

    if (point === 'confirming') {
      for (const status of await Promise.all(replies)) assert.equal(status, 201)
      // A transfer that reached the node before a lower nonce was refused: the payouts job hands it over again.
      const rows = await whileRunning('the payouts are processing', async () => {
        const found = await payoutsOf(plans)
        return found.length === count && found.every((p) => p.status === 'processing') && found
      })
      const hashes = new Set(rows.map((p) => p.provider_reference))
      await evm.node.test.mine({ blocks: 1 })
      const mark = proxy.mark()
      await whileRunning('the gateway checked the payouts after the block', async () =>
        proxy.seenSince(mark, 'eth_getTransactionReceipt').some((call) => hashes.has(String(call.params[0]))),
      )
      await evm.node.test.mine({ blocks: 1 })
      await killGateway()
      const head = await evm.node.public.getBlockNumber()
      for (const payout of await payoutsOf(plans)) {
        assert.equal(payout.status, 'processing', 'killed while the payout waited for its confirmations')
        const receipt = await receiptOf(payout.provider_reference as string)
        assert.ok(receipt, 'mined')
        assert.ok(head - receipt.blockNumber + 1n < BigInt(CONFIRMATIONS), 'short of its confirmations')
      }
    } else {
      const answered = point === 'broadcast'
      await whileRunning(`the proxy holds the payouts' broadcasts (${point})`, async () => {
        const held = proxy.held().filter((call) => !answered || call.answered)
        const heldFor = new Set(held.flatMap((call) => call.raws.map((raw) => recipientOf(raw))))
        return [...recipients].every((to) => heldFor.has(to))
      })
      const heldRaws = new Set(proxy.held().flatMap((call) => call.raws))
      await killGateway()
      for (const status of await Promise.all(replies))
        assert.equal(status, 'no answer', 'killed before its answer')
      const rows = await payoutsOf(plans)
      assert.equal(rows.length, count)
      const kept = await keptOf(rows.map((p) => p.uuid))
      assert.equal(kept.length, count, 'each transfer signed once, and kept')
      let lowest: { nonce: number; hash: string } | null = null
      for (const payout of rows) {
        assert.equal(payout.status, 'pending', 'the payout never recorded a broadcast')
        assert.equal(payout.provider_reference, null)
        const tx = kept.find((k) => k.payout_uuid === payout.uuid)
        assert.ok(tx)
        assert.ok(heldRaws.has(tx.raw), 'the bytes kept are the bytes broadcast')
        assert.equal(keccak256(tx.raw as Hex), tx.hash)
        const atNode = await evm.node.public.request({
          method: 'eth_getTransactionByHash',
          params: [tx.hash as Hex],
        })
        if (point === 'signed') assert.equal(atNode, null, 'the node never had it')
        if (atNode) tally.nodeHadAtKill++
        if (!lowest || Number(tx.nonce) < lowest.nonce) lowest = { nonce: Number(tx.nonce), hash: tx.hash }
      }
      if (point === 'broadcast')
        assert.ok(lowest && (await receiptOf(lowest.hash)), 'the node mined the lowest nonce')
    }
    tally.rounds[point]++
    tally.killedInFlight += count
    await gateway.start()
  }

  before(async () => {
    gateway = await gatewayProgram(ctx.db, await postgresUrlOf(ctx), 'mg-evm-drill', {
      PROVIDER_RECHECK_MS: String(RECHECK_MS),
    })
    proxy = await startRpcProxy(evm.node.url)
    // USDT at 1 USD, and some to spare.
    await fundHotWallet(evm, hot, BigInt(mostPaid) * 20_000n)
    await addEvmAccount(ctx, evm, {
      name: 'usdt-drill',
      mode: 'test',
      key: hotKey,
      confirmations: CONFIRMATIONS,
      replaceAfterBlocks: REPLACE_AFTER,
      rpcUrl: proxy.url,
      timeoutMs: ACCOUNT_TIMEOUT_MS,
    })
    // The merchant's balance pays every payout of the drill, twice over (its fees come off it).
    for (let cents = 0; cents < mostPaid * 2; cents += 500000) {
      const paid = await paidTransaction(ctx, { amount: 500000, currency: 'USD', payment_method: 'card' })
      assert.equal(paid.status, 'paid')
    }
    await gateway.start()
  })

  beforeClose(ctx, async () => {
    await gateway?.close()
    await proxy?.close()
  })

  it(`pays each payout once, whichever step the gateway is killed at (seed ${SEED})`, async (t) => {
    const started = Date.now()
    for (const [index, { point, count }] of rounds.entries()) await round(index, point, count)
    const roundsMs = Date.now() - started

    // The last start finishes what the last kill left: each payout is mined and confirmed.
    await whileRunning(
      'every payout completed',
      async () => {
        const rows = await payoutsOf(planned)
        if (rows.length === planned.length && rows.every((p) => p.status === 'completed')) return true
        await evm.node.test.mine({ blocks: 1 })
        return false
      },
      RECOVERY_BOUND_MS * 2,
    )
    assert.equal(await stopProgram(gateway.program), 0, gateway.program.output())

    const rows = await payoutsOf(planned)
    assert.equal(rows.length, planned.length, 'none lost')
    const transfers = await transfersFrom(evm, hot)
    assert.equal(transfers.length, planned.length, 'one transfer from the hot wallet per payout, no more')
    for (const plan of planned) {
      const payout = rows.find((p) => p.external_id === plan.externalId)
      assert.ok(payout)
      assert.equal(payout.status, 'completed')
      const paid = transfers.filter((log) => log.args.to?.toLowerCase() === plan.to.toLowerCase())
      assert.deepEqual(
        paid.map((log) => [log.transactionHash, log.args.value]),
        [[payout.transaction_hash, minorToTokenUnits(payout.amount_usdt_micro, 6)]],
        `payout ${plan.externalId} (${plan.point}) paid exactly once, its exact amount`,
      )
    }
    const events = await ctx.db
      .selectFrom('events')
      .select(['aggregate_uuid', 'event'])
      .where(
        'aggregate_uuid',
        'in',
        rows.map((p) => p.uuid),
      )
      .orderBy('aggregate_version')
      .execute()
    for (const payout of rows)
      assert.deepEqual(
        events.filter((e) => e.aggregate_uuid === payout.uuid).map((e) => e.event),
        ['payout.processing', 'payout.completed'],
        `payout ${payout.external_id}: each event once`,
      )

    // The hot wallet's nonces: 0..n-1, each taken by one payout's first transfer; a nonce again only in a
    // replacement of that transfer.
    const kept = await ctx.db.selectFrom('chain_transactions').selectAll().where('wallet', '=', hot).execute()
    const firsts = kept.filter((k) => k.replaces_uuid === null)
    assert.equal(firsts.length, planned.length, 'one first transfer per payout')
    assert.equal(new Set(firsts.map((k) => k.payout_uuid)).size, planned.length)
    assert.deepEqual(
      firsts.map((k) => Number(k.nonce)).sort((a, b) => a - b),
      planned.map((_, i) => i),
      'the nonces are 0..n-1, without a gap',
    )
    for (const replacement of kept.filter((k) => k.replaces_uuid !== null)) {
      const replaced = kept.find((k) => k.uuid === replacement.replaces_uuid)
      assert.equal(replacement.nonce, replaced?.nonce, 'a replacement keeps the nonce')
      assert.equal(replacement.payout_uuid, replaced?.payout_uuid)
    }
    assert.equal(await evm.node.public.getTransactionCount({ address: hot }), planned.length)
    const wallet = await ctx.db
      .selectFrom('chain_wallets')
      .select('next_nonce')
      .where('address', '=', hot)
      .executeTakeFirstOrThrow()
    assert.equal(Number(wallet.next_nonce), planned.length)

    await assertLedgerVerifies(gateway.env('mg-evm-drill-verify'))
    const points = Object.entries(tally.rounds).map(([point, n]) => `${point} ${n}`)
    const { startMs } = gateway
    const starts = startMs.slice(1).reduce((sum, ms) => sum + ms, 0)
    t.diagnostic(`${rounds.length} rounds (${points.join(', ')}), seed ${SEED}`)
    t.diagnostic(
      `${tally.killedInFlight} payouts in flight at a kill, ${tally.nodeHadAtKill} of them broadcast to the node`,
    )
    t.diagnostic(`${kept.length - firsts.length} replacements`)
    t.diagnostic(
      `the rounds took ${roundsMs} ms, the starts ${starts} ms of it (${Math.min(...startMs)}-${Math.max(...startMs)} ms each)`,
    )
  })
})

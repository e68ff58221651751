import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { attemptsOf, handoverOf, type SentCallback } from '../api/providers/handover-helpers.ts'
import { type AcquirerProgram, emulatorAdmin, startAcquirerProgram } from '../helpers/acquirer-program.ts'
import { columnOf } from '../helpers/columns.ts'
import { type GatewayProgram, gatewayProgram } from '../helpers/gateway-program.ts'
import { eventually, newTransaction, postgresUrlOf } from '../helpers/harness.ts'
import { holdLocks, onPostgres, sessionsOf } from '../helpers/postgres.ts'
import {
  assertLedgerVerifies,
  assertRunning,
  type Reply,
  request,
  untilEmulatorListens,
} from '../helpers/processes.ts'
import { stopProgram } from '../helpers/program.ts'
import { beforeClose, suiteContext } from '../helpers/suite.ts'

/**
 * Chaos drill: a live payment handed to a provider account is handed over once, and ends as the provider decides,
 * whichever step of the hand-over the gateway is killed at (docs/OPERATIONS.md, Crashes and recovery).
 *
 * On PostgreSQL, with the real program (`serve`, role all) and the real provider emulator (`provider-emulator`),
 * the gateway is killed with SIGKILL:
 *
 * (a) before the provider took the payment: the emulator never answers (`timeout_rate=1`), and the kill lands as
 *     soon as the payment and its first try are committed, with the create request on its way or waiting there;
 * (b) after the provider answered, before its reference is recorded: the emulator answers after 1.5 s, and the
 *     test holds row locks on the payment's try and hand-over meanwhile, so that the gateway's UPDATE waits, and
 *     kills it there;
 * (c) while a callback is applied: the test holds the payment's row lock while the emulator's callback arrives,
 *     kills the gateway while the callback waits on it, and lets go.
 *
 * Each time the gateway is started again (with its worker); status sync finishes a hand-over the kill left with
 * the same idempotent create call after PROVIDER_HANDOVER_LEASE_MS, and the emulator retries its callback. Then:
 * exactly one payment at the emulator for the order, the reference the gateway recorded is that one, the gateway's
 * status is what the emulator decided, with one event and its ledger entries posted once; and at the end
 * `ledger verify` is clean. Its own waits (two leases, the emulator's latency, the restarts' first asks) come to
 * about 20 s; the rest is six program runs (the emulator, four gateway starts, `ledger verify`), each compiled by
 * tsx first: ~2 s on an idle 2-core machine, far longer on a busy one. The diagnostics print each start's time.
 */

onPostgres()

/**
 * The emulator's delay before every API answer in (b): long enough to take the locks while it waits, even on a
 * busy machine.
 */
const LATENCY_MS = 1500
/** The account's time-out: well above the latency, below the lease, so that a live call is never raced. */
const ACCOUNT_TIMEOUT_MS = 5000
const LEASE_MS = 6000
/**
 * A restart takes ~2 s (tsx compiles the program), far longer on a busy machine: the emulator retries a callback
 * every 250 ms for 30 s, and status sync asks the emulator 2 s after a hand-over, then every 2 s.
 */
const CALLBACK_RETRY_MS = Array.from({ length: 120 }, () => 250)
const SYNC_SCHEDULE = '2'
/** After a restart (counted from its first answer), what the kill left is finished within this. */
const RECOVERY_BOUND_MS = LEASE_MS + 15_000

describe('chaos: a live payment handed to a provider, the gateway killed at each step (PostgreSQL)', () => {
  const ctx = suiteContext('postgres')
  let acquirer: AcquirerProgram
  let gateway: GatewayProgram

  const live = () => ctx.merchant.keys.live.secret
  const createPayment = (externalId: string): Promise<Reply> =>
    request(gateway.base, 'POST', '/integration/transactions', {
      secret: live(),
      body: newTransaction({ external_id: externalId }),
    })

  /** The payment with `externalId`, once its insert (with its first try) committed. */
  const paymentOf = (externalId: string) =>
    eventually(
      () =>
        ctx.db
          .selectFrom('transactions')
          .select(['uuid', 'status'])
          .where('merchant_uuid', '=', ctx.merchant.uuid)
          .where('external_id', '=', externalId)
          .executeTakeFirst(),
      10_000,
      5,
    )
  const statusOf = (uuid: string) => columnOf(ctx.db, 'transactions', uuid, 'status')

  /**
   * What a kill before the provider's answer left: the payment pending, its first try begun, the hand-over (the
   * row returned) waiting for status sync.
   */
  async function assertLeftHandingOver(uuid: string) {
    assert.equal(await statusOf(uuid), 'pending')
    const left = await handoverOf(ctx, uuid)
    assert.ok(left)
    assert.equal(left.state, 'handing_over')
    assert.equal(left.provider_reference, null)
    assert.deepEqual(await attemptsOf(ctx, uuid), [
      { position: 0, account_uuid: acquirer.account.uuid, result: 'started', provider_reference: null },
    ])
    return left
  }

  /** What the emulator holds for the order (the payment's uuid). */
  const emulatorPayments = (order: string): Promise<{ reference: string; status: string }[]> =>
    emulatorAdmin(acquirer.base, 'GET', `/payments?order_id=${order}`)
  const decide = (reference: string, status: 'succeeded' | 'failed') =>
    emulatorAdmin(acquirer.base, 'POST', `/payments/${reference}/decide`, { status })
  const setFaults = (faults: Record<string, unknown>) =>
    emulatorAdmin(acquirer.base, 'PUT', '/faults', faults)
  const callbacksAbout = async (reference: string) =>
    ((await emulatorAdmin(acquirer.base, 'GET', '/callbacks')) as SentCallback[]).filter(
      (c) => c.reference === reference,
    )

  /** Status sync finishes the hand-over the kill left: the reference it records, after the lease. */
  async function handedOver(uuid: string): Promise<string> {
    const handover = await eventually(
      async () => {
        assertRunning(gateway.program, gateway.name)
        const row = await handoverOf(ctx, uuid)
        return row?.state === 'handed_over' && row.provider_reference ? row : null
      },
      RECOVERY_BOUND_MS,
      50,
    ).catch(async (error) => {
      throw new Error(
        `${error.message}: ${JSON.stringify(await handoverOf(ctx, uuid))}\n${gateway.program.output()}`,
      )
    })
    return handover.provider_reference as string
  }

  /**
   * The end every scenario must reach: one payment at the emulator for the order, the one the gateway recorded;
   * the gateway's status `status`, reached through one event; its journal entries once.
   */
  async function assertSettled(uuid: string, reference: string, status: 'paid' | 'failed') {
    await eventually(async () => (await statusOf(uuid)) === status, RECOVERY_BOUND_MS, 50).catch(
      async (error) => {
        throw new Error(`${error.message}: ${await statusOf(uuid)}\n${gateway.program.output()}`)
      },
    )
    const atEmulator = await emulatorPayments(uuid)
    assert.deepEqual(
      atEmulator.map((p) => [p.reference, p.status]),
      [[reference, status === 'paid' ? 'succeeded' : 'failed']],
      'exactly one payment at the provider for the order',
    )
    const handover = await handoverOf(ctx, uuid)
    assert.equal(handover?.provider_reference, reference)
    assert.equal(handover?.account_uuid, acquirer.account.uuid)
    assert.deepEqual(await attemptsOf(ctx, uuid), [
      { position: 0, account_uuid: acquirer.account.uuid, result: 'accepted', provider_reference: reference },
    ])
    // Through the API too, as the merchant sees it.
    const shown = await request(gateway.base, 'GET', `/integration/transactions/${uuid}`, { secret: live() })
    assert.equal(shown.status, 200, shown.text)
    assert.equal(shown.json().status, status)
    const events = await ctx.db
      .selectFrom('events')
      .select(['event', 'aggregate_version'])
      .where('aggregate_uuid', '=', uuid)
      .execute()
    assert.deepEqual(
      events.map((e) => `${e.event}@${e.aggregate_version}`),
      [`transaction.${status}@2`],
      'one event',
    )
    const entries = await ctx.db
      .selectFrom('journal_entries')
      .select('kind')
      .where('reference_uuid', '=', uuid)
      .execute()
    assert.deepEqual(
      entries.map((e) => e.kind),
      status === 'paid' ? ['payment_received'] : [],
      'journal entries, once',
    )
  }

  before(async () => {
    gateway = await gatewayProgram(ctx.db, await postgresUrlOf(ctx), 'mg-handover', {
      PROVIDER_HANDOVER_LEASE_MS: String(LEASE_MS),
      PROVIDER_SYNC_SCHEDULE: SYNC_SCHEDULE,
    })
    // A live http-acquirer account at the emulator, and the operator's default route of live card payments to it.
    acquirer = await startAcquirerProgram(ctx, {
      gateway: gateway.base,
      apiKey: 'sk_chaos_handover',
      name: 'emulated-acquirer',
      timeoutMs: ACCOUNT_TIMEOUT_MS,
      args: ['--callback-retry-ms', CALLBACK_RETRY_MS.join(','), '--fault', 'timeout_rate=1'],
    })
    await untilEmulatorListens(acquirer.program)
    await gateway.start()
  })

  beforeClose(ctx, () =>
    Promise.all([gateway?.close(), acquirer && stopProgram(acquirer.program, 'SIGKILL')]),
  )

  it('(a) killed before the provider took the payment: status sync makes the same call, and one payment exists', async (t) => {
    const pending = createPayment('handover-a').then(
      (reply) => reply.status,
      () => 'no answer',
    )
    const { uuid } = await paymentOf('handover-a')
    await gateway.kill()
    assert.equal(await pending, 'no answer', 'the kill came before the answer')
    const left = await assertLeftHandingOver(uuid)
    assert.deepEqual(await emulatorPayments(uuid), [], 'the provider never took it')

    // The provider answers again (late: the rest of the drill needs the time to take its locks).
    await setFaults({ latency_ms: LATENCY_MS })
    await gateway.start()
    const reference = await handedOver(uuid)
    t.diagnostic(
      `(a) the hand-over was finished ${Date.now() - left.created_at.getTime()} ms after the payment's insert`,
    )
    await decide(reference, 'succeeded')
    await assertSettled(uuid, reference, 'paid')
  })

  it('(b) killed after the provider answered, before its reference was recorded: the same payment is recorded', async () => {
    const pending = createPayment('handover-b').then(
      (reply) => reply.status,
      () => 'no answer',
    )
    const { uuid } = await paymentOf('handover-b')
    // Taken while the emulator holds its answer back (LATENCY_MS): the gateway's write of the answer must wait.
    const locks = await holdLocks(ctx.db, async (trx) => {
      await sql`SELECT 1 FROM payment_attempts WHERE transaction_uuid = ${uuid} FOR UPDATE`.execute(trx)
      await sql`SELECT 1 FROM payment_handovers WHERE transaction_uuid = ${uuid} FOR UPDATE`.execute(trx)
    })
    try {
      // The provider answered (it holds the payment), and the gateway waits to record it.
      await eventually(async () => {
        const held = await emulatorPayments(uuid)
        return held.length === 1 && (await sessionsOf(ctx.db, gateway.name, { waitingOnLock: true })) > 0
      }, 10_000)
    } catch (error) {
      await locks.release()
      throw error
    }
    await gateway.kill(locks.release)
    assert.equal(await pending, 'no answer')
    await assertLeftHandingOver(uuid)
    const [first] = await emulatorPayments(uuid)
    assert.ok(first)

    await gateway.start()
    const reference = await handedOver(uuid)
    assert.equal(reference, first.reference, 'the payment the provider already had')
    await decide(reference, 'failed')
    await assertSettled(uuid, reference, 'failed')
  })

  it("(c) killed while a provider's callback is applied: after the restart it is applied once", async (t) => {
    await setFaults({})
    const created = await createPayment('handover-c')
    assert.equal(created.status, 201, created.text)
    const { uuid } = created.json()
    const handover = await handoverOf(ctx, uuid)
    assert.equal(handover?.state, 'handed_over')
    const reference = handover?.provider_reference as string

    const locks = await holdLocks(ctx.db, (trx) =>
      sql`SELECT 1 FROM transactions WHERE uuid = ${uuid} FOR UPDATE`.execute(trx),
    )
    try {
      await decide(reference, 'succeeded')
      // The callback is in flight (not answered yet), and the gateway's handling of it waits on the row.
      await eventually(async () => {
        const [callback] = await callbacksAbout(reference)
        return (
          callback?.attempts.length === 0 &&
          (await sessionsOf(ctx.db, gateway.name, { waitingOnLock: true })) > 0
        )
      }, 10_000)
    } catch (error) {
      await locks.release()
      throw error
    }
    await gateway.kill(locks.release)
    // Nothing of it committed: neither applied nor logged.
    assert.equal(await statusOf(uuid), 'pending')
    const loggedAtKill = await ctx.db
      .selectFrom('connector_callbacks')
      .select('uuid')
      .where('provider_reference', '=', reference)
      .execute()
    assert.equal(loggedAtKill.length, 0)
    await eventually(async () => ((await callbacksAbout(reference))[0]?.attempts.length ?? 0) > 0)

    await gateway.start()
    await assertSettled(uuid, reference, 'paid')
    // The callback's retry, or status sync, whichever came first, applied it; the other found it done.
    const callback = await eventually(async () => {
      const [sent] = await callbacksAbout(reference)
      return sent?.attempts.at(-1) === 200 ? sent : null
    }, RECOVERY_BOUND_MS)
    assert.equal(callback.attempts[0], 0, 'the first attempt died with the gateway')
    const logged = await ctx.db
      .selectFrom('connector_callbacks')
      .select(['result', 'verification'])
      .where('provider_reference', '=', reference)
      .execute()
    assert.equal(logged.length, 1, JSON.stringify(logged))
    assert.equal(logged[0]?.verification, 'verified')
    assert.ok(['applied', 'duplicate'].includes(logged[0]?.result as string), JSON.stringify(logged))
    t.diagnostic(
      `(c) callback attempts: ${callback.attempts.join(' ')}; the retry ${logged[0]?.result === 'applied' ? 'applied it' : 'found it applied by status sync'}`,
    )
  })

  it('the gateway stops cleanly, and the ledger verifies', async (t) => {
    assert.equal(await stopProgram(gateway.program), 0, gateway.program.output())
    await assertLedgerVerifies(gateway.env('mg-handover-verify'))
    t.diagnostic(`the gateway's starts answered after ${gateway.startMs.join(', ')} ms`)
  })
})

import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import {
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  TableNode,
  type UnknownRow,
} from 'kysely'
import { SimulatorConnector } from '../../src/connectors/simulator/index.ts'
import type { PayoutOrder, ProviderPayoutResult, ProviderRefundResult } from '../../src/connectors/types.ts'
import {
  backends,
  call,
  eventsOf,
  eventually,
  newTransaction,
  type TestMerchant,
} from '../helpers/harness.ts'
import { newPayout } from '../helpers/payouts.ts'
import { suiteContext } from '../helpers/suite.ts'
import { putConfig } from './webhooks/helpers.ts'

/**
 * Each crash point of the refund and payout flows: a failure is injected at one step (the database
 * failing inside a transaction, which rolls it back as a killed process's would; the provider call that never
 * returns, as when the process dies during it; the provider unreachable; the answer never sent), then the
 * request is retried with the same key. Whatever the step, the key makes exactly one refund or payout, every
 * retry answers the same uuid, the provider moves the money once, and the recovery job makes it final.
 */

type Fault = 'hang' | 'throw'

/** The sandbox provider, with the money it moved counted per uuid and a fault to play on the next call. */
class ScriptedProvider extends SimulatorConnector {
  readonly refundsMoved = new Map<string, number>()
  readonly payoutsTaken = new Map<string, number>()
  next: { refund?: Fault; submit?: Fault } = {}
  private hung: ((error: Error) => void)[] = []

  private async play(fault: Fault | undefined): Promise<void> {
    if (fault === 'throw') throw new Error('connect ECONNREFUSED (injected)')
    // The process "dies" during the call: the call never returns while the test looks.
    if (fault === 'hang') await new Promise<void>((_, reject) => this.hung.push(reject))
  }

  /**
   * Plays the fault set for the next `call`: unreachable before the provider takes the money, or dying after
   * it did (`taken`, by uuid, idempotent: a repeated request moves no more money).
   */
  private async take(call: keyof ScriptedProvider['next'], taken: Map<string, number>, uuid: string) {
    const fault = this.next[call]
    this.next[call] = undefined
    if (fault === 'throw') await this.play(fault)
    taken.set(uuid, 1)
    await this.play(fault === 'hang' ? fault : undefined)
  }

  override async refund(input: {
    refundUuid: string
    amountMinor: number
    currency: string
  }): Promise<ProviderRefundResult> {
    await this.take('refund', this.refundsMoved, input.refundUuid)
    return super.refund(input)
  }

  override async submitPayout(order: PayoutOrder): Promise<ProviderPayoutResult> {
    await this.take('submit', this.payoutsTaken, order.payoutUuid)
    return super.submitPayout(order)
  }

  /** Ends the calls left hanging (the dead process's), so that nothing outlives its test. */
  releaseHung(): void {
    for (const reject of this.hung.splice(0)) reject(new Error('the process died'))
  }
}

/** Fails the next statement of one kind on one table, inside whatever transaction runs it. */
class DatabaseFault implements KyselyPlugin {
  private armed: { kind: 'InsertQueryNode' | 'UpdateQueryNode'; table: string } | null = null

  arm(kind: 'insert' | 'update', table: string): void {
    this.armed = { kind: kind === 'insert' ? 'InsertQueryNode' : 'UpdateQueryNode', table }
  }

  disarm(): void {
    this.armed = null
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const { node } = args
    if (this.armed && writes(node).some((w) => w.kind === this.armed?.kind && w.table === this.armed.table)) {
      this.armed = null
      throw new Error('Connection terminated unexpectedly (injected)')
    }
    return node
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result
  }
}

/**
 * The tables a statement inserts into or updates: a built query's one and those of its WITH clause (the outbox
 * writes an event with its delivery in one statement), or each one a statement written in SQL names (the
 * ledger's posting inserts its entry and lines and updates the balances in one statement).
 */
function writes(node: RootOperationNode): { kind: string; table: string }[] {
  const ctes = 'with' in node && node.with ? node.with.expressions : []
  return [...ctes.flatMap((cte) => writes(cte.expression as RootOperationNode)), ...ownWrites(node)]
}

function ownWrites(node: RootOperationNode): { kind: string; table: string }[] {
  if (node.kind === 'RawNode')
    return [...node.sqlFragments.join(' ').matchAll(/\b(INSERT INTO|UPDATE)\s+"?(\w+)"?/gi)].map((m) => ({
      kind: (m[1] as string).toUpperCase() === 'UPDATE' ? 'UpdateQueryNode' : 'InsertQueryNode',
      table: m[2] as string,
    }))
  const target =
    node.kind === 'InsertQueryNode' ? node.into : node.kind === 'UpdateQueryNode' ? node.table : undefined
  return target && TableNode.is(target) ? [{ kind: node.kind, table: target.table.identifier.name }] : []
}

const RECHECK_MS = 60_000
/** A moment when every hand-over a crash cut off is due for its recheck. */
const pastRecheck = () => new Date(Date.now() + RECHECK_MS + 1000)
let keyCounter = 0
const freshKey = (prefix: string) => `${prefix}-${Date.now()}-${keyCounter++}`

for (const backend of backends()) {
  describe(`crash points of refunds and payouts (${backend})`, () => {
    const provider = new ScriptedProvider({ payoutCompletionMs: 0 })
    const fault = new DatabaseFault()
    const ctx = suiteContext(backend, {
      config: { providerRecheckMs: RECHECK_MS },
      services: { simulator: provider, payouts: { timing: { pollIntervalMs: 0 } } },
      plugins: [fault],
    })
    afterEach(() => {
      fault.disarm()
      provider.next = {}
      provider.releaseHung()
    })

    const paidTransaction = async (merchant: TestMerchant, amount = 100000) => {
      const created = await call(
        ctx,
        'POST',
        '/integration/transactions',
        newTransaction({ amount, currency: 'USD', payment_method: 'card' }),
        { as: { merchant } },
      )
      assert.equal(created.statusCode, 201, created.body)
      const uuid = created.json().uuid as string
      const paid = await call(ctx, 'POST', `/integration/sandbox/transactions/${uuid}/paid`, undefined, {
        as: { merchant },
      })
      assert.equal(paid.statusCode, 200, paid.body)
      return uuid
    }
    const post = (merchant: TestMerchant, path: string, body: unknown, key: string) =>
      call(ctx, 'POST', path, body, { as: { merchant }, auth: 'signature', idempotencyKey: key })
    const refundsOf = (transactionUuid: string) =>
      ctx.db.selectFrom('refunds').selectAll().where('transaction_uuid', '=', transactionUuid).execute()
    const payoutsOf = (merchant: TestMerchant) =>
      ctx.db.selectFrom('payouts').selectAll().where('merchant_uuid', '=', merchant.uuid).execute()
    const versionsOf = async (uuid: string) =>
      (await eventsOf(ctx, uuid)).map((e) => `${e.event}@${e.version}`)
    const balance = async (merchant: TestMerchant) => {
      const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant } })
      const usdt = res.json().data.find((r: { currency: string }) => r.currency === 'USDT')
      return { available: usdt.available as number, reserved: usdt.reserved as number }
    }
    const ledgerClean = async () => assert.equal((await ctx.services.ledger.verify()).ok, true)
    /**
     * Sends a request while the database fails at `verb` on `table`: a 5xx that does not show the injected
     * failure, then taken off the list ctx.close() fails on (these failures are caused on purpose).
     */
    const postDyingAt = async (
      [verb, table]: Parameters<DatabaseFault['arm']>,
      merchant: TestMerchant,
      path: string,
      body: unknown,
      key: string,
    ) => {
      fault.arm(verb, table)
      const res = await post(merchant, path, body, key)
      assert.ok(res.statusCode >= 500, `expected a 5xx, got ${res.statusCode}: ${res.body}`)
      assert.ok(!res.body.includes('injected'), 'the injected failure leaked into the answer')
      ctx.serverErrors.length = 0
    }
    /** The one row `rowsOf` finds once the provider holds it (`taken`, by uuid): still pending. */
    const pendingOnceTaken = async <Row extends { uuid: string; status: string }>(
      rowsOf: () => Promise<Row[]>,
      taken: Map<string, unknown>,
    ) => {
      const [row] = await eventually(async () => {
        const rows = await rowsOf()
        return rows.length === 1 && taken.has(rows[0]?.uuid ?? '') ? rows : null
      })
      assert.ok(row)
      assert.equal(row.status, 'pending')
      return row
    }

    /** The retry: 201, the same refund or payout, marked as a replay. */
    const assertReplay = (
      res: { statusCode: number; body: string; headers: Record<string, unknown> },
      uuid: string,
    ) => {
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.headers['idempotent-replayed'], 'true')
      assert.equal(JSON.parse(res.body).uuid, uuid)
    }

    describe('refunds', () => {
      const REFUND = '/integration/refunds'
      /** A merchant of its own with one paid 1000.00 USD payment, a fresh key, and a refund of it (`fields`). */
      const refundCase = async (name: string, fields: Record<string, unknown> = {}) => {
        const m = await ctx.newMerchant(name)
        const tx = await paidTransaction(m)
        return { m, tx, key: freshKey('rf'), body: { transaction_uuid: tx, ...fields } }
      }

      it('dies inside the intent, before its commit: nothing is written, and the retry makes the one refund', async () => {
        const { m, tx, key, body } = await refundCase('Refund before commit', { amount_minor: 4000 })
        const before = await balance(m)
        const asked = provider.refundsMoved.size
        await postDyingAt(['insert', 'journal_entries'], m, REFUND, body, key)
        assert.equal((await refundsOf(tx)).length, 0)
        assert.deepEqual(await balance(m), before)
        // The provider is never asked about a refund that was not committed.
        assert.equal(provider.refundsMoved.size, asked)

        const retry = await post(m, REFUND, body, key)
        assert.equal(retry.statusCode, 201, retry.body)
        assert.equal(retry.headers['idempotent-replayed'], undefined)
        assert.equal(retry.json().status, 'succeeded')
        assertReplay(await post(m, REFUND, body, key), retry.json().uuid)
        assert.equal((await refundsOf(tx)).length, 1)
        await ledgerClean()
      })

      it('dies during the provider call, after the commit: the retry answers the committed refund, the worker finishes it', async () => {
        const { m, tx, key, body } = await refundCase('Refund during call', { amount_minor: 2500 })
        provider.next.refund = 'hang'
        void post(m, REFUND, body, key)
        const row = await pendingOnceTaken(() => refundsOf(tx), provider.refundsMoved)

        // The first request still holds its key (its process is gone, its lease is not): the retry is
        // answered from the committed refund at once, not after the lease.
        const retry = await post(m, REFUND, body, key)
        assertReplay(retry, row.uuid)
        assert.equal(retry.json().status, 'pending')

        // Not due yet; then due: the provider is asked again, idempotently, and the refund settles once.
        assert.equal(await ctx.services.refunds.checkDue(), 0)
        assert.equal(await ctx.services.refunds.checkDue(100, pastRecheck()), 1)
        const [settled] = await refundsOf(tx)
        assert.equal(settled?.status, 'succeeded')
        assert.equal(provider.refundsMoved.get(row.uuid), 1)
        assert.deepEqual(await versionsOf(tx), ['transaction.paid@2', 'transaction.partially_refunded@3'])
        const later = await post(m, REFUND, body, key)
        assertReplay(later, row.uuid)
        assert.equal(later.json().status, 'succeeded')
        assert.equal(await ctx.services.refunds.checkDue(100, pastRecheck()), 0)
        await ledgerClean()
      })

      it('the provider cannot be reached: 201 pending, and the worker settles it when the provider answers', async () => {
        const { m, tx, key, body } = await refundCase('Refund unreachable', { amount_minor: 100000 })
        provider.next.refund = 'throw'
        const res = await post(m, REFUND, body, key)
        assert.equal(res.statusCode, 201, res.body)
        assert.equal(res.json().status, 'pending')
        assert.equal(await ctx.services.refunds.checkDue(100, pastRecheck()), 1)
        assert.equal((await refundsOf(tx))[0]?.status, 'succeeded')
        assert.deepEqual(await versionsOf(tx), ['transaction.paid@2', 'transaction.refunded@3'])
        assertReplay(await post(m, REFUND, body, key), res.json().uuid)
        await ledgerClean()
      })

      for (const [step, table] of [
        ['its own update', 'refunds'],
        ["the payment's update", 'transactions'],
        ['its event', 'events'],
        ['its event with a delivery', 'webhook_deliveries'],
      ] as const) {
        it(`the provider answered, then the settlement dies at ${step}: the retry answers the pending refund, the worker settles it once`, async () => {
          const m = await ctx.newMerchant(`Refund settle ${table}`)
          if (table === 'webhook_deliveries') {
            // A configured URL: the event is written with its delivery, in one statement.
            await putConfig(ctx, { url: 'https://shop.example/hooks' }, { merchant: m })
          }
          const tx = await paidTransaction(m)
          const before = await balance(m)
          const key = freshKey('rf')
          const body = { transaction_uuid: tx, amount_minor: 1000 }
          // The provider's answer is in hand; the settlement's transaction fails at this step and rolls back.
          await postDyingAt(
            [table === 'events' || table === 'webhook_deliveries' ? 'insert' : 'update', table],
            m,
            REFUND,
            body,
            key,
          )
          const [row] = await refundsOf(tx)
          assert.equal(row?.status, 'pending')
          assert.equal(provider.refundsMoved.get(row.uuid), 1)
          // The debit stays with the pending refund.
          assert.ok((await balance(m)).available < before.available)

          assertReplay(await post(m, REFUND, body, key), row.uuid)
          assert.equal(await ctx.services.refunds.checkDue(100, pastRecheck()), 1)
          assert.equal((await refundsOf(tx))[0]?.status, 'succeeded')
          assert.equal(provider.refundsMoved.get(row.uuid), 1)
          assert.deepEqual(await versionsOf(tx), ['transaction.paid@2', 'transaction.partially_refunded@3'])
          assert.equal((await refundsOf(tx)).length, 1)
          await ledgerClean()
        })
      }

      it('the answer cannot be kept after everything committed: it is sent all the same, and the retry answers the same refund', async () => {
        const { m, tx, key, body } = await refundCase('Refund before answer')
        fault.arm('update', 'idempotency_keys')
        const first = await post(m, REFUND, body, key)
        assert.equal(first.statusCode, 201, first.body)
        const [row] = await refundsOf(tx)
        assert.equal(row?.status, 'succeeded')
        assert.equal(first.json().uuid, row.uuid)
        const retry = await post(m, REFUND, body, key)
        assertReplay(retry, row.uuid)
        assert.equal(retry.json().status, 'succeeded')
        assert.equal(retry.json().amount_minor, 100000)
        // A full refund: any rule on what is left would refuse a new one; the retry is answered, not refused.
        assert.equal((await refundsOf(tx)).length, 1)
        await ledgerClean()
      })

      it('a key whose record was purged still names its refund: the retry answers it, and makes no other', async () => {
        const { m, tx, key, body } = await refundCase('Refund purged key', { amount_minor: 700 })
        const first = await post(m, REFUND, body, key)
        assert.equal(first.statusCode, 201, first.body)
        await ctx.db.deleteFrom('idempotency_keys').where('key', '=', key).execute()
        assertReplay(await post(m, REFUND, body, key), first.json().uuid)
        assert.equal((await refundsOf(tx)).length, 1)

        // Used again, once purged, for another payment: the answer is the refund the key made, with its own
        // payment's amounts, and the other payment is not refunded.
        const other = await paidTransaction(m, 54321)
        await ctx.db.deleteFrom('idempotency_keys').where('key', '=', key).execute()
        const reused = await post(m, REFUND, { transaction_uuid: other, amount_minor: 700 }, key)
        assertReplay(reused, first.json().uuid)
        assert.equal(reused.json().transaction_uuid, tx)
        assert.equal(reused.json().transaction_amount_minor, first.json().transaction_amount_minor)
        assert.equal(reused.json().cumulative_refunded_minor, 700)
        assert.equal((await refundsOf(other)).length, 0)
      })
    })

    describe('payouts', () => {
      const PAYOUT = '/integration/payouts'
      const funded = async (name: string) => {
        const m = await ctx.newMerchant(name)
        await paidTransaction(m, 100000)
        return m
      }
      /** A funded merchant of its own, a fresh key, and a payout body (`body`, by default 100.00 USD to TRC20). */
      const payoutCase = async (name: string, body: Record<string, unknown> = newPayout()) => ({
        m: await funded(name),
        key: freshKey('po'),
        body,
      })
      /** A payout case (`name`) whose request died at `at`: the case, and the payout row the request left. */
      const diedAt = async (name: string, at: Parameters<DatabaseFault['arm']>) => {
        const payout = await payoutCase(name)
        await postDyingAt(at, payout.m, PAYOUT, payout.body, payout.key)
        const [row] = await payoutsOf(payout.m)
        assert.ok(row, 'the request left its payout')
        return { ...payout, row }
      }
      /** Runs the payout job until `m`'s one payout is final (the sandbox completes at once here): completed. */
      const finish = async (m: TestMerchant) => {
        await ctx.services.payouts.checkDue(100, pastRecheck())
        await ctx.services.payouts.checkDue(100, pastRecheck())
        const [done] = await payoutsOf(m)
        assert.equal(done?.status, 'completed')
        return done
      }

      it('dies inside the intent, before its commit: nothing is reserved, and the retry makes the one payout', async () => {
        const { m, key, body } = await payoutCase('Payout before commit')
        const before = await balance(m)
        await postDyingAt(['insert', 'journal_entries'], m, PAYOUT, body, key)
        assert.equal((await payoutsOf(m)).length, 0)
        assert.deepEqual(await balance(m), before)

        const retry = await post(m, PAYOUT, body, key)
        assert.equal(retry.statusCode, 201, retry.body)
        assert.equal(retry.headers['idempotent-replayed'], undefined)
        assertReplay(await post(m, PAYOUT, body, key), retry.json().uuid)
        assert.equal((await payoutsOf(m)).length, 1)
        await ledgerClean()
      })

      it('dies during the hand-over: the retry answers the payout (never 409 conflict), the worker hands it over again', async () => {
        const { m, key, body } = await payoutCase(
          'Payout during call',
          newPayout({
            method: 'card',
            destination: { card_number: '4242424242424242', holder_name: 'JANE DOE' },
          }),
        )
        provider.next.submit = 'hang'
        void post(m, PAYOUT, body, key)
        const row = await pendingOnceTaken(() => payoutsOf(m), provider.payoutsTaken)
        // Sealed, never in the clear: the full card number is not in any column.
        assert.ok(row.destination_sealed)
        assert.ok(!JSON.stringify(row).includes('4242424242424242'))

        const retry = await post(m, PAYOUT, body, key)
        assertReplay(retry, row.uuid)
        assert.equal(retry.json().status, 'pending')

        provider.payoutsTaken.clear()
        const done = await finish(m)
        // Handed over again from the sealed destination, which is dropped once the provider has the payout.
        assert.equal(provider.payoutsTaken.get(row.uuid), 1)
        assert.equal(done?.destination_sealed, null)
        assert.deepEqual(await versionsOf(row.uuid), ['payout.processing@2', 'payout.completed@3'])
        const later = await post(m, PAYOUT, body, key)
        assertReplay(later, row.uuid)
        assert.equal(later.json().status, 'completed')
        assert.equal((await payoutsOf(m)).length, 1)
        assert.deepEqual(await balance(m), {
          available: 1_000_000_000 - row.payout_usdt_amount_micro,
          reserved: 0,
        })
        await ledgerClean()
      })

      it('the provider cannot be reached: 201 pending, not failed, and the worker hands it over again', async () => {
        const { m, key, body } = await payoutCase('Payout unreachable')
        provider.next.submit = 'throw'
        const res = await post(m, PAYOUT, body, key)
        assert.equal(res.statusCode, 201, res.body)
        assert.equal(res.json().status, 'pending')
        await finish(m)
        await ledgerClean()
      })

      it('the provider took it, then the settlement dies: the retry answers the pending payout, the worker finishes it once', async () => {
        const { m, key, body, row } = await diedAt('Payout settle', ['update', 'payouts'])
        assert.equal(row.status, 'pending')
        assert.equal(provider.payoutsTaken.get(row.uuid), 1)
        assert.equal((await balance(m)).reserved, row.payout_usdt_amount_micro)

        assertReplay(await post(m, PAYOUT, body, key), row.uuid)
        await finish(m)
        assert.deepEqual(await versionsOf(row.uuid), ['payout.processing@2', 'payout.completed@3'])
        await ledgerClean()
      })

      it('the answer cannot be kept after everything committed: it is sent all the same, and the retry answers the payout', async () => {
        const { m, key, body } = await payoutCase('Payout before answer')
        fault.arm('update', 'idempotency_keys')
        const first = await post(m, PAYOUT, body, key)
        assert.equal(first.statusCode, 201, first.body)
        const [row] = await payoutsOf(m)
        assert.ok(row, 'the request made its payout')
        assert.equal(first.json().uuid, row.uuid)
        assert.equal(row.status, 'processing')
        const retry = await post(m, PAYOUT, body, key)
        assertReplay(retry, row.uuid)
        assert.equal(retry.json().status, 'processing')
        assert.equal((await payoutsOf(m)).length, 1)
      })

      it('a key whose record was purged still names its payout: the retry answers it rather than 409 conflict', async () => {
        const { m, key, body } = await payoutCase('Payout purged key')
        const first = await post(m, PAYOUT, body, key)
        assert.equal(first.statusCode, 201, first.body)
        await ctx.db.deleteFrom('idempotency_keys').where('key', '=', key).execute()
        assertReplay(await post(m, PAYOUT, body, key), first.json().uuid)
        // Another key with the same external_id is still a conflict.
        const other = await post(m, PAYOUT, body, freshKey('po'))
        assert.equal(other.statusCode, 409, other.body)
        assert.equal(other.json().error.code, 'conflict')
      })
    })
  })
}

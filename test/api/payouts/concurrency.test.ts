import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Mode } from '../../../src/db/types.ts'
import {
  backends,
  call,
  extId,
  paidTransaction as paidInSandbox,
  postRefund,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

let keyCounter = 0
const idem = (prefix: string) => `${prefix}-${Date.now()}-${keyCounter++}`

/** USDT micro per USD cent at the harness rate (USD = 1, no markup, no fees). */
const MICRO_PER_CENT = 10_000
const WALLET = { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' }
const CARD = { card_number: '4111 1111 1111 1111', holder_name: 'Jane Doe' }

type Answer = Awaited<ReturnType<typeof call>>
type Balance = { currency: string; available: number; pending: number; reserved: number; total: number }

for (const backend of backends()) {
  describe(`payouts under concurrency (${backend})`, () => {
    const ctx = suiteContext(backend)

    /** A paid USD transaction: in test mode its settlement is available at once. */
    const paidTransaction = async (merchant: TestMerchant, mode: Mode, cents: number) => {
      const paid = await paidInSandbox(ctx, { amount: cents, currency: 'USD' }, { merchant, mode })
      assert.equal(paid.settlement_amount, cents * MICRO_PER_CENT)
      return paid
    }
    /** Live money waits for its 24 h hold: the settlement job, run as if the hold were over, releases it. */
    const settleLive = async () => {
      const future = new Date(Date.now() + 2 * 86400_000)
      while ((await ctx.services.transactions.settleDue(100, future)) > 0);
    }
    const balance = async (merchant: TestMerchant, mode: Mode = 'test'): Promise<Balance> => {
      const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant, mode } })
      assert.equal(res.statusCode, 200, res.body)
      const usdt = res.json().data.find((b: Balance) => b.currency === 'USDT')
      assert.ok(usdt, 'the USDT balance is listed')
      return usdt
    }
    /** The kept balances, read from the table itself rather than through the API. */
    const accounts = async (merchant: TestMerchant, mode: Mode = 'test') => {
      const rows = await ctx.db
        .selectFrom('ledger_accounts')
        .select(['kind', 'balance'])
        .where('merchant_uuid', '=', merchant.uuid)
        .where('mode', '=', mode)
        .where('currency', '=', 'USDT')
        .execute()
      return Object.fromEntries(rows.map((r) => [r.kind, Number(r.balance)])) as Record<string, number>
    }
    const payout = (
      merchant: TestMerchant,
      cents: number,
      options: { mode?: Mode; method?: 'usdt_wallet' | 'card' } = {},
    ) => {
      const method = options.method ?? 'usdt_wallet'
      return call(
        ctx,
        'POST',
        '/integration/payouts',
        {
          external_id: extId('po'),
          amount: cents,
          currency: 'USD',
          method,
          destination: method === 'card' ? CARD : WALLET,
        },
        { as: { merchant, mode: options.mode ?? 'test' }, auth: 'signature', idempotencyKey: idem('po') },
      )
    }
    const refund = (merchant: TestMerchant, transactionUuid: string, amountMinor: number) =>
      postRefund(ctx, merchant, transactionUuid, amountMinor, idem('rf'))

    /**
     * Runs `burst` while another connection keeps reading the merchant's accounts: no committed balance the
     * merchant holds (available, pending, reserved) may ever be seen below zero, not even mid-burst.
     */
    const watched = async <T>(merchant: TestMerchant, burst: () => Promise<T>) => {
      let done = false
      let lowest = Number.POSITIVE_INFINITY
      let samples = 0
      const sampler = (async () => {
        while (!done) {
          const row = await ctx.db
            .selectFrom('ledger_accounts')
            .select((eb) => eb.fn.min('balance').as('lowest'))
            .where('merchant_uuid', '=', merchant.uuid)
            .where('kind', 'in', ['available', 'pending', 'reserved'])
            .executeTakeFirstOrThrow()
          lowest = Math.min(lowest, Number(row.lowest ?? 0))
          samples++
          await new Promise((resolve) => setImmediate(resolve))
        }
      })()
      try {
        return await burst()
      } finally {
        done = true
        await sampler
        assert.ok(samples > 0, 'the balances were sampled during the burst')
        assert.ok(lowest >= 0, `a balance was seen at ${lowest} during the burst`)
      }
    }
    const codes = (results: Awaited<ReturnType<typeof call>>[]) =>
      results.filter((r) => r.statusCode !== 201).map((r) => `${r.statusCode} ${r.json().error?.code}`)

    it('20 equal payouts at once against a balance that covers 14: exactly 14 reserved, 6 refused, nothing negative', async () => {
      const m = await ctx.newMerchant('Payout burst')
      await paidTransaction(m, 'test', 100_000) // 1000 USDT
      const funded = 1_000_000_000
      assert.equal((await balance(m)).available, funded)

      const each = 7000 * MICRO_PER_CENT // 70 USDT: floor(1000 / 70) = 14 fit
      const results = await watched(m, () => Promise.all(Array.from({ length: 20 }, () => payout(m, 7000))))
      const created = results.filter((r) => r.statusCode === 201)
      assert.equal(created.length, Math.floor(funded / each))
      assert.deepEqual(codes(results), Array(6).fill('422 insufficient_balance'))
      for (const r of results.filter((r) => r.statusCode === 422)) {
        const { details } = r.json().error
        assert.equal(details.required_minor, each)
        assert.ok(details.available_minor < each, JSON.stringify(details))
      }
      const totals = created.map((r) => r.json().payout_usdt_amount_micro)
      assert.ok(totals.every((t) => t === each))
      const reserved = totals.reduce((s, t) => s + t, 0)
      assert.ok(reserved <= funded)
      assert.ok(created.every((r) => r.json().status === 'processing'))

      const usdt = await balance(m)
      assert.deepEqual(
        [usdt.available, usdt.pending, usdt.reserved, usdt.total],
        [funded - reserved, 0, reserved, funded],
      )
      const kept = await accounts(m)
      assert.deepEqual([kept.available, kept.pending, kept.reserved], [funded - reserved, 0, reserved])
      // Only the reserved payouts exist; the refused ones left nothing behind.
      const list = await call(ctx, 'GET', '/integration/payouts?per_page=100', undefined, {
        as: { merchant: m },
      })
      assert.equal(list.json().data.length, created.length)
      assert.equal((await ctx.services.ledger.verify()).ok, true)

      // Their outcomes at once too: half completed, half failed; the failed reservations return.
      const half = created.length / 2
      const outcomes = await watched(m, () =>
        Promise.all(
          created.map((r, i) =>
            call(
              ctx,
              'POST',
              `/integration/sandbox/payouts/${r.json().uuid}/${i < half ? 'completed' : 'failed'}`,
              undefined,
              { as: { merchant: m } },
            ),
          ),
        ),
      )
      assert.deepEqual(
        outcomes.map((r) => `${r.statusCode} ${r.json().status}`),
        [...Array(half).fill('200 completed'), ...Array(half).fill('200 failed')],
      )
      const after = await balance(m)
      assert.deepEqual([after.available, after.pending, after.reserved], [funded - half * each, 0, 0])
      const report = await ctx.services.ledger.verify()
      assert.deepEqual([report.ok, report.mismatches, report.unbalanced], [true, [], []])
    })

    it('20 payouts of different sizes and methods at once: the reserved ones fit, every refused one did not', async () => {
      const m = await ctx.newMerchant('Mixed burst')
      await paidTransaction(m, 'test', 60_000)
      await paidTransaction(m, 'test', 40_000)
      const funded = 1_000_000_000
      // 20 sizes from 31.00 to 126.00 USD: 1585 USD asked of 1000 available.
      const sizes = Array.from({ length: 20 }, (_, i) => 3100 + i * 500)
      const results = await watched(m, () =>
        Promise.all(
          sizes.map((cents, i) => payout(m, cents, { method: i % 3 === 0 ? 'card' : 'usdt_wallet' })),
        ),
      )
      const created = results.filter((r) => r.statusCode === 201)
      const refused = results.filter((r) => r.statusCode !== 201)
      assert.ok(created.length > 0 && refused.length > 0, `${created.length} created`)
      assert.ok(
        refused.every((r) => r.statusCode === 422 && r.json().error.code === 'insufficient_balance'),
        codes(results).join(', '),
      )
      for (const r of created) {
        const body = r.json()
        assert.equal(body.payout_usdt_amount_micro, body.amount * MICRO_PER_CENT)
      }
      const reserved = created.reduce((s, r) => s + r.json().payout_usdt_amount_micro, 0)
      assert.ok(reserved <= funded, `${reserved} reserved of ${funded}`)
      const usdt = await balance(m)
      assert.deepEqual([usdt.available, usdt.reserved], [funded - reserved, reserved])
      assert.ok(usdt.available >= 0)
      // Available only fell during the burst, so each refused payout would not fit in what is left either.
      for (const r of refused) assert.ok(r.json().error.details.required_minor > usdt.available)
      const kept = await accounts(m)
      assert.deepEqual([kept.available, kept.reserved], [funded - reserved, reserved])
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('10 payouts and 10 refunds at once on one merchant (both debit available): never negative, sums agree', async () => {
      const m = await ctx.newMerchant('Payouts and refunds')
      const tx = await paidTransaction(m, 'test', 100_000) // 1000 USDT
      const funded = 1_000_000_000
      // 10 refunds of 60 USD (600 USD in all, within the 1000 USD paid) and 10 payouts of 70 USD: 1300 asked.
      const refundCents = 6000
      const payoutCents = 7000
      const requests = Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0 ? { kind: 'refund' as const, i } : { kind: 'payout' as const, i },
      )
      const results = await watched(m, () =>
        Promise.all(
          requests.map(async (r) => ({
            kind: r.kind,
            res: r.kind === 'refund' ? await refund(m, tx.uuid, refundCents) : await payout(m, payoutCents),
          })),
        ),
      )
      const refunds = results.filter((r) => r.kind === 'refund' && r.res.statusCode === 201)
      const payouts = results.filter((r) => r.kind === 'payout' && r.res.statusCode === 201)
      const refused = results.filter((r) => r.res.statusCode !== 201)
      assert.ok(refused.length > 0, 'the balance does not cover everything')
      assert.ok(
        refused.every((r) => r.res.statusCode === 422 && r.res.json().error.code === 'insufficient_balance'),
        codes(results.map((r) => r.res)).join(', '),
      )
      assert.ok(refunds.every((r) => r.res.json().status === 'succeeded'))
      // The refund's debit is not shown: ceil(60.00 USD / 1) = 60 USDT each (docs/API.md, Refunds).
      const refundDebits = refunds.length * refundCents * MICRO_PER_CENT
      const reserved = payouts.reduce((s, r) => s + r.res.json().payout_usdt_amount_micro, 0)
      assert.equal(reserved, payouts.length * payoutCents * MICRO_PER_CENT)
      assert.ok(refundDebits + reserved <= funded)

      const usdt = await balance(m)
      assert.deepEqual(
        [usdt.available, usdt.pending, usdt.reserved],
        [funded - refundDebits - reserved, 0, reserved],
      )
      const kept = await accounts(m)
      assert.deepEqual([kept.available, kept.reserved], [usdt.available, reserved])
      assert.equal(kept.refunds_out, refundDebits)
      for (const r of refused) assert.ok(r.res.json().error.details.required_minor > usdt.available)

      // The transaction carries exactly the refunds that went through.
      const after = await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`, undefined, {
        as: { merchant: m },
      })
      assert.equal(after.json().status, refunds.length ? 'partially_refunded' : 'paid')
      const cumulative = refunds.map((r) => r.res.json().cumulative_refunded_minor)
      assert.equal(Math.max(0, ...cumulative), refunds.length * refundCents)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    /** A payout created in `mode` (201). */
    const assertCreatedIn = (res: Answer, mode: Mode) => {
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().mode, mode)
    }
    const assertInsufficient = (res: Answer) => {
      assert.equal(res.statusCode, 422, res.body)
      assert.equal(res.json().error.code, 'insufficient_balance')
    }
    /** The listed figures of the merchant's USDT balance in `mode`, in that order. */
    const balanceFields = async (merchant: TestMerchant, mode: Mode, fields: (keyof Balance)[]) => {
      const usdt = await balance(merchant, mode)
      return fields.map((field) => usdt[field])
    }
    const simulatePayout = (
      merchant: TestMerchant,
      mode: Mode,
      uuid: string,
      outcome: 'completed' | 'failed',
    ) =>
      call(ctx, 'POST', `/integration/sandbox/payouts/${uuid}/${outcome}`, undefined, {
        as: { merchant, mode },
      })

    it('test-mode payouts never touch live balances and the other way round, also when sent at once', async () => {
      const m = await ctx.newMerchant('Two modes')
      await paidTransaction(m, 'test', 50_000) // 500 USDT, available at once
      await paidTransaction(m, 'live', 30_000) // 300 USDT, pending for 24 h
      assert.deepEqual(await balanceFields(m, 'live', ['available', 'pending']), [0, 300_000_000])
      // Live money still on hold cannot be paid out, however much test money there is.
      const early = await payout(m, 100, { mode: 'live' })
      assertInsufficient(early)
      await settleLive()
      const live0 = await balance(m, 'live')
      const test0 = await balance(m, 'test')
      assert.deepEqual([live0.available, test0.available], [300_000_000, 500_000_000])

      // A test-mode payout leaves the live balances as they were.
      const testPayout = await payout(m, 10_000, { mode: 'test' })
      assertCreatedIn(testPayout, 'test')
      assert.deepEqual(await balance(m, 'live'), live0)
      assert.deepEqual(await balanceFields(m, 'test', ['available', 'reserved']), [400_000_000, 100_000_000])
      // A live payout leaves the test balances as they were.
      const test1 = await balance(m, 'test')
      const livePayout = await payout(m, 5000, { mode: 'live' })
      assertCreatedIn(livePayout, 'live')
      assert.deepEqual(await balance(m, 'test'), test1)
      assert.deepEqual(await balanceFields(m, 'live', ['available', 'reserved']), [250_000_000, 50_000_000])
      // 300 USDT live asked: 250 live available, and the 400 test ones do not count.
      const tooMuch = await payout(m, 30_000, { mode: 'live' })
      assertInsufficient(tooMuch)

      // Each mode sees only its own payouts (404 across modes, not 403).
      const crossed = await call(ctx, 'GET', `/integration/payouts/${testPayout.json().uuid}`, undefined, {
        as: { merchant: m, mode: 'live' },
      })
      assert.equal(crossed.statusCode, 404)
      const liveList = await call(ctx, 'GET', '/integration/payouts', undefined, {
        as: { merchant: m, mode: 'live' },
      })
      assert.deepEqual(
        liveList.json().data.map((p: { uuid: string }) => p.uuid),
        [livePayout.json().uuid],
      )
      // Outcomes move only their own mode's money.
      const completed = await simulatePayout(m, 'test', testPayout.json().uuid, 'completed')
      assert.equal(completed.json().status, 'completed')
      const failed = await simulatePayout(m, 'live', livePayout.json().uuid, 'failed')
      assert.equal(failed.json().status, 'failed')
      const [live2, test2] = [await balance(m, 'live'), await balance(m, 'test')]
      assert.deepEqual([live2.available, live2.reserved, live2.total], [300_000_000, 0, 300_000_000])
      assert.deepEqual([test2.available, test2.reserved, test2.total], [400_000_000, 0, 400_000_000])

      // At once, in both modes: 10 test payouts of 70 USDT (400 cover 5) and 10 live of 70 (300 cover 4).
      const results = await watched(m, () =>
        Promise.all(Array.from({ length: 20 }, (_, i) => payout(m, 7000, { mode: i % 2 ? 'live' : 'test' }))),
      )
      const createdIn = (mode: Mode) =>
        results.filter((r) => r.statusCode === 201 && r.json().mode === mode).length
      assert.deepEqual([createdIn('test'), createdIn('live')], [5, 4])
      assert.deepEqual(codes(results), Array(11).fill('422 insufficient_balance'))
      const [live3, test3] = [await balance(m, 'live'), await balance(m, 'test')]
      assert.deepEqual([live3.available, live3.reserved], [20_000_000, 280_000_000])
      assert.deepEqual([test3.available, test3.reserved], [50_000_000, 350_000_000])
      const [keptLive, keptTest] = [await accounts(m, 'live'), await accounts(m, 'test')]
      assert.deepEqual([keptLive.available, keptLive.reserved], [20_000_000, 280_000_000])
      assert.deepEqual([keptTest.available, keptTest.reserved], [50_000_000, 350_000_000])
      const report = await ctx.services.ledger.verify()
      assert.deepEqual([report.ok, report.mismatches, report.unbalanced], [true, [], []])
    })
  })
}

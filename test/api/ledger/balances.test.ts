import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AccountKind } from '../../../src/db/types.ts'
import { newId } from '../../../src/lib/ids.ts'
import type { Posting } from '../../../src/modules/ledger/service.ts'
import {
  backends,
  call,
  createTestContext,
  newTransaction,
  paidTransaction,
  postRefund,
  type SandboxOutcome,
} from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

for (const backend of backends()) {
  describe(`ledger, balances and rates (${backend})`, () => {
    const ctx = suiteContext(backend)

    const pay = (
      mode: 'test' | 'live',
      overrides = {},
      simulation: SandboxOutcome = 'paid',
      merchant = ctx.merchant,
    ) => paidTransaction(ctx, overrides, { merchant, mode }, simulation)
    const balances = async (mode: 'test' | 'live', merchant = ctx.merchant) => {
      const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant, mode } })
      assert.equal(res.statusCode, 200, res.body)
      return res.json().data as {
        currency: string
        available: number
        pending: number
        reserved: number
        total: number
      }[]
    }

    it('operations without query parameters refuse unknown ones (422), as the list does', async () => {
      for (const url of [
        '/integration/balances?foo=1',
        '/integration/rates?x=',
        '/integration/webhook?enabled=true',
      ]) {
        const res = await call(ctx, 'GET', url)
        assert.equal(res.statusCode, 422, url)
        assert.equal(res.json().error.code, 'validation_failed')
      }
    })

    it('a new merchant sees its settlement currency at zero', async () => {
      const fresh = await ctx.newMerchant('Fresh')
      const [usdt] = await balances('test', fresh)
      assert.deepEqual(
        { ...usdt, updated_at: undefined },
        { currency: 'USDT', available: 0, pending: 0, reserved: 0, total: 0, updated_at: undefined },
      )
    })

    it('test mode: a paid transaction is available at once (no hold), credited exactly once', async () => {
      const m = await ctx.newMerchant('Test mode')
      const tx = await pay('test', { amount: 150000 }, 'paid', m)
      assert.equal(tx.settle_available_at, tx.paid_at)
      // Replaying the outcome, and an out-of-order pair, credit nothing more.
      await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`, undefined, {
        as: { merchant: m },
      })
      const late = await pay('test', { amount: 50000 }, 'failed-then-paid', m)
      const [usdt] = await balances('test', m)
      assert.equal(usdt?.available, tx.settlement_amount + late.settlement_amount)
      assert.equal(usdt?.pending, 0)
      assert.equal(usdt?.total, usdt?.available)
    })

    it('live mode: paid money is pending until the hold ends, then the settlement job makes it available', async () => {
      const m = await ctx.newMerchant('Live mode')
      const tx = await pay('live', { amount: 92150 }, 'paid', m)
      assert.equal(Date.parse(tx.settle_available_at) - Date.parse(tx.paid_at), 86400 * 1000)
      let [usdt] = await balances('live', m)
      assert.deepEqual([usdt?.pending, usdt?.available], [tx.settlement_amount, 0])
      // Test-mode balances stay apart from live ones.
      assert.equal((await balances('test', m))[0]?.total, 0)

      assert.equal(await ctx.services.transactions.settleDue(), 0)
      await ctx.db
        .updateTable('transactions')
        .set({ settle_available_at: new Date(Date.now() - 1000) })
        .where('uuid', '=', tx.uuid)
        .execute()
      const [a, b] = await Promise.all([
        ctx.services.transactions.settleDue(),
        ctx.services.transactions.settleDue(),
      ])
      assert.equal(a + b, 1)
      ;[usdt] = await balances('live', m)
      assert.deepEqual(
        [usdt?.pending, usdt?.available, usdt?.total],
        [0, tx.settlement_amount, tx.settlement_amount],
      )
    })

    it('failed and expired transactions move no money', async () => {
      const m = await ctx.newMerchant('No money')
      await pay('test', {}, 'failed', m)
      await pay('test', {}, 'expired', m)
      assert.equal((await balances('test', m))[0]?.total, 0)
    })

    it('entries posted together: each once, and one posted before is left out while the other moves', async () => {
      const merchant = await ctx.newMerchant('Posted together')
      const at = new Date()
      const posting = (
        kind: Posting['kind'],
        reference: string,
        from: AccountKind,
        to: AccountKind,
        amount: number,
      ): Posting => ({
        merchantUuid: merchant.uuid,
        mode: 'test',
        kind,
        reference: { type: 'transaction', uuid: reference },
        currency: 'USDT',
        lines: [
          { account: from, amount: -amount },
          { account: to, amount },
        ],
        at,
      })
      // A payment received and settled, as a payment without a hold is.
      const entries = (reference: string, amount: number) => [
        posting('payment_received', reference, 'provider_clearing', 'pending', amount),
        posting('payment_settled', reference, 'pending', 'available', amount),
      ]
      const together = (postings: Posting[]) =>
        ctx.db.transaction().execute((trx) => ctx.services.ledger.postTogether(trx, postings))
      const money = async () => {
        const [usdt] = await ctx.services.ledger.balances(merchant.uuid, 'test')
        return [usdt?.available, usdt?.pending]
      }
      const lines = (reference: string) =>
        ctx.db
          .selectFrom('journal_entries as e')
          .innerJoin('journal_lines as l', 'l.entry_uuid', 'e.uuid')
          .select(['e.kind', 'l.account_kind', 'l.amount'])
          .where('e.reference_uuid', '=', reference)
          .orderBy('l.uuid')
          .execute()

      const first = newId()
      assert.deepEqual(await together(entries(first, 500)), [true, true])
      assert.deepEqual(await money(), [500, 0])
      assert.deepEqual(await together(entries(first, 500)), [false, false])
      assert.deepEqual(await money(), [500, 0])
      assert.deepEqual(
        (await lines(first)).map((l) => [l.kind, l.account_kind, l.amount]),
        [
          ['payment_received', 'pending', 500],
          ['payment_received', 'provider_clearing', -500],
          ['payment_settled', 'available', 500],
          ['payment_settled', 'pending', -500],
        ],
      )

      // Received alone first (a payment with a hold), then both together: only the settlement moves.
      const second = newId()
      const [received, settled] = entries(second, 70)
      await ctx.db.transaction().execute((trx) => ctx.services.ledger.post(trx, received as Posting))
      assert.deepEqual(await money(), [500, 70])
      assert.deepEqual(await together([received as Posting, settled as Posting]), [false, true])
      assert.deepEqual(await money(), [570, 0])
      assert.equal((await lines(second)).length, 4)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('every entry balances and every balance equals its journal (ledger verify)', async () => {
      const report = await ctx.services.ledger.verify()
      assert.ok(report.entries > 0, 'entries were posted')
      assert.deepEqual([report.ok, report.mismatches, report.unbalanced], [true, [], []])
      // Tampering with a kept balance is caught.
      const account = await ctx.db
        .selectFrom('ledger_accounts')
        .select(['uuid', 'balance'])
        .where('kind', '=', 'available')
        .executeTakeFirstOrThrow()
      await ctx.db
        .updateTable('ledger_accounts')
        .set({ balance: account.balance + 1 })
        .where('uuid', '=', account.uuid)
        .execute()
      const broken = await ctx.services.ledger.verify()
      assert.equal(broken.ok, false)
      assert.deepEqual(
        broken.mismatches.map((m) => m.uuid),
        [account.uuid],
      )
      await ctx.db
        .updateTable('ledger_accounts')
        .set({ balance: account.balance })
        .where('uuid', '=', account.uuid)
        .execute()
    })

    it('rates: the merchant markup applied both ways, the settlement currency left out', async () => {
      const m = await ctx.newMerchant('Markup')
      await ctx.services.merchants.updateMerchant(m.uuid, { fxMarkupBps: 150 })
      const res = await call(ctx, 'GET', '/integration/rates', undefined, { as: { merchant: m } })
      assert.equal(res.statusCode, 200, res.body)
      const body = res.json()
      assert.equal(body.settlement_currency, 'USDT')
      const rub = body.data.find((r: { currency: string }) => r.currency === 'RUB')
      // 92.15 × 1.015 = 93.53225; 92.15 × 0.985 = 90.76775
      assert.deepEqual([rub.pay_in_rate, rub.payout_rate], ['93.53225', '90.76775'])
      assert.equal(
        body.data.some((r: { currency: string }) => r.currency === 'USDT'),
        false,
      )
    })

    it('rates: a stale market rate is left out when FX_MAX_AGE applies', async () => {
      const stale = await createTestContext(ctx.backend, { fxMaxAgeSeconds: 3600 })
      try {
        await stale.db
          .updateTable('fx_rates')
          .set({ updated_at: new Date(Date.now() - 7200_000) })
          .where('currency', '=', 'KWD')
          .execute()
        const body = (await call(stale, 'GET', '/integration/rates')).json()
        const currencies = body.data.map((r: { currency: string }) => r.currency)
        assert.ok(currencies.includes('RUB'), 'fresh rates are listed')
        assert.ok(!currencies.includes('KWD'), 'the stale rate is left out')
      } finally {
        await stale.close()
      }
    })
  })
}

for (const backend of backends()) {
  describe(`ledger under concurrent payments (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('20 paid callbacks at once for a brand-new merchant: all applied, balances equal the sum, ledger verifies', async () => {
      const m = await ctx.newMerchant('Burst')
      const created = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          call(ctx, 'POST', '/integration/transactions', newTransaction({ amount: 10000 + i }), {
            as: { merchant: m },
          }),
        ),
      )
      const paid = await Promise.all(
        created.map((res) =>
          call(ctx, 'POST', `/integration/sandbox/transactions/${res.json().uuid}/paid`, undefined, {
            as: { merchant: m },
          }),
        ),
      )
      assert.deepEqual(
        paid.map((r) => r.statusCode),
        Array(20).fill(200),
      )
      const expected = paid.reduce((sum, r) => sum + r.json().settlement_amount, 0)
      const [usdt] = (
        await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant: m } })
      ).json().data
      assert.deepEqual([usdt.available, usdt.pending, usdt.total], [expected, 0, expected])
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('accounts made by a posting whose transaction rolls back are not taken as made: the next posting makes them', async () => {
      const m = await ctx.newMerchant('Rolled back')
      const posting = (uuid: string) => ({
        merchantUuid: m.uuid,
        mode: 'test' as const,
        kind: 'payment_received' as const,
        reference: { type: 'transaction' as const, uuid },
        currency: 'EUR',
        lines: [
          { account: 'provider_clearing' as const, amount: -700 },
          { account: 'pending' as const, amount: 700 },
        ],
        at: new Date(),
      })
      const accounts = () =>
        ctx.db.selectFrom('ledger_accounts').select('kind').where('merchant_uuid', '=', m.uuid).execute()
      await assert.rejects(
        ctx.db.transaction().execute(async (trx) => {
          assert.equal(await ctx.services.ledger.post(trx, posting(crypto.randomUUID())), true)
          throw new Error('rolled back')
        }),
        /rolled back/,
      )
      assert.deepEqual(await accounts(), [])
      const uuid = crypto.randomUUID()
      assert.equal(
        await ctx.db.transaction().execute((trx) => ctx.services.ledger.post(trx, posting(uuid))),
        true,
      )
      // The same cause again moves nothing; a second cause in a new transaction posts to the same accounts.
      assert.equal(
        await ctx.db.transaction().execute((trx) => ctx.services.ledger.post(trx, posting(uuid))),
        false,
      )
      assert.equal(
        await ctx.db
          .transaction()
          .execute((trx) => ctx.services.ledger.post(trx, posting(crypto.randomUUID()))),
        true,
      )
      // Every kind, made together by the first posting.
      assert.equal((await accounts()).length, 7)
      const eur = (await ctx.services.ledger.balances(m.uuid, 'test')).find((b) => b.currency === 'EUR')
      assert.equal(eur?.pending, 1400)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it("10 refunds at once, the merchant's first, and 10 more than available holds: each applied once or refused whole", async () => {
      const m = await ctx.newMerchant('Refund burst')
      // A 5 % card fee the merchant bears: a payment credits 95 % of itself, a refund debits its whole amount.
      await ctx.services.merchants.setFee(m.uuid, 'card', 500, 10_000)
      const paid = []
      for (let i = 0; i < 10; i++) {
        const created = await call(ctx, 'POST', '/integration/transactions', newTransaction(), {
          as: { merchant: m },
        })
        const res = await call(
          ctx,
          'POST',
          `/integration/sandbox/transactions/${created.json().uuid}/paid`,
          undefined,
          {
            as: { merchant: m },
          },
        )
        assert.equal(res.statusCode, 200, res.body)
        paid.push(res.json() as { uuid: string; amount: number; settlement_amount: number })
      }
      const refund = (uuid: string, amount: number, key: string) => postRefund(ctx, m, uuid, amount, key)
      const available = async () =>
        (await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant: m } })).json().data[0]
          .available as number
      const before = await available()
      // A tenth of each payment, all at once: none can be short of money.
      const first = await Promise.all(paid.map((p, i) => refund(p.uuid, p.amount / 10, `burst-a-${i}`)))
      assert.deepEqual(
        first.map((r) => r.statusCode),
        Array(10).fill(201),
        first.map((r) => r.body).join('\n'),
      )
      // What each refund debits, in the settlement currency (kept with the refund, not shown by the API).
      const debitOf = async (refunds: { json(): { uuid: string } }[]) =>
        refunds.length === 0
          ? 0
          : (
              await ctx.db
                .selectFrom('refunds')
                .select('settlement_debit')
                .where(
                  'uuid',
                  'in',
                  refunds.map((r) => r.json().uuid),
                )
                .execute()
            ).reduce((sum, row) => sum + Number(row.settlement_debit), 0)
      const debited = await debitOf(first)
      assert.ok(debited > 0)
      const left = await available()
      assert.equal(left, before - debited)
      // Then the rest of every payment at once: 90 % of the payments against the 85 % left, so some are
      // refused, whole.
      const second = await Promise.all(
        paid.map((p, i) => refund(p.uuid, (p.amount * 9) / 10, `burst-b-${i}`)),
      )
      const applied = second.filter((r) => r.statusCode === 201)
      const refused = second.filter((r) => r.statusCode !== 201)
      for (const r of refused) {
        assert.equal(r.statusCode, 422, r.body)
        assert.equal(r.json().error.code, 'insufficient_balance')
      }
      assert.ok(refused.length > 0, 'the second burst asked for more than was available')
      const spent = await debitOf(applied)
      assert.ok(spent <= left)
      assert.equal(await available(), left - spent)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })
  })
}

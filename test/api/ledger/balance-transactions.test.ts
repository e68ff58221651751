import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { SimulatorConnector } from '../../../src/connectors/simulator/index.ts'
import type { ProviderRefundResult } from '../../../src/connectors/types.ts'
import { BALANCE_TRANSACTION_TYPE_OF_KIND, type JournalEntryKind } from '../../../src/db/enums.ts'
import type { Mode } from '../../../src/db/types.ts'
import {
  backends,
  call,
  DEMO_TEST_RATES,
  extId,
  paidTransaction,
  type SandboxOutcome,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { seededRandom } from '../../helpers/random.ts'
import { assertRefusedOn, assertRefusesValues } from '../../helpers/refused-queries.ts'
import { suiteContext } from '../../helpers/suite.ts'

const PATH = 'http://gateway.test/integration/balance-transactions'
/** The sandbox provider declines payouts to this card (docs/API.md): the payout is created, then fails. */
const DECLINED_CARD = '4000000000000002'
const WALLET = { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' }

/** The sandbox provider, but it declines every refund of an amount ending in 7 (minor units). */
class DecliningProvider extends SimulatorConnector {
  override async refund(input: {
    refundUuid: string
    amountMinor: number
    currency: string
  }): Promise<ProviderRefundResult> {
    if (input.amountMinor % 10 === 7)
      return { status: 'failed', reference: null, message: 'Declined by the provider (test).' }
    return super.refund(input)
  }
}

/** A replay of a failure: BALANCE_TRANSACTIONS_SEED=<seed>. */
const SEED = Number(process.env.BALANCE_TRANSACTIONS_SEED ?? 20261114)
const OPERATIONS = 300
const WAVES = 4
/** How many operations run at once. */
const CONCURRENCY = 8

interface BalanceTransaction {
  uuid: string
  type: string
  amount: number
  currency: string
  balance: 'available' | 'pending' | 'reserved'
  source: { type: string; uuid: string }
  created_at: string
}
interface Balance {
  currency: string
  available: number
  pending: number
  reserved: number
  total: number
}
interface Page {
  data: BalanceTransaction[]
  meta: { per_page: number; next_cursor: string | null; prev_cursor: string | null; path: string }
}
type Who = { merchant: TestMerchant; mode: Mode }

for (const backend of backends()) {
  describe(`balance transactions (${backend})`, () => {
    // The sandbox provider completes a payout as soon as the payout job asks about it.
    const ctx = suiteContext(backend, {
      services: { simulator: new DecliningProvider({ payoutCompletionMs: 0 }), payouts: { completionMs: 0 } },
    })

    const list = (who: Who, query: Record<string, string> = {}) => {
      const qs = new URLSearchParams(query).toString()
      return call(ctx, 'GET', `/integration/balance-transactions${qs ? `?${qs}` : ''}`, undefined, {
        as: who,
      })
    }
    const listOk = async (who: Who, query: Record<string, string> = {}): Promise<Page> => {
      const res = await list(who, query)
      assert.equal(res.statusCode, 200, `${JSON.stringify(query)}: ${res.body}`)
      return res.json()
    }
    /** Every item the list holds, page by page (per_page 100) along next_cursor. */
    const listAll = async (who: Who, query: Record<string, string> = {}) => {
      const items: BalanceTransaction[] = []
      let cursor: string | null = null
      do {
        const page: Page = await listOk(who, { ...query, per_page: '100', ...(cursor && { cursor }) })
        items.push(...page.data)
        cursor = page.meta.next_cursor
      } while (cursor)
      return items
    }
    const balances = async (who: Who): Promise<Balance[]> => {
      const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: who })
      assert.equal(res.statusCode, 200, res.body)
      return res.json().data
    }
    const pay = (who: Who, overrides: Record<string, unknown> = {}, simulation: SandboxOutcome = 'paid') =>
      paidTransaction(ctx, overrides, who, simulation)
    const refund = (who: Who, transactionUuid: string, amountMinor?: number) =>
      call(
        ctx,
        'POST',
        '/integration/refunds',
        {
          transaction_uuid: transactionUuid,
          ...(amountMinor !== undefined && { amount_minor: amountMinor }),
        },
        { as: who, auth: 'signature', idempotencyKey: extId('rf') },
      )
    const payout = (who: Who, amount: number, destination: 'wallet' | 'declined' = 'wallet') =>
      call(
        ctx,
        'POST',
        '/integration/payouts',
        {
          external_id: extId('po'),
          amount,
          currency: 'USD',
          ...(destination === 'wallet'
            ? { method: 'usdt_wallet', destination: WALLET }
            : { method: 'card', destination: { card_number: DECLINED_CARD, holder_name: 'Jane Doe' } }),
        },
        { as: who, auth: 'signature', idempotencyKey: extId('po-key') },
      )
    /** Runs the settlement job as if every hold had ended. */
    const settleAll = async () => {
      let moved = 0
      for (;;) {
        const n = await ctx.services.transactions.settleDue(100, new Date(Date.now() + 2 * 86400_000))
        if (n === 0) return moved
        moved += n
      }
    }
    /** Per currency, the items summed into the shape of GET /integration/balances. */
    const sums = (items: BalanceTransaction[]) => {
      const out = new Map<string, { available: number; pending: number; reserved: number }>()
      for (const item of items) {
        const row = out.get(item.currency) ?? { available: 0, pending: 0, reserved: 0 }
        row[item.balance] += item.amount
        out.set(item.currency, row)
      }
      return out
    }
    /** The property: the list, summed per currency and balance, is GET /integration/balances. */
    const assertSumsToBalances = async (who: Who, where: string) => {
      const [items, shown] = [await listAll(who), await balances(who)]
      const summed = sums(items)
      for (const b of shown) {
        const s = summed.get(b.currency) ?? { available: 0, pending: 0, reserved: 0 }
        assert.deepEqual(
          { currency: b.currency, available: b.available, pending: b.pending, reserved: b.reserved },
          { currency: b.currency, ...s },
          `${where}: ${b.currency}`,
        )
        summed.delete(b.currency)
      }
      assert.deepEqual([...summed.keys()], [], `${where}: currencies the balances do not show`)
      return items
    }
    const shape = (item: BalanceTransaction) => [item.type, item.balance, item.amount, item.source.type]

    describe('one payment, its settlement, a partial refund and two payouts (the worked example of docs/API.md §23)', () => {
      let who: Who
      let tx: { uuid: string; settlement_amount: number; fee_amount: number; net_amount: number }
      let refunded: { uuid: string; settlement_debit?: number }
      let paidOut: { uuid: string; payout_usdt_amount_micro: number }
      let declined: { uuid: string; payout_usdt_amount_micro: number }
      let all: BalanceTransaction[]

      before(async () => {
        const merchant = await ctx.newMerchant('Worked example')
        // A 2.5 % card fee the merchant bears; payouts cost 1 % plus 1 USDT.
        await ctx.services.merchants.setFee(merchant.uuid, 'card', 250, 10000)
        await ctx.services.merchants.updateMerchant(merchant.uuid, {
          payoutFeeBps: 100,
          payoutFixedFeeMicro: 1_000_000,
        })
        // Live mode: paid money waits out the hold (24 h) in pending.
        who = { merchant, mode: 'live' }
      })

      it('a paid payment credits pending; nothing else moved', async () => {
        tx = await pay(who, { amount: 10000, currency: 'USD', payment_method: 'card' })
        assert.deepEqual(
          [tx.fee_amount, tx.net_amount, tx.settlement_amount],
          [250, 9750, 97_500_000],
          '100.00 USD less 2.50 fee is 97.500000 USDT',
        )
        const page = await listOk(who)
        assert.deepEqual(page.data.map(shape), [['payment', 'pending', 97_500_000, 'transaction']])
        const [item] = page.data as [BalanceTransaction]
        assert.deepEqual(item.source, { type: 'transaction', uuid: tx.uuid })
        assert.equal(item.currency, 'USDT')
        assert.equal(page.meta.path, PATH)
        assert.deepEqual([page.meta.next_cursor, page.meta.prev_cursor], [null, null])
        await assertSumsToBalances(who, 'after the payment')
      })

      it('the settlement moves it from pending to available: two movements', async () => {
        assert.equal(await settleAll(), 1)
        const page = await listOk(who)
        assert.deepEqual(page.data.map(shape), [
          ['settlement', 'pending', -97_500_000, 'transaction'],
          ['settlement', 'available', 97_500_000, 'transaction'],
          ['payment', 'pending', 97_500_000, 'transaction'],
        ])
        assert.ok(page.data.every((item) => item.source.uuid === tx.uuid))
        await assertSumsToBalances(who, 'after the settlement')
      })

      it('a partial refund debits available by its settlement debit', async () => {
        const res = await refund(who, tx.uuid, 3000)
        assert.equal(res.statusCode, 201, res.body)
        refunded = res.json()
        const page = await listOk(who, { type: 'refund' })
        assert.deepEqual(page.data.map(shape), [['refund', 'available', -30_000_000, 'refund']])
        assert.deepEqual(page.data[0]?.source, { type: 'refund', uuid: refunded.uuid })
        await assertSumsToBalances(who, 'after the refund')
      })

      it('a payout reserves its total, fee included, then pays it out of reserved', async () => {
        const res = await payout(who, 5000)
        assert.equal(res.statusCode, 201, res.body)
        paidOut = res.json()
        // 50.00 USD at 1 USDT, plus 1 % and 1 USDT of fee.
        assert.equal(paidOut.payout_usdt_amount_micro, 51_500_000)
        let page = await listOk(who, { source_uuid: paidOut.uuid })
        assert.deepEqual(page.data.map(shape), [
          ['payout_reserve', 'reserved', 51_500_000, 'payout'],
          ['payout_reserve', 'available', -51_500_000, 'payout'],
        ])
        await assertSumsToBalances(who, 'after the payout was made')
        const done = await call(
          ctx,
          'POST',
          `/integration/sandbox/payouts/${paidOut.uuid}/completed`,
          undefined,
          { as: who },
        )
        assert.equal(done.statusCode, 200, done.body)
        page = await listOk(who, { source_uuid: paidOut.uuid })
        assert.deepEqual(page.data.map(shape), [
          ['payout', 'reserved', -51_500_000, 'payout'],
          ['payout_reserve', 'reserved', 51_500_000, 'payout'],
          ['payout_reserve', 'available', -51_500_000, 'payout'],
        ])
        await assertSumsToBalances(who, 'after the payout completed')
      })

      it('a failed payout releases its reservation back to available', async () => {
        const res = await payout(who, 1000, 'declined')
        assert.equal(res.statusCode, 201, res.body)
        declined = res.json()
        assert.equal((declined as unknown as { status: string }).status, 'failed')
        assert.equal(declined.payout_usdt_amount_micro, 11_100_000)
        const page = await listOk(who, { source_uuid: declined.uuid })
        assert.deepEqual(page.data.map(shape), [
          ['payout_release', 'reserved', -11_100_000, 'payout'],
          ['payout_release', 'available', 11_100_000, 'payout'],
          ['payout_reserve', 'reserved', 11_100_000, 'payout'],
          ['payout_reserve', 'available', -11_100_000, 'payout'],
        ])
      })

      it('the whole list, newest first, sums to the balances; each item reads back by its uuid', async () => {
        all = await assertSumsToBalances(who, 'at the end')
        assert.equal(all.length, 11)
        const [usdt] = await balances(who)
        assert.deepEqual(
          [usdt?.currency, usdt?.available, usdt?.pending, usdt?.reserved, usdt?.total],
          ['USDT', 16_000_000, 0, 0, 16_000_000],
          '97.5 - 30 - 51.5 (the failed payout gave its 11.1 back)',
        )
        const times = all.map((item) => item.created_at)
        assert.deepEqual(times, [...times].sort().reverse())
        for (const item of all) {
          const res = await call(ctx, 'GET', `/integration/balance-transactions/${item.uuid}`, undefined, {
            as: who,
          })
          assert.equal(res.statusCode, 200, res.body)
          assert.deepEqual(res.json(), item)
        }
      })

      it('filters: type, currency, source_uuid and the date range, alone and combined', async () => {
        const keep = (query: Record<string, string>, wanted: (item: BalanceTransaction) => boolean) =>
          listAll(who, query).then((items) =>
            assert.deepEqual(
              items.map((i) => i.uuid),
              all.filter(wanted).map((i) => i.uuid),
              JSON.stringify(query),
            ),
          )
        await keep({ type: 'payment' }, (i) => i.type === 'payment')
        await keep({ type: 'payout,payout_release' }, (i) => ['payout', 'payout_release'].includes(i.type))
        await keep({ type: 'payout_release,payout,payout' }, (i) =>
          ['payout', 'payout_release'].includes(i.type),
        )
        await keep({ type: 'adjustment' }, () => false)
        await keep({ type: 'settlement,adjustment' }, (i) => i.type === 'settlement')
        await keep({ currency: 'USDT' }, () => true)
        await keep({ currency: 'EUR' }, () => false)
        await keep({ source_uuid: tx.uuid }, (i) => i.source.uuid === tx.uuid)
        await keep({ source_uuid: tx.uuid.toUpperCase() }, (i) => i.source.uuid === tx.uuid)
        await keep({ source_uuid: refunded.uuid }, (i) => i.source.uuid === refunded.uuid)
        await keep({ source_uuid: '01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10' }, () => false)
        // Both ends inclusive, at the millisecond a response showed.
        const middle = all[5] as BalanceTransaction
        await keep({ created_from: middle.created_at }, (i) => i.created_at >= middle.created_at)
        await keep({ created_to: middle.created_at }, (i) => i.created_at <= middle.created_at)
        await keep(
          { created_from: middle.created_at, created_to: middle.created_at },
          (i) => i.created_at === middle.created_at,
        )
        const today = middle.created_at.slice(0, 10)
        await keep({ created_from: today, created_to: today }, (i) => i.created_at.startsWith(today))
        await keep({ created_to: '2020-01-01' }, () => false)
        // Combined: every filter narrows.
        await keep(
          { type: 'settlement', source_uuid: tx.uuid, currency: 'USDT' },
          (i) => i.type === 'settlement' && i.source.uuid === tx.uuid,
        )
        await keep(
          { type: 'payout_reserve,payout', created_from: middle.created_at },
          (i) => ['payout_reserve', 'payout'].includes(i.type) && i.created_at >= middle.created_at,
        )
        await keep({ type: 'refund', source_uuid: tx.uuid }, () => false)
        await keep(
          { source_uuid: declined.uuid, type: 'payout_release', created_to: today },
          (i) => i.source.uuid === declined.uuid && i.type === 'payout_release',
        )
      })

      it('refuses filters that do not parse, and unknown parameters (422)', async () => {
        await assertRefusesValues((query) => list(who, query), {
          type: ['fee', 'payment,', ''],
          source_uuid: ['not-a-uuid'],
          currency: ['US D'],
          created_from: ['yesterday'],
          created_to: ['2026-02-30'],
          per_page: ['101'],
          status: ['paid'],
        })
        await assertRefusedOn((query) => list(who, query), 'created_from', [
          { created_from: '2026-03-02', created_to: '2026-03-01' },
        ])
      })

      it('cursors: forward through pages of 3, back with prev_cursor; a cursor under other filters is 422', async () => {
        const pages: Page[] = [await listOk(who, { per_page: '3' })]
        while (pages.at(-1)?.meta.next_cursor)
          pages.push(await listOk(who, { per_page: '3', cursor: pages.at(-1)?.meta.next_cursor as string }))
        assert.deepEqual(
          pages.map((p) => p.data.length),
          [3, 3, 3, 2],
        )
        assert.deepEqual(
          pages.flatMap((p) => p.data.map((i) => i.uuid)),
          all.map((i) => i.uuid),
        )
        assert.equal(pages[0]?.meta.prev_cursor, null)
        assert.equal(pages[3]?.meta.next_cursor, null)
        // Following next then prev returns the original page.
        for (let i = 1; i < pages.length; i++) {
          const back = await listOk(who, { per_page: '3', cursor: pages[i]?.meta.prev_cursor as string })
          assert.deepEqual(back.data, pages[i - 1]?.data)
        }
        // A cursor holds its filters: repeated, it goes on; changed or dropped, it is refused.
        const filtered = await listOk(who, { per_page: '2', type: 'payout_reserve,payout_release' })
        const cursor = filtered.meta.next_cursor as string
        const next = await listOk(who, { per_page: '2', type: 'payout_release,payout_reserve', cursor })
        assert.deepEqual(
          next.data.map((i) => i.type),
          ['payout_reserve', 'payout_reserve'],
        )
        await assertRefusedOn((query) => list(who, query), 'cursor', [
          { per_page: '2', cursor },
          { per_page: '2', type: 'payout_reserve', cursor },
          { per_page: '2', type: 'payout_reserve,payout_release', currency: 'USDT', cursor },
          { cursor: pages[1]?.meta.next_cursor as string, source_uuid: tx.uuid },
          { cursor: 'bm90IGEgY3Vyc29y' },
        ])
      })

      it("isolation: another merchant's, the other mode's and the platform's movements are never seen", async () => {
        const test = { merchant: who.merchant, mode: 'test' as const }
        assert.deepEqual((await listOk(test)).data, [])
        assert.deepEqual((await listOk({ merchant: ctx.other, mode: 'live' })).data, [])
        // The test-mode money of the same merchant stays in its own list.
        const testTx = await pay(test, { amount: 2000, currency: 'USD' })
        const testItems = await assertSumsToBalances(test, 'test mode')
        assert.deepEqual(
          testItems.map((i) => [i.type, i.balance, i.source.uuid]),
          [
            ['settlement', 'pending', testTx.uuid],
            ['settlement', 'available', testTx.uuid],
            ['payment', 'pending', testTx.uuid],
          ],
          'test mode settles at once (no hold)',
        )
        assert.equal((await listAll(who)).length, all.length)
        const get = (uuid: string, as: Who) =>
          call(ctx, 'GET', `/integration/balance-transactions/${uuid}`, undefined, { as })
        const mine = all[0] as BalanceTransaction
        for (const [uuid, as] of [
          [mine.uuid, test],
          [mine.uuid, { merchant: ctx.other, mode: 'live' as const }],
          [testItems[0]?.uuid as string, who],
          ['not-a-uuid', who],
          ['01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10', who],
        ] as const) {
          const res = await get(uuid, as)
          assert.equal(res.statusCode, 404, `${uuid}: ${res.body}`)
          assert.equal(res.json().error.code, 'not_found')
        }
        // A line of a platform account (the provider's clearing account, the payout fee account) is no
        // balance transaction, even to the merchant it was posted for.
        const platform = await ctx.db
          .selectFrom('journal_lines')
          .select(['uuid', 'account_kind'])
          .where('merchant_uuid', '=', who.merchant.uuid)
          .where('mode', '=', 'live')
          .where('account_kind', 'not in', ['available', 'pending', 'reserved'])
          .execute()
        assert.deepEqual([...new Set(platform.map((line) => line.account_kind))].sort(), [
          'payout_fees',
          'payouts_out',
          'provider_clearing',
          'refunds_out',
        ])
        for (const line of platform) assert.equal((await get(line.uuid, who)).statusCode, 404)
      })
    })

    it('a refund the provider declines: the debit, then its reversal', async () => {
      const who = { merchant: await ctx.newMerchant('Declined refund'), mode: 'test' as const }
      const tx = await pay(who, { amount: 5000, currency: 'USD' })
      const res = await refund(who, tx.uuid, 1007)
      assert.equal(res.statusCode, 201, res.body)
      const declined = res.json()
      assert.equal(declined.status, 'failed')
      const page = await listOk(who, { source_uuid: declined.uuid })
      assert.deepEqual(page.data.map(shape), [
        ['refund_reversal', 'available', 10_070_000, 'refund'],
        ['refund', 'available', -10_070_000, 'refund'],
      ])
      await assertSumsToBalances(who, 'after a declined refund')
    })

    it('a movement of a kind the API does not name shows as adjustment, and is filtered as one', async () => {
      const who = { merchant: await ctx.newMerchant('Adjusted'), mode: 'test' as const }
      const tx = await pay(who, { amount: 5000, currency: 'USD' })
      // As an operator's correction would be posted: through the ledger, with a kind of its own.
      await ctx.db.transaction().execute((trx) =>
        ctx.services.ledger.post(trx, {
          merchantUuid: who.merchant.uuid,
          mode: 'test',
          kind: 'manual_correction' as JournalEntryKind,
          reference: { type: 'transaction', uuid: tx.uuid },
          currency: 'USDT',
          lines: [
            { account: 'available', amount: -1_250_000 },
            { account: 'provider_clearing', amount: 1_250_000 },
          ],
          at: new Date(),
        }),
      )
      const all = await assertSumsToBalances(who, 'after an adjustment')
      assert.deepEqual(all.map(shape), [
        ['adjustment', 'available', -1_250_000, 'transaction'],
        ['settlement', 'pending', -50_000_000, 'transaction'],
        ['settlement', 'available', 50_000_000, 'transaction'],
        ['payment', 'pending', 50_000_000, 'transaction'],
      ])
      assert.deepEqual(
        (await listAll(who, { type: 'adjustment' })).map((i) => i.uuid),
        [all[0]?.uuid],
      )
      assert.deepEqual(
        (await listAll(who, { type: 'payment,adjustment' })).map((i) => i.type),
        ['adjustment', 'payment'],
      )
      assert.deepEqual(
        (await listAll(who, { type: 'settlement' })).map((i) => i.type),
        ['settlement', 'settlement'],
      )
    })

    it('a movement posted as the previous version posted it (a rolling upgrade) is listed with its key and time', async () => {
      const who = { merchant: await ctx.newMerchant('Upgrade'), mode: 'test' as const }
      await pay(who, { amount: 1000, currency: 'USD' })
      const accounts = Object.fromEntries(
        (
          await ctx.db
            .selectFrom('ledger_accounts')
            .select(['kind', 'uuid'])
            .where('merchant_uuid', '=', who.merchant.uuid)
            .where('mode', '=', 'test')
            .execute()
        ).map((a) => [a.kind, a.uuid]),
      )
      // What postJournalEntry wrote before migration 0008: the entry, the balances, and lines of four columns.
      const entry = globalThis.crypto.randomUUID()
      const source = globalThis.crypto.randomUUID()
      const at = '2026-01-02T03:04:05.678Z'
      await ctx.db.transaction().execute(async (trx) => {
        await sql`INSERT INTO journal_entries (uuid, merchant_uuid, mode, kind, reference_type, reference_uuid, created_at)
          VALUES (${entry}, ${who.merchant.uuid}, 'test', 'payment_received', 'transaction', ${source}, ${at})`.execute(
          trx,
        )
        await sql`UPDATE ledger_accounts SET balance = balance + 700000 WHERE uuid = ${accounts.pending}`.execute(
          trx,
        )
        await sql`UPDATE ledger_accounts SET balance = balance - 700000 WHERE uuid = ${accounts.provider_clearing}`.execute(
          trx,
        )
        await sql`INSERT INTO journal_lines (uuid, entry_uuid, account_uuid, amount) VALUES
          (${globalThis.crypto.randomUUID()}, ${entry}, ${accounts.pending}, 700000),
          (${globalThis.crypto.randomUUID()}, ${entry}, ${accounts.provider_clearing}, -700000)`.execute(trx)
      })
      const listed = await listAll(who, { source_uuid: source })
      assert.deepEqual(
        listed.map((i) => [i.type, i.balance, i.amount, i.currency, i.created_at]),
        [['payment', 'pending', 700000, 'USDT', at]],
      )
      await assertSumsToBalances(who, 'after a posting of the previous version')
    })

    /**
     * The property of docs/API.md §23 under load: 300 operations of a seeded plan (payments in every currency,
     * paid, failed or late; refunds, full and partial, some declined; payouts, completed, failed or declined;
     * the settlement and payout jobs; replays), run CONCURRENCY at a time in WAVES waves. Between waves, and at
     * the end, every merchant's list summed per currency and balance is exactly GET /integration/balances.
     * Merchants: one settling in USDT with fees, one in EUR, and one whose settlement currency changes every
     * wave (so one list holds several currencies).
     */
    it(`sums to the balances under ${OPERATIONS} concurrent operations (seed ${SEED})`, {
      timeout: 240_000,
    }, async (t) => {
      const started = Date.now()
      const random = seededRandom(SEED)
      const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1))
      const chance = (p: number) => random() < p
      const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T

      const fees = await ctx.newMerchant('Fees')
      await ctx.services.merchants.setFee(fees.uuid, 'card', 250, 10000)
      await ctx.services.merchants.setFee(fees.uuid, 'bank_transfer', 300, 5000)
      await ctx.services.merchants.updateMerchant(fees.uuid, {
        payoutFeeBps: 150,
        payoutFixedFeeMicro: 1_000_000,
      })
      const euro = await ctx.services.merchants.createMerchant({ name: 'Euro', settlementCurrency: 'EUR' })
      ctx.secrets.push(euro.keys.test.secret, euro.keys.live.secret)
      const shifting = await ctx.newMerchant('Shifting')
      const merchants: TestMerchant[] = [fees, { uuid: euro.merchant.uuid, keys: euro.keys }, shifting]
      const settlementOf = ['USDT', 'KWD', 'JPY', 'USDT']
      const scopes: Who[] = merchants.flatMap((merchant) =>
        (['test', 'live'] as const).map((mode) => ({ merchant, mode })),
      )

      interface Sent {
        who: Who
        url: string
        body: unknown
        key: string
        status: number
      }
      interface Paid {
        who: Who
        tx: { uuid: string; amount: number; status: string }
      }
      interface Made {
        who: Who
        payout: { uuid: string }
      }
      const counts: Record<string, number> = {}
      const count = (name: string) => {
        counts[name] = (counts[name] ?? 0) + 1
      }
      /** What earlier operations of the plan made, as promises: a later one waits for the one it acts on. */
      const payments: Promise<Paid | null>[] = []
      const payouts: Promise<Made | null>[] = []
      const posts: Promise<Sent | null>[] = []
      const later = <T>(list: Promise<T>[]) => {
        let resolve: (value: T) => void = () => {}
        list.push(new Promise<T>((r) => (resolve = r)))
        return resolve
      }
      const expectStatus = (res: { statusCode: number; body: string }, allowed: string[], what: string) => {
        const code =
          res.statusCode >= 400 ? `${res.statusCode} ${JSON.parse(res.body).error.code}` : `${res.statusCode}`
        assert.ok(allowed.includes(code), `${what}: ${res.statusCode} ${res.body}`)
        count(`${what}: ${code}`)
      }
      const signed = async (who: Who, url: string, body: unknown) => {
        const key = extId('walk')
        const res = await call(ctx, 'POST', url, body, { as: who, auth: 'signature', idempotencyKey: key })
        return { res, sent: { who, url, body, key, status: res.statusCode } }
      }

      /** One operation of the plan: its choices are drawn now (seeded), its requests run later, concurrently. */
      function planOne(): () => Promise<unknown> {
        const r = random()
        if (r < 0.36 || payments.length === 0) {
          const who = pick(scopes)
          const currency = pick([...Object.keys(DEMO_TEST_RATES), 'USDT'])
          const exponent = { USD: 2, EUR: 2, RUB: 2, JPY: 0, KWD: 3, USDT: 6 }[currency] as number
          const amount = Math.max(
            1,
            Math.round(int(5, 400) * Number(DEMO_TEST_RATES[currency] ?? '1') * 10 ** exponent),
          )
          const method = pick(['card', 'p2p_card', 'bank_transfer'])
          const s = random()
          const simulation = s < 0.7 ? 'paid' : s < 0.8 ? 'failed-then-paid' : s < 0.9 ? 'failed' : 'expired'
          const done = later(payments)
          return async () => {
            try {
              const tx = await pay(who, { amount, currency, payment_method: method }, simulation)
              count(`payment ${simulation}`)
              done({ who, tx })
            } catch (error) {
              done(null)
              throw error
            }
          }
        }
        if (r < 0.56) {
          const target = payments[int(0, payments.length - 1)] as Promise<Paid | null>
          const whole = chance(0.35)
          const share = random()
          // An amount ending in 7 is declined by the provider: its debit comes back.
          const declined = chance(0.2)
          const done = later(posts)
          return async () => {
            const paid = await target
            if (!paid) return done(null)
            const part = Math.max(1, Math.floor(paid.tx.amount * share * 0.6))
            const body = {
              transaction_uuid: paid.tx.uuid,
              ...(!whole && { amount_minor: declined ? part - (part % 10) + 7 : part }),
            }
            const { res, sent } = await signed(paid.who, '/integration/refunds', body)
            done(sent)
            expectStatus(
              res,
              ['201', '409 invalid_state', '422 refund_exceeds_amount', '422 insufficient_balance'],
              'refund',
            )
            if (res.statusCode === 201) count(`refund ${res.json().status}`)
          }
        }
        if (r < 0.72) {
          const who = pick(scopes)
          const usdt = int(1, 120)
          const declined = chance(0.15)
          const wallet = chance(0.6)
          const made = later(payouts)
          const done = later(posts)
          return async () => {
            const body = {
              external_id: extId('walk-po'),
              amount: usdt * 100,
              currency: 'USD',
              ...(wallet && !declined
                ? { method: 'usdt_wallet', destination: WALLET }
                : {
                    method: 'card',
                    destination: {
                      card_number: declined ? DECLINED_CARD : '4111111111111111',
                      holder_name: 'Jane Doe',
                    },
                  }),
            }
            const { res, sent } = await signed(who, '/integration/payouts', body)
            made(res.statusCode === 201 ? { who, payout: res.json() } : null)
            done(sent)
            expectStatus(res, ['201', '422 insufficient_balance'], 'payout')
          }
        }
        if (r < 0.84 && payouts.length) {
          const target = payouts[int(0, payouts.length - 1)] as Promise<Made | null>
          const outcome = chance(0.5) ? 'completed' : 'failed'
          return async () => {
            const made = await target
            if (!made) return count('sandbox payout: no payout was made')
            const res = await call(
              ctx,
              'POST',
              `/integration/sandbox/payouts/${made.payout.uuid}/${outcome}`,
              undefined,
              { as: made.who },
            )
            expectStatus(res, ['200'], `sandbox payout ${outcome}`)
          }
        }
        if (r < 0.9)
          return async () => {
            count('settlement job')
            await settleAll()
          }
        if (r < 0.94)
          return async () => {
            count('payout job')
            await ctx.services.payouts.checkDue(1000, new Date(Date.now() + 3600_000))
          }
        if (posts.length) {
          const target = posts[int(0, posts.length - 1)] as Promise<Sent | null>
          return async () => {
            const sent = await target
            if (!sent) return count('replay: nothing was sent')
            const res = await call(ctx, 'POST', sent.url, sent.body, {
              as: sent.who,
              auth: 'signature',
              idempotencyKey: sent.key,
            })
            assert.equal(res.statusCode, sent.status, res.body)
            assert.equal(res.headers['idempotent-replayed'], 'true')
            count('replay')
          }
        }
        return async () => count('nothing')
      }

      const checkAll = async (where: string) => {
        const seen: BalanceTransaction[] = []
        for (const who of scopes)
          seen.push(...(await assertSumsToBalances(who, `${where}, ${who.merchant.uuid} ${who.mode}`)))
        return seen
      }

      let seen: BalanceTransaction[] = []
      for (let wave = 0; wave < WAVES; wave++) {
        // Between waves the shifting merchant settles in another currency (as if the operator changed it).
        await ctx.db
          .updateTable('merchants')
          .set({ settlement_currency: settlementOf[wave] as string })
          .where('uuid', '=', shifting.uuid)
          .execute()
        await ctx.services.merchants.updateMerchant(shifting.uuid, {})
        const plan = Array.from({ length: OPERATIONS / WAVES }, planOne)
        let next = 0
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async () => {
            while (next < plan.length) await (plan[next++] as () => Promise<unknown>)()
          }),
        )
        seen = await checkAll(`after wave ${wave + 1}`)
      }

      // The plan reached every kind of movement the ledger posts, and a list of several currencies.
      const types = new Set(seen.map((item) => item.type))
      for (const type of Object.values(BALANCE_TRANSACTION_TYPE_OF_KIND))
        assert.ok(types.has(type), `no ${type} among ${[...types]}`)
      const currencies = new Set(seen.map((item) => item.currency))
      assert.ok(currencies.size >= 4, `currencies: ${[...currencies]}`)
      // Every payment that was paid is credited once, and only those.
      const paid = (await Promise.all(payments)).filter((p): p is Paid => p?.tx.status === 'paid')
      for (const who of scopes) {
        const credited = (await listAll(who, { type: 'payment' })).map((item) => item.source.uuid).sort()
        assert.deepEqual(
          credited,
          paid
            .filter((p) => p.who === who)
            .map((p) => p.tx.uuid)
            .sort(),
        )
      }
      const report = await ctx.services.ledger.verify()
      assert.deepEqual([report.ok, report.mismatches, report.unbalanced], [true, [], []])
      t.diagnostic(
        `seed ${SEED}, ${backend}: ${OPERATIONS} operations in ${Date.now() - started} ms, ${seen.length} balance transactions`,
      )
      for (const [name, n] of Object.entries(counts).sort()) t.diagnostic(`  ${name}: ${n}`)
    })
  })
}

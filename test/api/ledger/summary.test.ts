import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { before, describe, it } from 'node:test'
import type { JournalEntryKind } from '../../../src/db/enums.ts'
import type { AccountKind, Mode } from '../../../src/db/types.ts'
import { allPages, getCsv } from '../../helpers/csv.ts'
import { backends, call, paidTransaction, type TestMerchant } from '../../helpers/harness.ts'
import { newPayout } from '../../helpers/payouts.ts'
import { seededRandom } from '../../helpers/random.ts'
import { suiteContext } from '../../helpers/suite.ts'

/**
 * The balance summary (docs/API.md, Balance summary) against the balance transactions it sums: for random
 * periods over random movements, every figure is the sum the list gives, the closing balance is the opening one
 * plus the period's movements, and the CSV export reads back to the same figures. Replay a failure with the
 * printed seed: SUMMARY_SEED=<seed>.
 */
const SEED = Number(process.env.SUMMARY_SEED ?? 20261207)
const POSTINGS = 80
const PERIODS = 25

interface Line {
  type: string
  amount: number
  currency: string
  created_at: string
  source: { type: string; uuid: string }
}

interface SummaryRow {
  currency: string
  opening_balance: number
  payments: number
  fees: number
  refunds: number
  payouts: number
  transfers: number
  adjustments: number
  closing_balance: number
  balance_transactions: number
}

const FIGURES = [
  'opening_balance',
  'payments',
  'fees',
  'refunds',
  'payouts',
  'transfers',
  'adjustments',
  'closing_balance',
  'balance_transactions',
] as const

/** What each type of balance transaction counts as in the summary, written out from docs/API.md. */
const FIGURE_OF_TYPE: Record<string, (typeof FIGURES)[number]> = {
  payment: 'payments',
  refund: 'refunds',
  refund_reversal: 'refunds',
  payout: 'payouts',
  settlement: 'transfers',
  payout_reserve: 'transfers',
  payout_release: 'transfers',
  adjustment: 'adjustments',
}

/** The summary a period should have, from the balance transactions and each payout's fee. */
function expectedSummary(lines: Line[], fees: Map<string, number>, from: string | null, to: string) {
  const rows = new Map<string, SummaryRow>()
  for (const line of lines) {
    if (line.created_at > to) continue
    let row = rows.get(line.currency)
    if (!row) {
      row = { currency: line.currency, ...Object.fromEntries(FIGURES.map((f) => [f, 0])) } as SummaryRow
      rows.set(line.currency, row)
    }
    row.closing_balance += line.amount
    if (from !== null && line.created_at < from) {
      row.opening_balance += line.amount
      continue
    }
    row.balance_transactions++
    const figure = FIGURE_OF_TYPE[line.type]
    assert.ok(figure, line.type)
    row[figure] += line.amount
    if (line.type === 'payout') {
      const fee = fees.get(line.source.uuid)
      assert.ok(fee !== undefined, `the fee of payout ${line.source.uuid}`)
      row.fees -= fee
      row.payouts += fee
    }
  }
  return rows
}

for (const backend of backends()) {
  describe(`the balance summary over random movements (${backend})`, () => {
    const ctx = suiteContext(backend)
    let m: TestMerchant
    let lines: Line[] = []
    const fees = new Map<string, number>()
    const random = seededRandom(SEED)
    const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1))
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T

    /** A journal entry as the ledger posts it, at `at`: its lines on the merchant's accounts in `currency`. */
    const post = (
      merchant: TestMerchant,
      mode: Mode,
      kind: string,
      currency: string,
      lineList: { account: AccountKind; amount: number }[],
      at: Date,
      reference = randomUUID(),
    ) =>
      ctx.db.transaction().execute((trx) =>
        ctx.services.ledger.post(trx, {
          merchantUuid: merchant.uuid,
          mode,
          kind: kind as JournalEntryKind,
          reference: {
            type: kind.startsWith('payout') ? 'payout' : kind.startsWith('refund') ? 'refund' : 'transaction',
            uuid: reference,
          },
          currency,
          lines: lineList,
          at,
        }),
      )

    /** A random movement of each kind the ledger knows, and one it does not (an adjustment). */
    const randomPosting = async (merchant: TestMerchant, mode: Mode, at: Date) => {
      const currency = pick(['USDT', 'EUR', 'JPY'])
      const x = int(1, 5_000_000)
      const fee = int(0, 50_000)
      const kind = pick([
        'payment_received',
        'payment_settled',
        'refund_debited',
        'refund_reversed',
        'payout_reserved',
        'payout_completed',
        'payout_released',
        'manual_adjustment',
      ])
      const reference = randomUUID()
      const lineList = {
        payment_received: [
          { account: 'provider_clearing' as const, amount: -x },
          { account: 'pending' as const, amount: x },
        ],
        payment_settled: [
          { account: 'pending' as const, amount: -x },
          { account: 'available' as const, amount: x },
        ],
        refund_debited: [
          { account: 'available' as const, amount: -x },
          { account: 'refunds_out' as const, amount: x },
        ],
        refund_reversed: [
          { account: 'refunds_out' as const, amount: -x },
          { account: 'available' as const, amount: x },
        ],
        payout_reserved: [
          { account: 'available' as const, amount: -(x + fee) },
          { account: 'reserved' as const, amount: x + fee },
        ],
        // As a completed payout posts: the total leaves, the amount to the beneficiary and the fee to the gateway.
        payout_completed: [
          { account: 'reserved' as const, amount: -(x + fee) },
          { account: 'payouts_out' as const, amount: x },
          { account: 'payout_fees' as const, amount: fee },
        ],
        payout_released: [
          { account: 'reserved' as const, amount: -(x + fee) },
          { account: 'available' as const, amount: x + fee },
        ],
        manual_adjustment: [
          { account: 'provider_clearing' as const, amount: -x },
          { account: 'available' as const, amount: x },
        ],
      }[kind]
      assert.ok(lineList)
      if (kind === 'payout_completed') fees.set(reference, fee)
      await post(merchant, mode, kind, currency, lineList, at, reference)
    }

    /** A random moment of the first half of 2026, to the millisecond. */
    const randomTime = () => new Date(Date.UTC(2026, 0, 1) + int(0, 180 * 86_400_000))

    before(async () => {
      m = await ctx.newMerchant('Summarised')
      await ctx.services.merchants.updateMerchant(m.uuid, {
        payoutFeeBps: 150,
        payoutFixedFeeMicro: 1_000_000,
      })
      // Movements made through the API, now: payments, a refund, a completed payout and a failed one.
      const paid = await paidTransaction(ctx, { amount: 2_000_000, currency: 'USD' }, { merchant: m })
      await paidTransaction(ctx, { amount: 750_000, currency: 'RUB' }, { merchant: m })
      const refunded = await call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: paid.uuid, amount_minor: 12_345 },
        {
          as: { merchant: m },
          auth: 'signature',
          idempotencyKey: randomUUID(),
        },
      )
      assert.equal(refunded.statusCode, 201, refunded.body)
      for (const outcome of ['completed', 'failed'] as const) {
        const payout = await call(
          ctx,
          'POST',
          '/integration/payouts',
          newPayout({ amount: 1000 + int(0, 999) }),
          {
            as: { merchant: m },
            auth: 'signature',
            idempotencyKey: randomUUID(),
          },
        )
        assert.equal(payout.statusCode, 201, payout.body)
        fees.set(payout.json().uuid, Number(payout.json().fx.fee_usdt_micro))
        const done = await call(
          ctx,
          'POST',
          `/integration/sandbox/payouts/${payout.json().uuid}/${outcome}`,
          undefined,
          {
            as: { merchant: m },
          },
        )
        assert.equal(done.statusCode, 200, done.body)
      }
      // Movements at random moments of the past, in three currencies.
      for (let i = 0; i < POSTINGS; i++) await randomPosting(m, 'test', randomTime())
      // Never counted: the merchant's live mode, and another merchant.
      for (let i = 0; i < 10; i++) {
        await randomPosting(m, 'live', randomTime())
        await randomPosting(ctx.other, 'test', randomTime())
      }
      lines = await allPages<Line>(ctx, '/integration/balance-transactions', { as: { merchant: m } })
      assert.ok(lines.length > POSTINGS)
    })

    const summaryOf = async (query: string) => {
      const res = await call(ctx, 'GET', `/integration/balances/summary${query}`, undefined, {
        as: { merchant: m },
      })
      assert.equal(res.statusCode, 200, res.body)
      return res.json<{ from: string | null; to: string; data: SummaryRow[] }>()
    }

    it(`seed ${SEED}: every figure is the sum of the period's balance transactions; the CSV reads back the same`, async () => {
      const times = [...new Set(lines.map((line) => line.created_at))].sort()
      const moment = () =>
        pick([
          // A line's own moment (the bounds are inclusive), a random one, or a bare date.
          () => pick(times),
          () => randomTime().toISOString(),
          () => randomTime().toISOString().slice(0, 10),
        ])()
      for (let i = 0; i < PERIODS; i++) {
        // In order but now and then, which must be refused.
        const ends = [moment(), moment()].sort()
        if (i % 6 === 3) ends.reverse()
        const start = i % 5 === 0 ? undefined : ends[0]
        const end = i % 7 === 0 ? undefined : ends[1]
        const query = new URLSearchParams({ ...(start && { from: start }), ...(end && { to: end }) })
        const res = await call(ctx, 'GET', `/integration/balances/summary?${query}`, undefined, {
          as: { merchant: m },
        })
        const startAt = start && (start.length === 10 ? `${start}T00:00:00.000Z` : start)
        const endAt = end && (end.length === 10 ? `${end}T23:59:59.999Z` : end)
        if (startAt && endAt && startAt > endAt) {
          assert.equal(res.statusCode, 422, res.body)
          assert.equal(res.json().error.code, 'validation_failed')
          continue
        }
        assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
        const summary = res.json<{ from: string | null; to: string; data: SummaryRow[] }>()
        assert.equal(summary.from, startAt ?? null)
        if (endAt) assert.equal(summary.to, endAt)
        const expected = expectedSummary(lines, fees, summary.from, summary.to)
        if (!expected.has('USDT'))
          expected.set('USDT', {
            currency: 'USDT',
            ...Object.fromEntries(FIGURES.map((f) => [f, 0])),
          } as SummaryRow)
        assert.deepEqual(
          summary.data,
          [...expected.values()].sort((a, b) => a.currency.localeCompare(b.currency)),
          `period ${query}`,
        )
        for (const row of summary.data)
          assert.equal(
            row.closing_balance,
            row.opening_balance +
              row.payments +
              row.fees +
              row.refunds +
              row.payouts +
              row.transfers +
              row.adjustments,
          )
        const csv = await getCsv(ctx, `/integration/balances/summary?${query}`, { as: { merchant: m } })
        assert.equal(
          csv.header.join(','),
          'currency,from,to,opening_balance,payments,fees,refunds,payouts,transfers,adjustments,closing_balance,balance_transactions',
        )
        assert.deepEqual(
          csv.objects.map((row) => ({
            currency: row.currency,
            ...Object.fromEntries(FIGURES.map((figure) => [figure, Number(row[figure])])),
          })),
          summary.data,
        )
        for (const row of csv.objects) {
          assert.equal(row.from, summary.from ?? '')
          // Without `to`, each answer ends at its own now.
          if (endAt) assert.equal(row.to, summary.to)
          for (const figure of FIGURES) assert.match(row[figure] ?? '', /^-?\d+$/)
        }
      }
    })

    it('closes on the balances GET /integration/balances shows', async () => {
      const { data } = await summaryOf('')
      const balances = (
        await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant: m } })
      ).json().data as { currency: string; total: number }[]
      assert.deepEqual(
        data.map((row) => [row.currency, row.closing_balance]),
        balances.map((b) => [b.currency, b.total]).sort(([a], [b]) => String(a).localeCompare(String(b))),
      )
    })

    it('refuses a period that does not parse or runs backwards, with the error envelope', async () => {
      for (const query of [
        '?from=2026-02-30',
        '?to=soon',
        '?from=2026-03-02&to=2026-03-01',
        '?since=2026-01-01',
      ]) {
        const res = await call(ctx, 'GET', `/integration/balances/summary${query}`, undefined, {
          as: { merchant: m },
        })
        assert.equal(res.statusCode, 422, `${query}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
      }
    })
  })
}

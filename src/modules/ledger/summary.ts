import { sql } from 'kysely'
import type { JournalEntryKind } from '../../db/enums.ts'
import type { Executor } from '../../db/index.ts'
import type { Merchant, Mode } from '../../db/types.ts'
import { fieldColumns } from '../../http/csv.ts'
import { parseDateRange } from '../../http/date-filter.ts'
import { iso } from '../../lib/time.ts'
import type { BalanceSummaryInput, BalanceSummaryRowView } from './schemas.ts'

/** The merchant's own balances: the lines a balance transaction is. */
const MERCHANT_BALANCES = sql`('available', 'pending', 'reserved')`

const kinds = (...names: JournalEntryKind[]) => sql.join(names.map((name) => sql.lit(name)))

/** The kinds that move money between the merchant's own balances: they sum to zero on the total. */
const TRANSFER_KINDS: JournalEntryKind[] = ['payment_settled', 'payout_reserved', 'payout_released']
const KNOWN_KINDS: JournalEntryKind[] = [
  'payment_received',
  'refund_debited',
  'refund_reversed',
  'payout_completed',
  ...TRANSFER_KINDS,
]

/**
 * Per currency, the merchant's balance transactions of the mode up to `to`, summed: before `from` (the opening
 * balance), and within the period by what they are; with the payout fees the period's completed payouts took
 * (the `payout_fees` lines of their entries), which the payout lines include. One statement over the lines of
 * the merchant and mode up to `to`, grouped by currency.
 */
async function summedLines(db: Executor, merchantUuid: string, mode: Mode, from: Date | undefined, to: Date) {
  const before = from ? sql`l.created_at < ${from}` : sql`false`
  const within = from ? sql`l.created_at >= ${from}` : sql`true`
  const mine = sql`l.account_kind IN ${MERCHANT_BALANCES}`
  const sumOf = (condition: ReturnType<typeof sql>) =>
    sql<string>`coalesce(sum(CASE WHEN ${condition} THEN l.amount END), 0)`
  const period = (condition: ReturnType<typeof sql>) => sumOf(sql`${mine} AND ${within} AND ${condition}`)
  const { rows } = await sql<{
    currency: string
    opening: string
    payments: string
    refunds: string
    payout_lines: string
    fee_lines: string
    transfers: string
    adjustments: string
    count: string
  }>`
    SELECT l.currency,
      ${sumOf(sql`${mine} AND ${before}`)} AS opening,
      ${period(sql`e.kind = 'payment_received'`)} AS payments,
      ${period(sql`e.kind IN (${kinds('refund_debited', 'refund_reversed')})`)} AS refunds,
      ${period(sql`e.kind = 'payout_completed'`)} AS payout_lines,
      ${sumOf(sql`l.account_kind = 'payout_fees' AND e.kind = 'payout_completed' AND ${within}`)} AS fee_lines,
      ${period(sql`e.kind IN (${kinds(...TRANSFER_KINDS)})`)} AS transfers,
      ${period(sql`e.kind NOT IN (${kinds(...KNOWN_KINDS)})`)} AS adjustments,
      count(CASE WHEN ${mine} AND ${within} THEN 1 END) AS count
    FROM journal_lines l
    JOIN journal_entries e ON e.uuid = l.entry_uuid
    WHERE l.merchant_uuid = ${merchantUuid} AND l.mode = ${mode}
      AND (l.account_kind IN ${MERCHANT_BALANCES} OR l.account_kind = 'payout_fees')
      AND l.created_at <= ${to}
    GROUP BY l.currency
    ORDER BY l.currency`.execute(db)
  return rows
}

/**
 * The merchant's balances over a period, per currency (docs/API.md, Balance summary): the opening balance, what
 * moved it by kind, and the closing balance, which is always the opening balance plus the period's balance
 * transactions. Every figure is a sum of integers in minor units, exact.
 */
export async function balanceSummary(
  db: Executor,
  merchant: Merchant,
  mode: Mode,
  query: BalanceSummaryInput,
) {
  const range = parseDateRange('from', query.from, 'to', query.to)
  const to = range.to ?? new Date()
  const rows = await summedLines(db, merchant.uuid, mode, range.from, to)
  const data: BalanceSummaryRowView[] = rows.map((row) => {
    const opening = Number(row.opening)
    const fees = Number(row.fee_lines)
    const figures = {
      payments: Number(row.payments),
      // The payout line takes the amount and its fee together; the fee is shown on its own.
      fees: -fees,
      refunds: Number(row.refunds),
      payouts: Number(row.payout_lines) + fees,
      transfers: Number(row.transfers),
      adjustments: Number(row.adjustments),
    }
    const moved = Object.values(figures).reduce((sum, value) => sum + value, 0)
    return {
      currency: row.currency,
      opening_balance: opening,
      ...figures,
      closing_balance: opening + moved,
      balance_transactions: Number(row.count),
    }
  })
  if (!data.some((row) => row.currency === merchant.settlement_currency))
    data.push({
      currency: merchant.settlement_currency,
      opening_balance: 0,
      payments: 0,
      fees: 0,
      refunds: 0,
      payouts: 0,
      transfers: 0,
      adjustments: 0,
      closing_balance: 0,
      balance_transactions: 0,
    })
  data.sort((a, b) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0))
  return { from: iso(range.from ?? null), to: iso(to), data }
}

export type BalanceSummary = Awaited<ReturnType<typeof balanceSummary>>

/** A row of the summary's CSV export: the period beside each currency's figures. */
export type BalanceSummaryCsvRow = BalanceSummaryRowView & { from: string | null; to: string }

/** The columns of the summary's CSV export, in their documented order. */
export const BALANCE_SUMMARY_CSV_COLUMNS = fieldColumns<BalanceSummaryCsvRow>([
  'currency',
  'from',
  'to',
  'opening_balance',
  'payments',
  'fees',
  'refunds',
  'payouts',
  'transfers',
  'adjustments',
  'closing_balance',
  'balance_transactions',
])

/** The summary as the rows of its CSV export. */
export const summaryCsvRows = (summary: BalanceSummary): BalanceSummaryCsvRow[] =>
  summary.data.map((row) => ({ ...row, from: summary.from, to: summary.to }))

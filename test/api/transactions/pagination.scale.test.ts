import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { TRANSACTION_STATUSES } from '../../../src/db/enums.ts'
import type { NewTransaction } from '../../../src/db/types.ts'
import { backends, call, transactionRow } from '../../helpers/harness.ts'
import { seededRandom } from '../../helpers/random.ts'
import { suiteContext } from '../../helpers/suite.ts'

const TOTAL = 10_000
const PER_PAGE = 100
const BASE = Date.parse('2026-02-01T00:00:00.000Z')
/** Every status, paid three times as often as the others. */
const STATUSES = TRANSACTION_STATUSES.flatMap((status) =>
  status === 'paid' ? [status, status, status] : [status],
)
const METHODS = ['card', 'card', 'p2p_card', 'bank_transfer'] as const
const CURRENCIES = ['RUB', 'USD', 'EUR', 'JPY', 'KWD']

/** Newest first: created_at desc, then uuid desc (PostgreSQL orders uuids as their lower-case hex text). */
const newestFirst = (a: NewTransaction, b: NewTransaction) => {
  const byTime = new Date(b.created_at).getTime() - new Date(a.created_at).getTime()
  if (byTime !== 0) return byTime
  return a.uuid < b.uuid ? 1 : a.uuid > b.uuid ? -1 : 0
}

interface Page {
  data: { uuid: string; created_at: string }[]
  meta: { per_page: number; next_cursor: string | null; prev_cursor: string | null; path: string }
}

for (const backend of backends()) {
  describe(`transaction list at scale: ${TOTAL} rows (${backend})`, () => {
    const ctx = suiteContext(backend)
    let rows: NewTransaction[]
    before(async () => {
      const random = seededRandom(20260201)
      const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]
      const seenUuids = new Set<string>()
      const uuid = () => {
        for (;;) {
          const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('')
          const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
          if (!seenUuids.has(id)) {
            seenUuids.add(id)
            return id
          }
        }
      }
      // ~1,500 distinct milliseconds for 10,000 rows, plus one millisecond holding 350 rows: page boundaries
      // fall inside runs of equal created_at, where only the uuid orders the rows.
      const createdAt = (i: number) =>
        i % 29 === 0 ? new Date(BASE + 777_777) : new Date(BASE + Math.floor(random() * 1500) * 1000 + 123)
      const row = (merchantUuid: string, i: number, overrides: Partial<NewTransaction> = {}) =>
        transactionRow(merchantUuid, {
          uuid: uuid(),
          created_at: createdAt(i),
          status: pick(STATUSES),
          payment_method: pick(METHODS),
          currency: pick(CURRENCIES),
          external_id: `${i % 13 === 0 ? 'GIFT' : 'ord'}-${i}`,
          description: i % 7 === 0 ? `Gift card no. ${i}` : i % 11 === 0 ? null : `Order ${i}`,
          ...overrides,
        })
      rows = Array.from({ length: TOTAL }, (_, i) => row(ctx.merchant.uuid, i))
      // Rows that must never appear: another merchant's, and this merchant's live mode, interleaved in time.
      const noise = [
        ...Array.from({ length: 300 }, (_, i) => row(ctx.other.uuid, i)),
        ...Array.from({ length: 300 }, (_, i) => row(ctx.merchant.uuid, i, { mode: 'live' })),
      ]
      const all = [...rows, ...noise]
      // Shuffle so insertion order says nothing about the expected order.
      for (let i = all.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1))
        ;[all[i], all[j]] = [all[j] as NewTransaction, all[i] as NewTransaction]
      }
      for (let i = 0; i < all.length; i += 500) {
        await ctx.db
          .insertInto('transactions')
          .values(all.slice(i, i + 500))
          .execute()
      }
    })

    async function page(query: Record<string, string>): Promise<Page> {
      const res = await call(ctx, 'GET', `/integration/transactions?${new URLSearchParams(query)}`)
      assert.equal(res.statusCode, 200, res.body)
      return res.json()
    }

    /**
     * Walks forward with next_cursor to the end, then back with prev_cursor to the start, and checks both
     * walks against the expected list: every row once, strictly newest first, the same pages both ways.
     */
    async function walkBothWays(filters: Record<string, string>, keep: (row: NewTransaction) => boolean) {
      const expected = rows
        .filter(keep)
        .sort(newestFirst)
        .map((r) => r.uuid)
      assert.ok(
        expected.length > 3 * PER_PAGE,
        `the filter leaves too few rows (${expected.length}) to page through`,
      )

      const query = { ...filters, per_page: String(PER_PAGE) }
      let last = await page(query)
      assert.equal(last.meta.prev_cursor, null)
      const forward: Page[] = [last]
      for (;;) {
        assert.equal(last.meta.per_page, PER_PAGE)
        if (last.meta.next_cursor === null) break
        assert.equal(last.data.length, PER_PAGE, 'only the last page may be short')
        assert.ok(forward.length <= expected.length / PER_PAGE + 1, 'the walk does not end')
        last = await page({ ...query, cursor: last.meta.next_cursor })
        forward.push(last)
      }
      const seen = forward.flatMap((p) => p.data)
      assert.equal(new Set(seen.map((t) => t.uuid)).size, seen.length, 'a row appeared twice going forward')
      seen.forEach((b, i) => {
        const a = seen[i - 1]
        if (!a) return
        assert.ok(
          a.created_at > b.created_at || (a.created_at === b.created_at && a.uuid > b.uuid),
          `not strictly newest first at ${i}: ${a.created_at} ${a.uuid} then ${b.created_at} ${b.uuid}`,
        )
      })
      assert.equal(seen.length, expected.length)
      assert.deepEqual(
        seen.map((t) => t.uuid),
        expected,
      )
      assert.equal(forward.length, Math.ceil(expected.length / PER_PAGE))

      // Back from the last page: each earlier page again, the same rows and cursors as on the way forward.
      let first = last
      const backward: Page[] = [first]
      while (first.meta.prev_cursor !== null) {
        assert.ok(backward.length <= forward.length, 'the walk back does not end')
        first = await page({ ...query, cursor: first.meta.prev_cursor })
        backward.unshift(first)
      }
      assert.equal(backward.length, forward.length)
      const seenBack = backward.flatMap((p) => p.data.map((t) => t.uuid))
      assert.equal(new Set(seenBack).size, seenBack.length, 'a row appeared twice going back')
      assert.deepEqual(seenBack, expected)
      assert.deepEqual(
        backward.map((p) => p.meta),
        forward.map((p) => p.meta),
        'the pages going back have other cursors than going forward',
      )
    }

    it('pages through every transaction once, newest first, forward and back', async () => {
      await walkBothWays({}, () => true)
    })

    it('pages through a status list and a payment method', async () => {
      await walkBothWays(
        { status: 'paid,failed', payment_method: 'card' },
        (r) => (r.status === 'paid' || r.status === 'failed') && r.payment_method === 'card',
      )
    })

    it('pages through a search (external_id prefix or description substring, any case)', async () => {
      await walkBothWays(
        { search: 'gIfT' },
        (r) =>
          r.external_id.toLowerCase().startsWith('gift') ||
          (r.description ?? '').toLowerCase().includes('gift'),
      )
    })

    it('pages through a currency and a date-time window that cuts through equal timestamps', async () => {
      const from = new Date(BASE + 200 * 1000 + 123).toISOString()
      const to = new Date(BASE + 777_777).toISOString()
      await walkBothWays({ currency: 'RUB', date_from: from, date_to: to }, (r) => {
        const t = new Date(r.created_at).getTime()
        return r.currency === 'RUB' && t >= Date.parse(from) && t <= Date.parse(to)
      })
    })
  })
}

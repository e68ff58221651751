import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { NewTransaction } from '../../../src/db/types.ts'
import { assertFieldInvalid } from '../../helpers/errors.ts'
import { backends, call, newTransaction, type TestMerchant, transactionRow } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const PATH = 'http://gateway.test/integration/transactions'

/** Newest first: created_at desc, then uuid desc (PostgreSQL orders uuids as their lower-case hex text). */
const newestFirst = (a: NewTransaction, b: NewTransaction) => {
  const byTime = new Date(b.created_at).getTime() - new Date(a.created_at).getTime()
  if (byTime !== 0) return byTime
  return a.uuid < b.uuid ? 1 : a.uuid > b.uuid ? -1 : 0
}

/** uuids that differ only in their last characters, so a shared created_at is ordered by uuid alone. */
const uuidEnding = (n: number) => `018f0000-0000-7000-8000-${n.toString(16).padStart(12, '0')}`

const at = (iso: string) => new Date(iso)

/** external_id → uuid; naming an external_id the test did not insert is a mistake in the test. */
const uuidByExternalId =
  (rows: NewTransaction[]) =>
  (externalId: string): string => {
    const row = rows.find((r) => r.external_id === externalId)
    assert.ok(row, `no row with external_id ${externalId}`)
    return row.uuid
  }

const only = <T>(list: T[]): T => {
  assert.equal(list.length, 1)
  return list[0] as T
}

for (const backend of backends()) {
  describe(`list transactions (${backend})`, () => {
    const ctx = suiteContext(backend)

    /** A merchant of its own per test, so each test sees exactly the rows it inserted. */
    async function merchantWith(rows: Partial<NewTransaction>[]) {
      const merchant = await ctx.newMerchant()
      const inserted = rows.map((overrides) => transactionRow(merchant.uuid, overrides))
      if (inserted.length) await ctx.db.insertInto('transactions').values(inserted).execute()
      return { merchant, rows: inserted }
    }

    async function list(merchant: TestMerchant, query: Record<string, string> = {}) {
      const qs = new URLSearchParams(query).toString()
      return call(ctx, 'GET', `/integration/transactions${qs ? `?${qs}` : ''}`, undefined, {
        as: { merchant },
      })
    }

    async function listOk(merchant: TestMerchant, query: Record<string, string> = {}) {
      const res = await list(merchant, query)
      assert.equal(res.statusCode, 200, res.body)
      return res.json()
    }

    const uuidsOf = (page: { data: { uuid: string }[] }) => page.data.map((t) => t.uuid)
    const expectedUuids = (rows: NewTransaction[], keep: (row: NewTransaction) => boolean = () => true) =>
      rows
        .filter(keep)
        .sort(newestFirst)
        .map((r) => r.uuid)

    /** Lists `merchant`'s transactions with `query`: exactly `rows` that `keep` picks, newest first. */
    async function assertListed(
      merchant: TestMerchant,
      rows: NewTransaction[],
      query: Record<string, string>,
      keep: (row: NewTransaction) => boolean,
      message?: string,
    ) {
      const page = await listOk(merchant, query)
      assert.deepEqual(uuidsOf(page), expectedUuids(rows, keep), message)
      return page
    }

    async function assertValidation(merchant: TestMerchant, query: Record<string, string>, field: string) {
      assertFieldInvalid(await list(merchant, query), field, JSON.stringify(query))
    }

    it('lists newest first: created_at desc, then uuid desc; only the merchant and mode of the key', async () => {
      const shared = '2026-03-10T12:00:00.500Z'
      const { merchant, rows } = await merchantWith([
        { uuid: uuidEnding(3), created_at: at(shared) },
        { uuid: uuidEnding(10), created_at: at('2026-03-10T12:00:00.499Z') },
        { uuid: uuidEnding(1), created_at: at(shared) },
        { uuid: uuidEnding(11), created_at: at('2026-03-10T12:00:00.501Z') },
        { uuid: uuidEnding(2), created_at: at(shared) },
        { uuid: 'ffffffff-0000-7000-8000-000000000000', created_at: at('2026-03-09T00:00:00.000Z') },
      ])
      // Rows of another merchant and of live mode, at times that would interleave.
      await ctx.db
        .insertInto('transactions')
        .values([
          transactionRow(ctx.other.uuid, { created_at: at(shared) }),
          transactionRow(merchant.uuid, { mode: 'live', created_at: at(shared) }),
        ])
        .execute()

      const page = await listOk(merchant)
      assert.deepEqual(uuidsOf(page), [
        uuidEnding(11),
        uuidEnding(3),
        uuidEnding(2),
        uuidEnding(1),
        uuidEnding(10),
        'ffffffff-0000-7000-8000-000000000000',
      ])
      assert.deepEqual(uuidsOf(page), expectedUuids(rows))
      assert.deepEqual(
        page.data.map((t: { created_at: string }) => t.created_at),
        rows.sort(newestFirst).map((r) => new Date(r.created_at).toISOString()),
      )

      // Each item is the same view as the single-transaction read.
      const one = await call(ctx, 'GET', `/integration/transactions/${uuidEnding(2)}`, undefined, {
        as: { merchant },
      })
      assert.equal(one.statusCode, 200, one.body)
      assert.deepEqual(page.data[2], one.json())

      const live = await listOk(merchant, {}).then(async () => {
        const res = await call(ctx, 'GET', '/integration/transactions', undefined, {
          as: { merchant, mode: 'live' },
        })
        assert.equal(res.statusCode, 200, res.body)
        return res.json()
      })
      assert.equal(live.data.length, 1)
      assert.equal(live.data[0].mode, 'live')
    })

    it('answers 401 without credentials', async () => {
      const res = await call(ctx, 'GET', '/integration/transactions', undefined, { auth: 'none' })
      assert.equal(res.statusCode, 401, res.body)
      assert.equal(res.json().error.code, 'unauthorized')
    })

    it('an empty list has no cursors', async () => {
      const { merchant } = await merchantWith([])
      const page = await listOk(merchant)
      assert.deepEqual(page, {
        data: [],
        meta: { per_page: 25, next_cursor: null, prev_cursor: null, path: PATH },
      })
    })

    it('pages 25 by default, with meta { per_page, next_cursor, prev_cursor, path }', async () => {
      const base = Date.parse('2026-04-01T00:00:00.000Z')
      const { merchant, rows } = await merchantWith(
        Array.from({ length: 30 }, (_, i) => ({ created_at: new Date(base + i * 1000) })),
      )
      const expected = expectedUuids(rows)

      const first = await listOk(merchant)
      assert.deepEqual(Object.keys(first).sort(), ['data', 'meta'])
      assert.deepEqual(Object.keys(first.meta).sort(), ['next_cursor', 'path', 'per_page', 'prev_cursor'])
      assert.equal(first.meta.per_page, 25)
      assert.equal(first.meta.path, PATH)
      assert.equal(first.meta.prev_cursor, null)
      assert.equal(typeof first.meta.next_cursor, 'string')
      assert.deepEqual(uuidsOf(first), expected.slice(0, 25))

      const second = await listOk(merchant, { cursor: first.meta.next_cursor })
      assert.deepEqual(uuidsOf(second), expected.slice(25))
      assert.equal(second.meta.per_page, 25)
      assert.equal(second.meta.next_cursor, null)
      assert.equal(typeof second.meta.prev_cursor, 'string')
      // The path never carries the query.
      assert.equal(second.meta.path, PATH)

      const back = await listOk(merchant, { cursor: second.meta.prev_cursor })
      assert.deepEqual(back, first)
    })

    it('per_page is 1-100: 0, 101, -1, 1.5 and non-numbers are 422 on per_page', async () => {
      const base = Date.parse('2026-04-02T00:00:00.000Z')
      const { merchant, rows } = await merchantWith(
        Array.from({ length: 101 }, (_, i) => ({ created_at: new Date(base + i) })),
      )
      for (const per_page of ['0', '101', '-1', '1.5', 'abc', '']) {
        await assertValidation(merchant, { per_page }, 'per_page')
      }
      const one = await listOk(merchant, { per_page: '1' })
      assert.equal(one.data.length, 1)
      assert.equal(one.meta.per_page, 1)
      assert.equal(one.data[0].uuid, expectedUuids(rows)[0])
      const hundred = await listOk(merchant, { per_page: '100' })
      assert.equal(hundred.meta.per_page, 100)
      assert.deepEqual(uuidsOf(hundred), expectedUuids(rows).slice(0, 100))
      assert.equal(typeof hundred.meta.next_cursor, 'string')
    })

    it('next_cursor then prev_cursor returns exactly the original page, at every depth', async () => {
      const shared = at('2026-04-03T08:00:00.000Z')
      // 12 rows, 7 of them in one millisecond: page boundaries fall inside the tie.
      const { merchant, rows } = await merchantWith([
        ...Array.from({ length: 7 }, (_, i) => ({ uuid: uuidEnding(100 + i), created_at: shared })),
        ...Array.from({ length: 5 }, (_, i) => ({
          created_at: new Date(shared.getTime() - (i + 1) * 60_000),
        })),
      ])
      const expected = expectedUuids(rows)

      const p1 = await listOk(merchant, { per_page: '5' })
      const p2 = await listOk(merchant, { per_page: '5', cursor: p1.meta.next_cursor })
      const p3 = await listOk(merchant, { per_page: '5', cursor: p2.meta.next_cursor })
      assert.deepEqual(uuidsOf(p1), expected.slice(0, 5))
      assert.deepEqual(uuidsOf(p2), expected.slice(5, 10))
      assert.deepEqual(uuidsOf(p3), expected.slice(10))
      assert.equal(p1.meta.prev_cursor, null)
      assert.equal(p3.meta.next_cursor, null)
      assert.equal(typeof p2.meta.prev_cursor, 'string')
      assert.equal(typeof p2.meta.next_cursor, 'string')

      assert.deepEqual(await listOk(merchant, { per_page: '5', cursor: p3.meta.prev_cursor }), p2)
      assert.deepEqual(await listOk(merchant, { per_page: '5', cursor: p2.meta.prev_cursor }), p1)
    })

    it('a list of exactly whole pages ends without an empty page', async () => {
      const base = Date.parse('2026-04-04T00:00:00.000Z')
      const { merchant, rows } = await merchantWith(
        Array.from({ length: 10 }, (_, i) => ({ created_at: new Date(base + i * 7) })),
      )
      const p1 = await listOk(merchant, { per_page: '5' })
      const p2 = await listOk(merchant, { per_page: '5', cursor: p1.meta.next_cursor })
      assert.deepEqual([...uuidsOf(p1), ...uuidsOf(p2)], expectedUuids(rows))
      assert.equal(p2.meta.next_cursor, null)
      const back = await listOk(merchant, { per_page: '5', cursor: p2.meta.prev_cursor })
      assert.deepEqual(back, p1)
      assert.equal(back.meta.prev_cursor, null)
    })

    it('a cursor that does not decode is 422 on cursor', async () => {
      const { merchant } = await merchantWith([{}, {}])
      const page = await listOk(merchant, { per_page: '1' })
      const good: string = page.meta.next_cursor
      const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
      const decoded = JSON.parse(Buffer.from(good, 'base64url').toString('utf8'))
      for (const cursor of [
        'not-a-cursor',
        '!!!',
        b64({}),
        b64([]),
        b64(['x', decoded[1], decoded[2], decoded[3]]),
        b64([decoded[0], 'yesterday', decoded[2], decoded[3]]),
        // Positions a lenient date parser accepts but the database cannot hold, or that this API never writes.
        b64([decoded[0], '-271821-04-20T00:00:00.000Z', decoded[2], decoded[3]]),
        b64([decoded[0], '+275760-09-13T00:00:00.000Z', decoded[2], decoded[3]]),
        b64([decoded[0], '0000-01-01T00:00:00.000Z', decoded[2], decoded[3]]),
        b64([decoded[0], '2026-01-01', decoded[2], decoded[3]]),
        b64([decoded[0], 'Thu, 01 Jan 2026 00:00:00 GMT', decoded[2], decoded[3]]),
        b64([decoded[0], decoded[1], 'not-a-uuid', decoded[3]]),
        b64([decoded[0], decoded[1], decoded[2]]),
        good.slice(0, -6),
        'a'.repeat(600),
      ]) {
        await assertValidation(merchant, { per_page: '1', cursor }, 'cursor')
      }
      await assertValidation(merchant, { per_page: '1', cursor: '' }, 'cursor')
      // The same structure with a well-formed position is accepted: only the bad parts above were refused.
      const rebuilt = await listOk(merchant, { per_page: '1', cursor: b64([...decoded]) })
      assert.equal(rebuilt.data.length, 1)
    })

    it('a cursor used with different filters is 422 on cursor', async () => {
      const base = Date.parse('2026-04-05T00:00:00.000Z')
      const { merchant, rows } = await merchantWith(
        Array.from({ length: 6 }, (_, i) => ({
          created_at: new Date(base + i * 1000),
          status: i % 2 ? 'paid' : 'failed',
        })),
      )
      const filtered = await listOk(merchant, { status: 'paid,failed', per_page: '2' })
      const cursor: string = filtered.meta.next_cursor
      await assertValidation(merchant, { status: 'paid', per_page: '2', cursor }, 'cursor')
      await assertValidation(merchant, { per_page: '2', cursor }, 'cursor')
      await assertValidation(
        merchant,
        { status: 'paid,failed', currency: 'RUB', per_page: '2', cursor },
        'cursor',
      )
      await assertValidation(
        merchant,
        { status: 'paid,failed', search: 'x', per_page: '2', cursor },
        'cursor',
      )

      // The same filters again (a status list in any order is the same filter) continue the list.
      const same = await listOk(merchant, { status: 'failed,paid', per_page: '2', cursor })
      assert.deepEqual(uuidsOf(same), expectedUuids(rows).slice(2, 4))

      const plain = await listOk(merchant, { per_page: '2' })
      await assertValidation(
        merchant,
        { status: 'paid', per_page: '2', cursor: plain.meta.next_cursor },
        'cursor',
      )
      await assertValidation(
        merchant,
        { date_from: '2026-04-05', per_page: '2', cursor: plain.meta.next_cursor },
        'cursor',
      )
      // per_page is not a filter: a cursor may be followed with another page size.
      const wider = await listOk(merchant, { per_page: '3', cursor: plain.meta.next_cursor })
      assert.deepEqual(uuidsOf(wider), expectedUuids(rows).slice(2, 5))
    })

    it('filters by status: one, several comma-separated; an unknown status is 422', async () => {
      const base = Date.parse('2026-04-06T00:00:00.000Z')
      const statuses = ['pending', 'paid', 'failed', 'expired', 'partially_refunded', 'refunded'] as const
      const { merchant, rows } = await merchantWith(
        Array.from({ length: 18 }, (_, i) => ({
          created_at: new Date(base + i * 1000),
          status: statuses[i % 6],
        })),
      )
      for (const status of statuses) {
        const page = await assertListed(merchant, rows, { status }, (r) => r.status === status, status)
        assert.equal(page.data.length, 3)
      }
      await assertListed(merchant, rows, { status: 'paid,refunded,partially_refunded' }, (r) =>
        ['paid', 'refunded', 'partially_refunded'].includes(r.status as string),
      )
      await assertListed(merchant, rows, { status: 'paid,paid' }, (r) => r.status === 'paid')

      for (const status of ['settled', 'PAID', 'paid,', ',paid', 'paid,,failed', 'paid, failed', '']) {
        await assertValidation(merchant, { status }, 'status')
      }
    })

    it('filters by payment_method and by currency', async () => {
      const base = Date.parse('2026-04-07T00:00:00.000Z')
      const methods = ['card', 'p2p_card', 'bank_transfer'] as const
      const currencies = ['RUB', 'USD', 'EUR', 'JPY']
      const { merchant, rows } = await merchantWith(
        Array.from({ length: 24 }, (_, i) => ({
          created_at: new Date(base + i * 1000),
          payment_method: methods[i % 3],
          currency: currencies[i % 4],
        })),
      )
      for (const payment_method of methods) {
        await assertListed(merchant, rows, { payment_method }, (r) => r.payment_method === payment_method)
      }
      for (const currency of currencies) {
        await assertListed(merchant, rows, { currency }, (r) => r.currency === currency)
      }
      const both = await assertListed(
        merchant,
        rows,
        { payment_method: 'p2p_card', currency: 'USD' },
        (r) => r.payment_method === 'p2p_card' && r.currency === 'USD',
      )
      assert.equal(both.data.length, 2)
      const none = await listOk(merchant, { currency: 'KWD' })
      assert.deepEqual(none.data, [])

      await assertValidation(merchant, { payment_method: 'cash' }, 'payment_method')
      await assertValidation(merchant, { currency: 'TOOLONGCUR' }, 'currency')
    })

    it('filters by bare dates: UTC days, both inclusive, a bare date_to covers its whole day', async () => {
      const times = [
        '2026-03-09T23:59:59.999Z',
        '2026-03-10T00:00:00.000Z',
        '2026-03-10T12:00:00.000Z',
        '2026-03-10T23:59:59.999Z',
        '2026-03-11T00:00:00.000Z',
        '2026-03-12T06:00:00.000Z',
      ]
      const { merchant, rows } = await merchantWith(times.map((t) => ({ created_at: at(t) })))
      const within = (from: string, to: string) => (r: NewTransaction) =>
        new Date(r.created_at).getTime() >= Date.parse(from) &&
        new Date(r.created_at).getTime() <= Date.parse(to)

      // A day, from a day on, up to a day: the query, the instants it spans, and how many fall within.
      for (const [query, [from, to], count] of [
        [
          { date_from: '2026-03-10', date_to: '2026-03-10' },
          ['2026-03-10T00:00:00.000Z', '2026-03-10T23:59:59.999Z'],
          3,
        ],
        [{ date_from: '2026-03-10' }, ['2026-03-10T00:00:00.000Z', '2100-01-01T00:00:00Z'], 5],
        [{ date_to: '2026-03-10' }, ['2000-01-01T00:00:00Z', '2026-03-10T23:59:59.999Z'], 4],
      ] as const) {
        const page = await assertListed(merchant, rows, query, within(from, to), JSON.stringify(query))
        assert.equal(page.data.length, count)
      }

      const two = await listOk(merchant, { date_from: '2026-03-10', date_to: '2026-03-11' })
      assert.equal(two.data.length, 4)
      const empty = await listOk(merchant, { date_from: '2026-03-13' })
      assert.deepEqual(empty.data, [])
    })

    it('filters by date-times: inclusive and millisecond exact, offsets honoured', async () => {
      const { merchant, rows } = await merchantWith([
        { created_at: at('2026-05-01T10:00:00.122Z') },
        { created_at: at('2026-05-01T10:00:00.123Z') },
        { created_at: at('2026-05-01T10:00:00.124Z') },
      ])
      const [r122, r123, r124] = rows.map((r) => r.uuid)
      const exact = await listOk(merchant, {
        date_from: '2026-05-01T10:00:00.123Z',
        date_to: '2026-05-01T10:00:00.123Z',
      })
      assert.deepEqual(uuidsOf(exact), [r123])
      assert.deepEqual(uuidsOf(await listOk(merchant, { date_from: '2026-05-01T10:00:00.123Z' })), [
        r124,
        r123,
      ])
      assert.deepEqual(uuidsOf(await listOk(merchant, { date_to: '2026-05-01T10:00:00.123Z' })), [r123, r122])
      // The same instant written with an offset.
      const offset = await listOk(merchant, {
        date_from: '2026-05-01T13:00:00.123+03:00',
        date_to: '2026-05-01T13:00:00.123+03:00',
      })
      assert.deepEqual(uuidsOf(offset), [r123])
      // Without milliseconds or seconds.
      assert.equal((await listOk(merchant, { date_to: '2026-05-01T10:00:00Z' })).data.length, 0)
      assert.equal((await listOk(merchant, { date_from: '2026-05-01T10:00Z' })).data.length, 3)

      // A created_at read from a response and sent back matches that row exactly.
      const created = await call(ctx, 'POST', '/integration/transactions', newTransaction(), {
        as: { merchant },
      })
      assert.equal(created.statusCode, 201, created.body)
      const tx = created.json()
      const roundTrip = await listOk(merchant, { date_from: tx.created_at, date_to: tx.created_at })
      assert.deepEqual(uuidsOf(roundTrip), [tx.uuid])
      const before = new Date(Date.parse(tx.created_at) - 1).toISOString()
      const after = new Date(Date.parse(tx.created_at) + 1).toISOString()
      assert.deepEqual(
        uuidsOf(await listOk(merchant, { date_to: before, date_from: '2026-05-01' })).includes(tx.uuid),
        false,
      )
      assert.deepEqual(uuidsOf(await listOk(merchant, { date_from: after })), [])
    })

    it('date_from after date_to, and dates that are not dates, are 422', async () => {
      const { merchant } = await merchantWith([{}])
      await assertValidation(merchant, { date_from: '2026-03-11', date_to: '2026-03-10' }, 'date_from')
      await assertValidation(
        merchant,
        { date_from: '2026-03-10T10:00:00.001Z', date_to: '2026-03-10T10:00:00.000Z' },
        'date_from',
      )
      // Mixed forms compare as instants: 2026-03-10T23:59:59.999Z ends the bare day.
      await assertValidation(
        merchant,
        { date_from: '2026-03-11T00:00:00.000Z', date_to: '2026-03-10' },
        'date_from',
      )
      await listOk(merchant, { date_from: '2026-03-10T23:59:59.999Z', date_to: '2026-03-10' })

      for (const value of [
        '2026-02-30',
        '2026-13-01',
        '2026-3-1',
        'yesterday',
        '1710000000',
        '2026-03-10T25:00:00Z',
        '2026-03-10T10:00:00',
        '2026-03-10 10:00:00Z',
        '',
      ]) {
        await assertValidation(merchant, { date_from: value }, 'date_from')
        await assertValidation(merchant, { date_to: value }, 'date_to')
      }
    })

    it('search: equals the uuid, a case-insensitive prefix of external_id, a substring of description', async () => {
      const base = Date.parse('2026-06-01T00:00:00.000Z')
      const { merchant, rows } = await merchantWith([
        { external_id: 'Order-ABC-1', description: 'Blue shirt', created_at: new Date(base + 1) },
        { external_id: 'order-abc-2', description: null, created_at: new Date(base + 2) },
        { external_id: 'xx-order-abc-3', description: 'Red hat', created_at: new Date(base + 3) },
        {
          external_id: 'inv-77',
          description: 'Refill for ORDER-ABC account',
          created_at: new Date(base + 4),
        },
        { external_id: 'inv-78', description: 'Green SHIRT, size M', created_at: new Date(base + 5) },
        { external_id: 'abc', description: null, created_at: new Date(base + 6) },
      ])
      const byExt = uuidByExternalId(rows)
      const search = async (text: string) => uuidsOf(await listOk(merchant, { search: text }))

      // Prefix of external_id (any case), or substring of description; not a substring of external_id.
      assert.deepEqual(await search('order-abc'), [
        byExt('inv-77'),
        byExt('order-abc-2'),
        byExt('Order-ABC-1'),
      ])
      assert.deepEqual(await search('ORDER-ABC-'), [byExt('order-abc-2'), byExt('Order-ABC-1')])
      assert.deepEqual(await search('abc-3'), [])
      assert.deepEqual(await search('xX-Order'), [byExt('xx-order-abc-3')])
      assert.deepEqual(await search('shirt'), [byExt('inv-78'), byExt('Order-ABC-1')])
      assert.deepEqual(await search('Size m'), [byExt('inv-78')])
      assert.deepEqual(await search('abc'), [byExt('abc'), byExt('inv-77')])
      assert.deepEqual(await search('nothing like it'), [])

      // The uuid, exactly (any case); a part of a uuid is not a match.
      const target = byExt('xx-order-abc-3')
      assert.deepEqual(await search(target), [target])
      assert.deepEqual(await search(target.toUpperCase()), [target])
      assert.deepEqual(await search(target.slice(0, 8)), [])
      assert.deepEqual(await search(target.slice(0, -1)), [])

      // Combined with another filter.
      await ctx.db
        .updateTable('transactions')
        .set({ status: 'paid' })
        .where('uuid', '=', byExt('Order-ABC-1'))
        .execute()
      assert.deepEqual(uuidsOf(await listOk(merchant, { search: 'order-abc', status: 'paid' })), [
        byExt('Order-ABC-1'),
      ])
    })

    it('search treats LIKE wildcards % and _ (and the escape \\) as literal characters', async () => {
      const base = Date.parse('2026-06-02T00:00:00.000Z')
      const { merchant, rows } = await merchantWith([
        { external_id: 'a_b-1', description: '100% cotton', created_at: new Date(base + 1) },
        { external_id: 'axb-2', description: '100 cotton', created_at: new Date(base + 2) },
        { external_id: 'a%b-3', description: '1000 cotton', created_at: new Date(base + 3) },
        { external_id: 'plain-4', description: 'C:\\shop\\orders', created_at: new Date(base + 4) },
        { external_id: 'plain-5', description: 'C:shop_orders', created_at: new Date(base + 5) },
      ])
      const byExt = uuidByExternalId(rows)
      const search = async (text: string) => uuidsOf(await listOk(merchant, { search: text }))
      assert.deepEqual(await search('100%'), [byExt('a_b-1')])
      assert.deepEqual(await search('%'), [byExt('a_b-1')])
      assert.deepEqual(await search('0% c'), [byExt('a_b-1')])
      assert.deepEqual(await search('a_'), [byExt('a_b-1')])
      assert.deepEqual(await search('a%'), [byExt('a%b-3')])
      assert.deepEqual(await search('_'), [byExt('plain-5')])
      assert.deepEqual(await search('p_o'), [byExt('plain-5')])
      assert.deepEqual(await search('1_0'), [])
      assert.deepEqual(await search('\\shop'), [byExt('plain-4')])
      assert.deepEqual(await search('C:\\'), [byExt('plain-4')])
    })

    it('search is 1-100 characters', async () => {
      const { merchant, rows } = await merchantWith([{ description: 'y'.repeat(100) }])
      await assertValidation(merchant, { search: 'y'.repeat(101) }, 'search')
      await assertValidation(merchant, { search: '' }, 'search')
      // PostgreSQL text cannot hold NUL: a clear 422, not a database error.
      await assertValidation(merchant, { search: 'a\u0000b' }, 'search')
      await assertValidation(merchant, { currency: 'RU\u0000B' }, 'currency')
      assert.deepEqual(uuidsOf(await listOk(merchant, { search: 'y'.repeat(100) })), [only(rows).uuid])
      assert.deepEqual(uuidsOf(await listOk(merchant, { search: 'Y' })), [only(rows).uuid])
    })

    it('an unknown query parameter is 422 naming it', async () => {
      const { merchant } = await merchantWith([{}])
      await assertValidation(merchant, { sort: 'asc' }, 'sort')
      await assertValidation(merchant, { page: '2' }, 'page')
      await assertValidation(merchant, { limit: '10' }, 'limit')
      await assertValidation(merchant, { Status: 'paid' }, 'Status')
    })

    it('filters and search combine with pagination in both directions', async () => {
      const base = Date.parse('2026-07-01T00:00:00.000Z')
      const statuses = ['paid', 'failed', 'pending'] as const
      const methods = ['card', 'p2p_card'] as const
      const { merchant, rows } = await merchantWith(
        Array.from({ length: 40 }, (_, i) => ({
          // Four rows per millisecond.
          created_at: new Date(base + Math.floor(i / 4)),
          status: statuses[i % 3],
          payment_method: methods[i % 2],
          description: i % 5 === 0 ? `Gift card #${i}` : `Item ${i}`,
        })),
      )
      const query = { status: 'paid,failed', payment_method: 'card', search: 'item', per_page: '3' }
      const expected = expectedUuids(
        rows,
        (r) =>
          ['paid', 'failed'].includes(r.status as string) &&
          r.payment_method === 'card' &&
          (r.description as string).toLowerCase().includes('item'),
      )
      assert.ok(expected.length > 6)
      const pages = [await listOk(merchant, query)]
      while (pages[pages.length - 1].meta.next_cursor) {
        pages.push(await listOk(merchant, { ...query, cursor: pages[pages.length - 1].meta.next_cursor }))
      }
      assert.deepEqual(pages.flatMap(uuidsOf), expected)
      for (let i = pages.length - 1; i > 0; i--) {
        assert.deepEqual(
          await listOk(merchant, { ...query, cursor: pages[i].meta.prev_cursor }),
          pages[i - 1],
        )
      }
    })
  })
}

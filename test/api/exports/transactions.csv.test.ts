import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parse } from 'csv-parse/sync'
import { allPages, assertExportOfList, assertSameRows, getCsv } from '../../helpers/csv.ts'
import { backends, call, newTransaction, transactionRow } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const HOSTILE = ['=HYPERLINK("http://evil.test","x")', '+1+2', '-2+3', '@SUM(A1:A2)', '\tTAB', '\rCR']

/** The columns docs/API.md lists for this export, in its order (new ones only ever at the end). */
const TRANSACTION_COLUMNS =
  'uuid,external_id,type,mode,status,payment_method,amount,gross_amount,net_amount,fee_amount,fee_payer,currency,settlement_amount,settlement_currency,fx_rate,description,metadata,created_at,updated_at,paid_at,expires_at,settle_available_at,aggregate_version'

for (const backend of backends()) {
  describe(`transactions CSV export (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('round-trips: the CSV is the JSON list, every page of it, in the same order and columns', async () => {
      const merchant = await ctx.newMerchant()
      // 230 rows: more than two batches of a page, several sharing a created_at (ordered by uuid).
      const rows = Array.from({ length: 230 }, (_, i) =>
        transactionRow(merchant.uuid, {
          created_at: new Date(Date.UTC(2026, 10, 1, 0, 0, Math.floor(i / 3))),
          description: `Order ${i}, "quoted", with a\nnewline`,
          metadata: i % 2 ? JSON.stringify({ cart: `${i},x`, note: 'a "b"' }) : null,
          status: i % 4 === 0 ? 'paid' : 'pending',
        }),
      )
      await ctx.db.insertInto('transactions').values(rows).execute()
      const { csv } = await assertExportOfList(ctx, '/integration/transactions', {
        as: { merchant },
        columns: TRANSACTION_COLUMNS,
        count: 230,
      })
      // Quoting is RFC 4180: the embedded quote is doubled, the field with a newline is quoted.
      assert.ok(csv.body.includes('"Order 0, ""quoted"", with a\nnewline"'))
    })

    it('takes the same filters as the JSON list', async () => {
      const merchant = await ctx.newMerchant()
      const rows = Array.from({ length: 40 }, (_, i) =>
        transactionRow(merchant.uuid, {
          created_at: new Date(Date.UTC(2026, 9, 1 + (i % 20))),
          status: (['paid', 'pending', 'failed', 'expired'] as const)[i % 4],
          currency: i % 3 ? 'RUB' : 'KZT',
          description: i % 5 ? 'plain' : 'violet widget',
        }),
      )
      await ctx.db.insertInto('transactions').values(rows).execute()
      for (const query of [
        'status=paid',
        'status=paid,failed&currency=RUB',
        'date_from=2026-10-05&date_to=2026-10-10',
        'search=violet',
        'payment_method=card&currency=KZT',
      ]) {
        const json = await allPages(ctx, `/integration/transactions?${query}`, { as: { merchant } })
        const csv = await getCsv(ctx, `/integration/transactions?${query}`, { as: { merchant } })
        assert.ok(json.length > 0, `${query} matches some rows`)
        assert.ok(json.length < 40, `${query} leaves some out`)
        assertSameRows(csv, json)
      }
    })

    it('escapes cells a spreadsheet would run as formulas, from description, external_id and metadata', async () => {
      const merchant = await ctx.newMerchant()
      for (const [i, text] of HOSTILE.entries()) {
        const res = await call(
          ctx,
          'POST',
          '/integration/transactions',
          newTransaction({
            // external_id allows `-` first: the one formula character its pattern admits.
            external_id: i % 2 ? `-ext-${i}-${Date.now()}` : `ext-${i}-${Date.now()}`,
            description: text,
            metadata: { note: text },
          }),
          { as: { merchant } },
        )
        assert.equal(res.statusCode, 201, res.body)
      }
      const csv = await getCsv(ctx, '/integration/transactions', { as: { merchant } })
      const descriptions = csv.objects.map((row) => row.description).sort()
      assert.deepEqual(descriptions, HOSTILE.map((text) => `'${text}`).sort())
      const external = csv.objects.map((row) => row.external_id ?? '')
      assert.equal(external.filter((id) => id.startsWith("'-ext-")).length, 3)
      for (const row of csv.objects) {
        assert.ok(!/^[=+\-@\t\r]/.test(row.external_id ?? ''), row.external_id)
        assert.ok(!/^[=+\-@\t\r]/.test(row.description ?? ''))
        // metadata is JSON text, which starts with `{`: safe as is and still parseable.
        assert.equal(JSON.parse(row.metadata ?? '').note, (row.description ?? '').slice(1))
      }
      // Amounts stay numbers: a spreadsheet sums them.
      for (const row of csv.objects) assert.match(row.amount ?? '', /^\d+$/)
    })

    it("never shows another merchant's or the other mode's rows", async () => {
      const merchant = await ctx.newMerchant()
      const other = await ctx.newMerchant()
      const mine = transactionRow(merchant.uuid, { mode: 'test' })
      const myLive = transactionRow(merchant.uuid, { mode: 'live' })
      const theirs = transactionRow(other.uuid, { mode: 'test' })
      await ctx.db.insertInto('transactions').values([mine, myLive, theirs]).execute()
      const test = await getCsv(ctx, '/integration/transactions', { as: { merchant } })
      assert.deepEqual(
        test.objects.map((row) => row.uuid),
        [mine.uuid],
      )
      const live = await getCsv(ctx, '/integration/transactions', { as: { merchant, mode: 'live' } })
      assert.deepEqual(
        live.objects.map((row) => row.uuid),
        [myLive.uuid],
      )
    })

    it('answers a header row alone when nothing matches', async () => {
      const merchant = await ctx.newMerchant()
      const csv = await getCsv(ctx, '/integration/transactions', { as: { merchant } })
      assert.equal(csv.rows.length, 0)
      assert.equal(csv.body.split('\r\n')[0], csv.header.join(','))
    })

    it('chooses by Accept: JSON by default and for */*, CSV when preferred', async () => {
      const merchant = await ctx.newMerchant()
      const as = { merchant }
      for (const [accept, type] of [
        [undefined, 'application/json'],
        ['*/*', 'application/json'],
        ['application/json, text/csv;q=0.5', 'application/json'],
        ['text/csv, application/json;q=0.5', 'text/csv'],
        ['text/*', 'text/csv'],
      ] as const) {
        const res = await call(ctx, 'GET', '/integration/transactions', undefined, {
          as,
          headers: accept ? { accept } : {},
        })
        assert.equal(res.statusCode, 200)
        assert.equal(String(res.headers['content-type']).split(';')[0], type, String(accept))
      }
    })

    it('refuses what an export cannot take, with the error envelope', async () => {
      const headers = { accept: 'text/csv' }
      const bad = await call(ctx, 'GET', '/integration/transactions?status=nope', undefined, { headers })
      assert.equal(bad.statusCode, 422)
      assert.equal(bad.json().error.code, 'validation_failed')
      await ctx.db
        .insertInto('transactions')
        .values([transactionRow(ctx.merchant.uuid), transactionRow(ctx.merchant.uuid)])
        .execute()
      const page = await call(ctx, 'GET', '/integration/transactions?per_page=1', undefined, {})
      const cursor = page.json().meta.next_cursor
      assert.ok(cursor)
      const withCursor = await call(ctx, 'GET', `/integration/transactions?cursor=${cursor}`, undefined, {
        headers,
      })
      assert.equal(withCursor.statusCode, 422)
      assert.deepEqual(Object.keys(withCursor.json().error.errors), ['cursor'])
      const unauth = await call(ctx, 'GET', '/integration/transactions', undefined, { auth: 'none', headers })
      assert.equal(unauth.statusCode, 401)
      assert.equal(unauth.json().error.code, 'unauthorized')
    })

    it('parses back with a strict parser: every record has every column', async () => {
      const merchant = await ctx.newMerchant()
      await ctx.db
        .insertInto('transactions')
        .values(Array.from({ length: 5 }, () => transactionRow(merchant.uuid, { description: 'a\r\nb,"c"' })))
        .execute()
      const csv = await getCsv(ctx, '/integration/transactions', { as: { merchant } })
      const strict: string[][] = parse(csv.body, { relax_column_count: false, record_delimiter: '\r\n' })
      assert.equal(strict.length, 6)
      for (const record of strict) assert.equal(record.length, csv.header.length)
      for (const row of csv.objects) assert.equal(row.description, 'a\r\nb,"c"')
    })
  })
}

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { allPages, assertExportOfList, assertSameRows, getCsv } from '../../helpers/csv.ts'
import { backends, call, extId, paidTransaction, type TestMerchant } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const TRC20 = { address: 'TJRabPrwbZy45sbavfcjinPJC18kjpRTv8', network: 'TRC20' }
const CARD = { card_number: '4111111111111111', holder_name: 'JANE DOE' }

/** The columns docs/API.md lists for this export, in its order (new ones only ever at the end). */
const PAYOUT_COLUMNS =
  'uuid,external_id,mode,status,method,amount,currency,fx_rate,amount_usdt_micro,fee_usdt_micro,payout_usdt_amount_micro,quote_id,destination,metadata,failure_reason,created_at,updated_at,completed_at,failed_at,aggregate_version'

let keyCounter = 0

/** The JSON payout with its `fx` amounts beside its own fields, as the CSV has them. */
const flat = (payout: Record<string, unknown>) => {
  const fx = payout.fx as Record<string, string>
  return {
    ...payout,
    fx_rate: fx.fx_rate,
    amount_usdt_micro: Number(fx.amount_usdt_micro),
    fee_usdt_micro: Number(fx.fee_usdt_micro),
  }
}

for (const backend of backends()) {
  describe(`payouts CSV export (${backend})`, () => {
    const ctx = suiteContext(backend)

    const fund = (merchant: TestMerchant) =>
      paidTransaction(ctx, { amount: 1_000_000, currency: 'USD' }, { merchant })
    async function payout(merchant: TestMerchant, body: Record<string, unknown>) {
      const res = await call(
        ctx,
        'POST',
        '/integration/payouts',
        {
          external_id: extId('po'),
          amount: 1000,
          currency: 'USD',
          method: 'usdt_wallet',
          destination: TRC20,
          ...body,
        },
        { as: { merchant }, auth: 'signature', idempotencyKey: `po-csv-${Date.now()}-${keyCounter++}` },
      )
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }

    it('round-trips against the JSON list, with the same filters, hostile cells escaped', async () => {
      const merchant = await ctx.newMerchant()
      await fund(merchant)
      const made = []
      for (let i = 0; i < 7; i++)
        made.push(
          await payout(merchant, {
            ...(i % 3 === 0 ? { method: 'card', destination: CARD } : {}),
            ...(i % 2 ? { external_id: `-po-${i}-${Date.now()}` } : {}),
            currency: i % 2 ? 'USD' : 'EUR',
            amount: 1000 + i,
            metadata: { note: i % 2 ? '=cmd|" /C calc"!A0' : `plain ${i}` },
          }),
        )
      const completed = await call(
        ctx,
        'POST',
        `/integration/sandbox/payouts/${made[0].uuid}/completed`,
        undefined,
        {
          as: { merchant },
        },
      )
      assert.equal(completed.statusCode, 200, completed.body)

      const { csv } = await assertExportOfList(ctx, '/integration/payouts', {
        as: { merchant },
        columns: PAYOUT_COLUMNS,
        count: 7,
        toRow: flat,
      })
      assert.equal(csv.objects.filter((row) => row.external_id?.startsWith("'-po-")).length, 3)
      // The card number is masked in the CSV as in the API.
      assert.ok(!csv.body.includes(CARD.card_number))

      for (const query of ['status=completed', 'method=card', 'currency=EUR&method=usdt_wallet']) {
        const filtered = (await allPages(ctx, `/integration/payouts?${query}`, { as: { merchant } })).map(
          flat,
        )
        assert.ok(filtered.length > 0 && filtered.length < 7, query)
        assertSameRows(await getCsv(ctx, `/integration/payouts?${query}`, { as: { merchant } }), filtered)
      }
    })

    it("never shows another merchant's or the other mode's payouts", async () => {
      const merchant = await ctx.newMerchant()
      const other = await ctx.newMerchant()
      await fund(merchant)
      await fund(other)
      const mine = await payout(merchant, {})
      await payout(other, {})
      const csv = await getCsv(ctx, '/integration/payouts', { as: { merchant } })
      assert.deepEqual(
        csv.objects.map((row) => row.uuid),
        [mine.uuid],
      )
      const live = await getCsv(ctx, '/integration/payouts', { as: { merchant, mode: 'live' } })
      assert.equal(live.rows.length, 0)
    })
  })
}

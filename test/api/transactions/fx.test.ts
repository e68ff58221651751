import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { backends, call, newTransaction, type TestContext, type TestMerchant } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

// Market rates in the test context, units per 1 USDT: USD 1, EUR 0.92, RUB 92.15, JPY 151.2, KWD 0.307.
// Every expected figure below is worked out by hand in the comment above it.

/** A merchant with a chosen settlement currency, shaped like the harness's merchants. */
async function merchantSettledIn(ctx: TestContext, settlementCurrency: string): Promise<TestMerchant> {
  const { merchant, keys } = await ctx.services.merchants.createMerchant({
    name: `${settlementCurrency} Shop`,
    settlementCurrency,
  })
  ctx.secrets.push(keys.test.secret, keys.live.secret)
  return { uuid: merchant.uuid, keys }
}

for (const backend of backends()) {
  describe(`transaction fees, FX and settlement (${backend})`, () => {
    const ctx = suiteContext(backend)

    // Each test uses its own merchant, so fees, markup and TTL set by one never leak into another.
    const pay = async (merchant: TestMerchant, overrides: Record<string, unknown>) => {
      const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(overrides), {
        as: { merchant },
      })
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }

    describe('fees', () => {
      it('fee_payer merchant (share 10000): the merchant bears the whole fee', async () => {
        const shop = await ctx.newMerchant('Fees merchant')
        await ctx.services.merchants.setFee(shop.uuid, 'card', 300, 10000)
        const tx = await pay(shop, { amount: 100000, currency: 'RUB' })
        // fee = 100000 × 300 / 10000 = 3000; merchant part = 3000 × 10000 / 10000 = 3000; customer 0
        assert.equal(tx.fee_payer, 'merchant')
        assert.equal(tx.merchant_fee_share_bps, 10000)
        assert.equal(tx.fee_amount, 3000)
        assert.equal(tx.merchant_fee_merchant_amount, 3000)
        assert.equal(tx.merchant_fee_customer_amount, 0)
        // gross = 100000 + 0; net = 100000 − 3000 = 97000
        assert.equal(tx.gross_amount, 100000)
        assert.equal(tx.net_amount, 97000)
        // 970.00 RUB / 92.15 = 10.5263157…; floor in micro USDT = 10526315
        assert.equal(tx.fx_rate, '92.15')
        assert.equal(tx.settlement_amount, 10526315)
        assert.equal(tx.settlement_amount_formatted, '10.526315 USDT')
      })

      it('fee_payer customer (share 0): the customer pays the whole fee on top', async () => {
        const shop = await ctx.newMerchant('Fees customer')
        await ctx.services.merchants.setFee(shop.uuid, 'card', 250, 0)
        const tx = await pay(shop, { amount: 150000, currency: 'RUB' })
        // fee = 150000 × 250 / 10000 = 3750; merchant part 0; customer part 3750
        assert.equal(tx.fee_payer, 'customer')
        assert.equal(tx.merchant_fee_share_bps, 0)
        assert.equal(tx.fee_amount, 3750)
        assert.equal(tx.merchant_fee_merchant_amount, 0)
        assert.equal(tx.merchant_fee_customer_amount, 3750)
        // gross = 150000 + 3750 = 153750; net = 153750 − 3750 = 150000: the merchant nets the full amount
        assert.equal(tx.gross_amount, 153750)
        assert.equal(tx.net_amount, 150000)
        // 1500.00 / 92.15 = 16.2778079…; floor micro = 16277807
        assert.equal(tx.settlement_amount, 16277807)
        assert.equal(tx.settlement_amount_formatted, '16.277807 USDT')
      })

      it('split: both roundings go half up at an exact .5', async () => {
        const shop = await ctx.newMerchant('Fees split')
        await ctx.services.merchants.setFee(shop.uuid, 'card', 250, 5000)
        const tx = await pay(shop, { amount: 150100, currency: 'RUB' })
        // fee = 150100 × 250 / 10000 = 3752.5 → half up → 3753
        assert.equal(tx.fee_payer, 'split')
        assert.equal(tx.merchant_fee_share_bps, 5000)
        assert.equal(tx.fee_amount, 3753)
        // merchant part = 3753 × 5000 / 10000 = 1876.5 → half up → 1877; customer = 3753 − 1877 = 1876
        assert.equal(tx.merchant_fee_merchant_amount, 1877)
        assert.equal(tx.merchant_fee_customer_amount, 1876)
        // gross = 150100 + 1876 = 151976; net = 151976 − 3753 = 148223
        assert.equal(tx.gross_amount, 151976)
        assert.equal(tx.net_amount, 148223)
        // 1482.23 / 92.15 = 16.0849701…; floor micro = 16084970
        assert.equal(tx.settlement_amount, 16084970)
      })

      it('split: a fee just below .5 rounds down', async () => {
        const shop = await ctx.newMerchant('Fees split low')
        await ctx.services.merchants.setFee(shop.uuid, 'card', 250, 3333)
        const tx = await pay(shop, { amount: 150099, currency: 'RUB' })
        // fee = 150099 × 250 / 10000 = 3752.475 → 3752
        assert.equal(tx.fee_amount, 3752)
        // merchant part = 3752 × 3333 / 10000 = 1250.5416 → 1251 (above half); customer = 3752 − 1251 = 2501
        assert.equal(tx.merchant_fee_merchant_amount, 1251)
        assert.equal(tx.merchant_fee_customer_amount, 2501)
        // gross = 150099 + 2501 = 152600; net = 152600 − 3752 = 148848
        assert.equal(tx.gross_amount, 152600)
        assert.equal(tx.net_amount, 148848)
      })

      it('fees are per payment method', async () => {
        const shop = await ctx.newMerchant('Fees per method')
        await ctx.services.merchants.setFee(shop.uuid, 'card', 250, 10000)
        await ctx.services.merchants.setFee(shop.uuid, 'bank_transfer', 100, 0)
        const card = await pay(shop, { amount: 10000, currency: 'USD', payment_method: 'card' })
        const bank = await pay(shop, { amount: 10000, currency: 'USD', payment_method: 'bank_transfer' })
        const p2p = await pay(shop, { amount: 10000, currency: 'USD', payment_method: 'p2p_card' })
        // card: 10000 × 250 / 10000 = 250, all the merchant's; bank: 10000 × 100 / 10000 = 100, all the customer's
        assert.deepEqual([card.fee_amount, card.gross_amount, card.net_amount], [250, 10000, 9750])
        assert.deepEqual([bank.fee_amount, bank.gross_amount, bank.net_amount], [100, 10100, 10000])
        // p2p_card has no fee configured: none is charged
        assert.deepEqual(
          [p2p.fee_amount, p2p.gross_amount, p2p.net_amount, p2p.fee_payer],
          [0, 10000, 10000, 'merchant'],
        )
      })
    })

    describe('currency exponents', () => {
      it('JPY (exponent 0)', async () => {
        const shop = await ctx.newMerchant('Yen shop')
        const plain = await pay(shop, { amount: 10000, currency: 'JPY' })
        // ¥10000 / 151.2 = 66.1375661…; floor micro = 66137566
        assert.equal(plain.fx_rate, '151.2')
        assert.equal(plain.settlement_amount, 66137566)
        assert.equal(plain.settlement_amount_formatted, '66.137566 USDT')

        await ctx.services.merchants.setFee(shop.uuid, 'card', 250, 5000)
        const withFee = await pay(shop, { amount: 1001, currency: 'JPY' })
        // fee = 1001 × 250 / 10000 = 25.025 → 25; merchant = 25 × 5000 / 10000 = 12.5 → 13; customer 12
        assert.equal(withFee.fee_amount, 25)
        assert.equal(withFee.merchant_fee_merchant_amount, 13)
        assert.equal(withFee.merchant_fee_customer_amount, 12)
        // gross = 1001 + 12 = 1013; net = 1013 − 25 = 988; ¥988 / 151.2 = 6.5343915…; floor micro = 6534391
        assert.equal(withFee.gross_amount, 1013)
        assert.equal(withFee.net_amount, 988)
        assert.equal(withFee.settlement_amount, 6534391)
      })

      it('KWD (exponent 3)', async () => {
        const shop = await ctx.newMerchant('Dinar shop')
        const tx = await pay(shop, { amount: 12345, currency: 'KWD' })
        // 12345 minor = 12.345 KWD; 12.345 / 0.307 = 40.2117263…; floor micro = 40211726
        assert.equal(tx.fx_rate, '0.307')
        assert.equal(tx.net_amount, 12345)
        assert.equal(tx.settlement_amount, 40211726)
        assert.equal(tx.settlement_amount_formatted, '40.211726 USDT')
      })

      it('USDT for a USDT-settled merchant: rate "1", settlement = net', async () => {
        const shop = await ctx.newMerchant('Tether shop')
        await ctx.services.merchants.setFee(shop.uuid, 'card', 250, 5000)
        const tx = await pay(shop, { amount: 5000000, currency: 'USDT' })
        // fee = 5000000 × 250 / 10000 = 125000; halves 62500 / 62500; gross 5062500; net 4937500
        assert.equal(tx.fee_amount, 125000)
        assert.equal(tx.gross_amount, 5062500)
        assert.equal(tx.net_amount, 4937500)
        assert.equal(tx.fx_rate, '1')
        assert.equal(tx.settlement_currency, 'USDT')
        assert.equal(tx.settlement_amount, 4937500)
        assert.equal(tx.settlement_amount_formatted, '4.937500 USDT')
      })

      it('the largest amount, 100000000000, loses no precision', async () => {
        const shop = await ctx.newMerchant('Big shop')
        await ctx.services.merchants.setFee(shop.uuid, 'card', 250, 5000)
        const rub = await pay(shop, { amount: 100000000000, currency: 'RUB' })
        // fee = 10^11 × 250 / 10000 = 2500000000; halves 1250000000 each
        assert.equal(rub.amount, 100000000000)
        assert.equal(rub.fee_amount, 2500000000)
        assert.equal(rub.merchant_fee_merchant_amount, 1250000000)
        assert.equal(rub.merchant_fee_customer_amount, 1250000000)
        // gross = 10^11 + 1250000000 = 101250000000; net = 101250000000 − 2500000000 = 98750000000
        assert.equal(rub.gross_amount, 101250000000)
        assert.equal(rub.net_amount, 98750000000)
        // 987500000.00 RUB / 92.15 = 10716223.5485621…; floor micro = 10716223548562
        assert.equal(rub.settlement_amount, 10716223548562)
        assert.equal(rub.settlement_amount_formatted, '10716223.548562 USDT')

        await ctx.services.merchants.setFee(shop.uuid, 'card', 0, 10000)
        const jpy = await pay(shop, { amount: 100000000000, currency: 'JPY' })
        // ¥10^11 / 151.2 = 661375661.3756613…; floor micro = 661375661375661
        assert.equal(jpy.settlement_amount, 661375661375661)
        assert.equal(jpy.settlement_amount_formatted, '661375661.375661 USDT')
        // Read back from the database, still exact.
        const stored = await call(ctx, 'GET', `/integration/transactions/${jpy.uuid}`, undefined, {
          as: { merchant: shop },
        })
        assert.equal(stored.json().settlement_amount, 661375661375661)
        assert.equal(stored.json().amount, 100000000000)
      })
    })

    describe('merchant settings', () => {
      it('applies fx_markup_bps: pay-in rate = market × (1 + bps/10000), exactly', async () => {
        const shop = await ctx.newMerchant('Markup shop')
        // Read once before the change: the cached key must not hide the new markup afterwards.
        assert.equal((await pay(shop, { currency: 'RUB' })).fx_rate, '92.15')
        await ctx.services.merchants.updateMerchant(shop.uuid, { fxMarkupBps: 150 })

        const rub = await pay(shop, { amount: 150000, currency: 'RUB' })
        // 92.15 × 1.015 = 93.53225
        assert.equal(rub.fx_rate, '93.53225')
        // 1500.00 / 93.53225 = 16.0372490…; floor micro = 16037249
        assert.equal(rub.settlement_amount, 16037249)
        const rubRow = await ctx.db
          .selectFrom('fx_rates')
          .selectAll()
          .where('currency', '=', 'RUB')
          .executeTakeFirstOrThrow()
        assert.equal(rub.fx_rate_updated_at, new Date(rubRow.updated_at).toISOString())

        const kwd = await pay(shop, { amount: 12345, currency: 'KWD' })
        // 0.307 × 1.015 = 0.311605; 12.345 / 0.311605 = 39.6174644…; floor micro = 39617464
        assert.equal(kwd.fx_rate, '0.311605')
        assert.equal(kwd.settlement_amount, 39617464)

        await ctx.services.merchants.updateMerchant(shop.uuid, { fxMarkupBps: 1 })
        // 151.2 × 1.0001 = 151.21512
        assert.equal((await pay(shop, { amount: 100, currency: 'JPY' })).fx_rate, '151.21512')
        // The settlement currency itself carries no markup.
        assert.equal((await pay(shop, { amount: 100, currency: 'USDT' })).fx_rate, '1')
      })

      it('settles a EUR merchant at the cross rate', async () => {
        const shop = await merchantSettledIn(ctx, 'EUR')
        const rub = await pay(shop, { amount: 150000, currency: 'RUB' })
        // RUB per EUR = 92.15 / 0.92 = 100.1630434782608695…, to 12 places half up = 100.163043478261
        assert.equal(rub.fx_rate, '100.163043478261')
        assert.equal(rub.settlement_currency, 'EUR')
        // 1500.00 / 100.163043478261 = 14.9755832…; floor cents = 1497
        assert.equal(rub.settlement_amount, 1497)
        assert.equal(rub.settlement_amount_formatted, '14.97 EUR')

        const usd = await pay(shop, { amount: 1999, currency: 'USD' })
        // USD per EUR = 1 / 0.92 = 1.0869565217391…, to 12 places = 1.086956521739
        assert.equal(usd.fx_rate, '1.086956521739')
        // 19.99 / 1.086956521739 = 18.3908000…; floor cents = 1839
        assert.equal(usd.settlement_amount, 1839)

        const usdt = await pay(shop, { amount: 5000000, currency: 'USDT' })
        // USDT per EUR = 1 / 0.92 as well; 5.000000 / 1.086956521739 = 4.6000000000005…; floor cents = 460
        assert.equal(usdt.fx_rate, '1.086956521739')
        assert.equal(usdt.settlement_amount, 460)
        assert.equal(usdt.settlement_amount_formatted, '4.60 EUR')

        const eur = await pay(shop, { amount: 4321, currency: 'EUR' })
        assert.equal(eur.fx_rate, '1')
        assert.equal(eur.settlement_amount, 4321)
        assert.equal(eur.settlement_amount_formatted, '43.21 EUR')
      })

      it('a custom transaction TTL sets expires_at', async () => {
        const shop = await ctx.newMerchant('TTL shop')
        const before = await pay(shop, {})
        assert.equal(Date.parse(before.expires_at) - Date.parse(before.created_at), 30 * 60 * 1000)
        await ctx.services.merchants.updateMerchant(shop.uuid, { transactionTtlSeconds: 600 })
        const short = await pay(shop, {})
        assert.equal(Date.parse(short.expires_at) - Date.parse(short.created_at), 600 * 1000)
        await ctx.services.merchants.updateMerchant(shop.uuid, { transactionTtlSeconds: 7 * 86400 })
        const long = await pay(shop, { payment_method: 'p2p_card' })
        assert.equal(Date.parse(long.expires_at) - Date.parse(long.created_at), 7 * 86400 * 1000)
        const h2h = await call(ctx, 'GET', `/integration/transactions/${long.uuid}/h2h`, undefined, {
          as: { merchant: shop },
        })
        assert.equal(h2h.json().expires_at, long.expires_at)
        // Another merchant keeps the default.
        const other = await pay(ctx.merchant, {})
        assert.equal(Date.parse(other.expires_at) - Date.parse(other.created_at), 30 * 60 * 1000)
      })
    })
  })
}

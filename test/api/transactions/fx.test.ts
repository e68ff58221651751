import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { assertFields } from '../../helpers/assertions.ts'
import {
  backends,
  call,
  merchantSettledIn,
  postTransaction,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

// Market rates in the test context, units per 1 USDT: USD 1, EUR 0.92, RUB 92.15, JPY 151.2, KWD 0.307.
// Every expected figure below is worked out by hand in the comment above it.

/** One payment, optionally after setting the merchant's card fee, and the fields it must come out with. */
interface PaymentStep {
  /** The card fee set before paying: bps of the amount, and the merchant's share of it in bps. */
  fee?: { bps: number; share: number }
  amount: number
  currency: string
  expected: Record<string, unknown>
}

/** A test of its own: a new merchant, then its payments in order. */
interface PaymentCase {
  name: string
  merchant: string
  payments: PaymentStep[]
}

for (const backend of backends()) {
  describe(`transaction fees, FX and settlement (${backend})`, () => {
    const ctx = suiteContext(backend)

    // Each test uses its own merchant, so fees, markup and TTL set by one never leak into another.
    const pay = async (merchant: TestMerchant, overrides: Record<string, unknown>) => {
      const res = await postTransaction(ctx, overrides, { as: { merchant } })
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }

    /** Makes each payment in turn as `merchant`, pinning its listed fields; returns them as answered. */
    const payInSteps = async (merchant: TestMerchant, steps: PaymentStep[]) => {
      const paid = []
      for (const step of steps) {
        if (step.fee) await ctx.services.merchants.setFee(merchant.uuid, 'card', step.fee.bps, step.fee.share)
        const tx = await pay(merchant, { amount: step.amount, currency: step.currency })
        assertFields(tx, step.expected)
        paid.push(tx)
      }
      return paid
    }

    const runPaymentCases = (cases: PaymentCase[]) => {
      for (const c of cases) {
        it(c.name, async () => {
          await payInSteps(await ctx.newMerchant(c.merchant), c.payments)
        })
      }
    }

    describe('fees', () => {
      // One card fee on a RUB payment, settled in USDT; each case lists the fields it pins.
      runPaymentCases([
        {
          name: 'fee_payer merchant (share 10000): the merchant bears the whole fee',
          merchant: 'Fees merchant',
          payments: [
            {
              fee: { bps: 300, share: 10000 },
              amount: 100000,
              currency: 'RUB',
              expected: {
                fee_payer: 'merchant',
                merchant_fee_share_bps: 10000,
                // fee = 100000 × 300 / 10000 = 3000; merchant part = 3000 × 10000 / 10000 = 3000; customer 0
                fee_amount: 3000,
                merchant_fee_merchant_amount: 3000,
                merchant_fee_customer_amount: 0,
                // gross = 100000 + 0; net = 100000 − 3000 = 97000
                gross_amount: 100000,
                net_amount: 97000,
                // 970.00 RUB / 92.15 = 10.5263157…; floor in micro USDT = 10526315
                fx_rate: '92.15',
                settlement_amount: 10526315,
                settlement_amount_formatted: '10.526315 USDT',
              },
            },
          ],
        },
        {
          name: 'fee_payer customer (share 0): the customer pays the whole fee on top',
          merchant: 'Fees customer',
          payments: [
            {
              fee: { bps: 250, share: 0 },
              amount: 150000,
              currency: 'RUB',
              expected: {
                fee_payer: 'customer',
                merchant_fee_share_bps: 0,
                // fee = 150000 × 250 / 10000 = 3750; merchant part 0; customer part 3750
                fee_amount: 3750,
                merchant_fee_merchant_amount: 0,
                merchant_fee_customer_amount: 3750,
                // gross = 150000 + 3750 = 153750; net = 153750 − 3750 = 150000: the merchant nets the full amount
                gross_amount: 153750,
                net_amount: 150000,
                // 1500.00 / 92.15 = 16.2778079…; floor micro = 16277807
                settlement_amount: 16277807,
                settlement_amount_formatted: '16.277807 USDT',
              },
            },
          ],
        },
        {
          name: 'split: both roundings go half up at an exact .5',
          merchant: 'Fees split',
          payments: [
            {
              fee: { bps: 250, share: 5000 },
              amount: 150100,
              currency: 'RUB',
              expected: {
                fee_payer: 'split',
                merchant_fee_share_bps: 5000,
                // fee = 150100 × 250 / 10000 = 3752.5 → half up → 3753
                fee_amount: 3753,
                // merchant part = 3753 × 5000 / 10000 = 1876.5 → half up → 1877; customer = 3753 − 1877 = 1876
                merchant_fee_merchant_amount: 1877,
                merchant_fee_customer_amount: 1876,
                // gross = 150100 + 1876 = 151976; net = 151976 − 3753 = 148223
                gross_amount: 151976,
                net_amount: 148223,
                // 1482.23 / 92.15 = 16.0849701…; floor micro = 16084970
                settlement_amount: 16084970,
              },
            },
          ],
        },
        {
          name: 'split: a fee just below .5 rounds down',
          merchant: 'Fees split low',
          payments: [
            {
              fee: { bps: 250, share: 3333 },
              amount: 150099,
              currency: 'RUB',
              expected: {
                // fee = 150099 × 250 / 10000 = 3752.475 → 3752
                fee_amount: 3752,
                // merchant part = 3752 × 3333 / 10000 = 1250.5416 → 1251 (above half); customer = 3752 − 1251 = 2501
                merchant_fee_merchant_amount: 1251,
                merchant_fee_customer_amount: 2501,
                // gross = 150099 + 2501 = 152600; net = 152600 − 3752 = 148848
                gross_amount: 152600,
                net_amount: 148848,
              },
            },
          ],
        },
      ])

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
      runPaymentCases([
        {
          name: 'JPY (exponent 0)',
          merchant: 'Yen shop',
          payments: [
            {
              amount: 10000,
              currency: 'JPY',
              expected: {
                // ¥10000 / 151.2 = 66.1375661…; floor micro = 66137566
                fx_rate: '151.2',
                settlement_amount: 66137566,
                settlement_amount_formatted: '66.137566 USDT',
              },
            },
            {
              fee: { bps: 250, share: 5000 },
              amount: 1001,
              currency: 'JPY',
              expected: {
                // fee = 1001 × 250 / 10000 = 25.025 → 25; merchant = 25 × 5000 / 10000 = 12.5 → 13; customer 12
                fee_amount: 25,
                merchant_fee_merchant_amount: 13,
                merchant_fee_customer_amount: 12,
                // gross = 1001 + 12 = 1013; net = 1013 − 25 = 988; ¥988 / 151.2 = 6.5343915…; floor micro = 6534391
                gross_amount: 1013,
                net_amount: 988,
                settlement_amount: 6534391,
              },
            },
          ],
        },
        {
          name: 'KWD (exponent 3)',
          merchant: 'Dinar shop',
          payments: [
            {
              amount: 12345,
              currency: 'KWD',
              expected: {
                // 12345 minor = 12.345 KWD; 12.345 / 0.307 = 40.2117263…; floor micro = 40211726
                fx_rate: '0.307',
                net_amount: 12345,
                settlement_amount: 40211726,
                settlement_amount_formatted: '40.211726 USDT',
              },
            },
          ],
        },
        {
          name: 'USDT for a USDT-settled merchant: rate "1", settlement = net',
          merchant: 'Tether shop',
          payments: [
            {
              fee: { bps: 250, share: 5000 },
              amount: 5000000,
              currency: 'USDT',
              expected: {
                // fee = 5000000 × 250 / 10000 = 125000; halves 62500 / 62500; gross 5062500; net 4937500
                fee_amount: 125000,
                gross_amount: 5062500,
                net_amount: 4937500,
                fx_rate: '1',
                settlement_currency: 'USDT',
                settlement_amount: 4937500,
                settlement_amount_formatted: '4.937500 USDT',
              },
            },
          ],
        },
      ])

      it('the largest amount, 100000000000, loses no precision', async () => {
        const shop = await ctx.newMerchant('Big shop')
        const [, jpy] = await payInSteps(shop, [
          {
            fee: { bps: 250, share: 5000 },
            amount: 100000000000,
            currency: 'RUB',
            expected: {
              // fee = 10^11 × 250 / 10000 = 2500000000; halves 1250000000 each
              amount: 100000000000,
              fee_amount: 2500000000,
              merchant_fee_merchant_amount: 1250000000,
              merchant_fee_customer_amount: 1250000000,
              // gross = 10^11 + 1250000000 = 101250000000; net = 101250000000 − 2500000000 = 98750000000
              gross_amount: 101250000000,
              net_amount: 98750000000,
              // 987500000.00 RUB / 92.15 = 10716223.5485621…; floor micro = 10716223548562
              settlement_amount: 10716223548562,
              settlement_amount_formatted: '10716223.548562 USDT',
            },
          },
          {
            fee: { bps: 0, share: 10000 },
            amount: 100000000000,
            currency: 'JPY',
            expected: {
              // ¥10^11 / 151.2 = 661375661.3756613…; floor micro = 661375661375661
              settlement_amount: 661375661375661,
              settlement_amount_formatted: '661375661.375661 USDT',
            },
          },
        ])
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
        assertFields(rub, {
          fx_rate: '100.163043478261',
          settlement_currency: 'EUR',
          // 1500.00 / 100.163043478261 = 14.9755832…; floor cents = 1497
          settlement_amount: 1497,
          settlement_amount_formatted: '14.97 EUR',
        })

        const usd = await pay(shop, { amount: 1999, currency: 'USD' })
        // USD per EUR = 1 / 0.92 = 1.0869565217391…, to 12 places = 1.086956521739
        assert.equal(usd.fx_rate, '1.086956521739')
        // 19.99 / 1.086956521739 = 18.3908000…; floor cents = 1839
        assert.equal(usd.settlement_amount, 1839)

        const usdt = await pay(shop, { amount: 5000000, currency: 'USDT' })
        // USDT per EUR = 1 / 0.92 as well; 5.000000 / 1.086956521739 = 4.6000000000005…; floor cents = 460
        assertFields(usdt, {
          fx_rate: '1.086956521739',
          settlement_amount: 460,
          settlement_amount_formatted: '4.60 EUR',
        })

        const eur = await pay(shop, { amount: 4321, currency: 'EUR' })
        assertFields(eur, {
          fx_rate: '1',
          settlement_amount: 4321,
          settlement_amount_formatted: '43.21 EUR',
        })
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

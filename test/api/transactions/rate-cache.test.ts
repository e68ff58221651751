import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AppError } from '../../../src/http/errors.ts'
import { createRateService } from '../../../src/modules/rates/service.ts'
import { backends, call, eventually, newTransaction, type TestContext } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

/** The rate a new EUR payment is created at. */
async function eurRate(ctx: TestContext): Promise<string> {
  const res = await call(
    ctx,
    'POST',
    '/integration/transactions',
    newTransaction({ currency: 'EUR', amount: 1000 }),
  )
  assert.equal(res.statusCode, 201, res.body)
  return res.json().fx_rate
}

for (const backend of backends()) {
  describe(`market rates are read once per rateCacheMs (${backend})`, () => {
    const ctx = suiteContext(backend, { config: { rateCacheMs: 300 } })

    it('a rate changed elsewhere is seen within rateCacheMs; one set through the service at once', async () => {
      assert.equal(await eurRate(ctx), '0.92')
      // Another process (the operator command) changes the rate in the database.
      await ctx.db
        .updateTable('fx_rates')
        .set({ market_rate: '0.5', updated_at: new Date() })
        .where('currency', '=', 'EUR')
        .execute()
      await eventually(async () => (await eurRate(ctx)) === '0.5', 3000, 50)
      await ctx.services.rates.setMarketRate('EUR', '0.8')
      assert.equal(await eurRate(ctx), '0.8')
    })
  })

  describe(`a merchant rate derived from a snapshot (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('is derived per currency, settlement currency and markup, and its age is checked on every use', async () => {
      await ctx.services.rates.setMarketRate('EUR', '0.92')
      await ctx.services.rates.setMarketRate('JPY', '151.2')
      // The clock starts after the rates were set; one snapshot serves the whole test (the rates are not read
      // again), and what was derived from it is reused.
      let clock = Date.now()
      const rates = createRateService({
        db: ctx.db,
        config: { ...ctx.config, rateCacheMs: 3_600_000, fxMaxAgeSeconds: 600 },
        now: () => new Date(clock),
      })
      const pay = async (currency: string, settlement: string, bps: number) =>
        (await rates.merchantRate(currency, settlement, bps)).pay_in_rate
      for (let round = 0; round < 2; round++) {
        assert.equal(await pay('EUR', 'USDT', 0), '0.92')
        assert.equal(await pay('EUR', 'USDT', 100), '0.9292')
        assert.equal((await rates.merchantRate('EUR', 'USDT', 100)).payout_rate, '0.9108')
        assert.equal(await pay('JPY', 'USDT', 0), '151.2')
        assert.equal(await pay('USDT', 'EUR', 0), '1.086956521739')
        assert.equal(await pay('EUR', 'JPY', 0), '0.006084656085')
        assert.equal(await pay('JPY', 'EUR', 0), '164.347826086957')
      }

      clock += 601_000
      for (const [currency, settlement, bps] of [
        ['EUR', 'USDT', 0],
        ['EUR', 'USDT', 100],
        ['USDT', 'EUR', 0],
        ['EUR', 'JPY', 0],
      ] as const)
        await assert.rejects(
          rates.merchantRate(currency, settlement, bps),
          (error: unknown) => error instanceof AppError && error.code === 'fx_rate_unavailable',
          `${currency}/${settlement} at ${bps} bps`,
        )
    })
  })
}

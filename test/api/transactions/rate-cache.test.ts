import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AppError } from '../../../src/http/errors.ts'
import { createRateService } from '../../../src/modules/rates/service.ts'
import {
  backends,
  call,
  createTestContext,
  eventually,
  newTransaction,
  type TestContext,
} from '../../helpers/harness.ts'

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
    let ctx: TestContext
    before(async () => {
      ctx = await createTestContext(backend, { rateCacheMs: 300 })
    })
    after(() => ctx.close())

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
    let ctx: TestContext
    before(async () => {
      ctx = await createTestContext(backend)
    })
    after(() => ctx.close())

    it('is derived per markup, and its age is checked on every use, not only when it is derived', async () => {
      let clock = Date.now()
      // One snapshot for the whole test: the rates are not read again, and what was derived is reused.
      const rates = createRateService({
        db: ctx.db,
        config: { ...ctx.config, rateCacheMs: 3_600_000, fxMaxAgeSeconds: 600 },
        now: () => new Date(clock),
      })
      await ctx.services.rates.setMarketRate('EUR', '0.92')
      const plain = await rates.merchantRate('EUR', 'USDT', 0)
      const marked = await rates.merchantRate('EUR', 'USDT', 100)
      assert.equal(plain.pay_in_rate, '0.92')
      assert.equal(marked.pay_in_rate, '0.9292')
      assert.equal(marked.payout_rate, '0.9108')
      assert.equal((await rates.merchantRate('EUR', 'USDT', 0)).pay_in_rate, '0.92')
      assert.equal((await rates.merchantRate('USDT', 'EUR', 0)).pay_in_rate, '1.086956521739')

      clock += 601_000
      for (const bps of [0, 100])
        await assert.rejects(
          rates.merchantRate('EUR', 'USDT', bps),
          (error: unknown) => error instanceof AppError && error.code === 'fx_rate_unavailable',
        )
      // Rates that need no EUR are still usable.
      assert.equal((await rates.merchantRate('USDT', 'USDT', 0)).pay_in_rate, '1')
    })
  })
}

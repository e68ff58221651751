import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
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
}

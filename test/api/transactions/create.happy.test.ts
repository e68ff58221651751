import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { assertFields } from '../../helpers/assertions.ts'
import { backends, call, newTransaction, postTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

for (const backend of backends()) {
  describe(`create transaction (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('creates a card payment: 201, Location, fees, FX and settlement', async () => {
      await ctx.services.merchants.setFee(ctx.merchant.uuid, 'card', 250, 5000)
      const body = newTransaction({ amount: 150000, currency: 'RUB', metadata: { order: 'A-1' } })
      const res = await call(ctx, 'POST', '/integration/transactions', body)
      assert.equal(res.statusCode, 201, res.body)
      const tx = res.json()
      assert.equal(res.headers.location, `/integration/transactions/${tx.uuid}`)
      assert.match(tx.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      assertFields(tx, {
        status: 'pending',
        type: 'payment',
        // fee = 150000 × 250 / 10000 = 3750; merchant half 1875; customer 1875
        fee_amount: 3750,
        merchant_fee_merchant_amount: 1875,
        merchant_fee_customer_amount: 1875,
        fee_payer: 'split',
        gross_amount: 151875,
        net_amount: 148125,
        // floor(1481.25 / 92.15 USDT) in micro units = 16074335
        fx_rate: '92.15',
        settlement_currency: 'USDT',
        settlement_amount: 16074335,
        settlement_amount_formatted: '16.074335 USDT',
        metadata: { order: 'A-1' },
        requisites: null,
        h2h_url: null,
      })
      assert.match(tx.payment_url, /^http:\/\/gateway\.test\/pay\/[A-Za-z0-9_-]{22}$/)
      assert.equal(tx.aggregate_version, 1)
      assert.equal(tx.paid_at, null)
      assert.match(tx.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      assert.equal(Date.parse(tx.expires_at) - Date.parse(tx.created_at), 30 * 60 * 1000)
      assert.ok(res.headers['x-request-id'])
    })

    it('assigns requisites to host-to-host methods and serves them on the h2h view', async () => {
      const res = await postTransaction(ctx, { payment_method: 'p2p_card' })
      assert.equal(res.statusCode, 201, res.body)
      const tx = res.json()
      assert.equal(tx.requisites.card_number, '2200700112345678')
      assert.equal(tx.h2h_url, `http://gateway.test/integration/transactions/${tx.uuid}/h2h`)
      const h2h = await call(ctx, 'GET', `/integration/transactions/${tx.uuid}/h2h`)
      assert.equal(h2h.statusCode, 200)
      assert.deepEqual(Object.keys(h2h.json()).sort(), [
        'amount',
        'currency',
        'expires_at',
        'gross_amount',
        'payment_method',
        'requisites',
        'status',
        'uuid',
      ])
      assert.deepEqual(h2h.json().requisites, tx.requisites)
    })
  })
}

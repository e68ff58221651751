import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { acceptUnavailable, assertError } from '../../helpers/errors.ts'
import {
  backends,
  call,
  extId,
  merchantSettledIn,
  newTransaction,
  type TestContext,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

// Rates older than this are stale. An hour, not a minute: the suite's other rates, set when the context is
// made, must stay fresh however slow the machine; the stale ones are aged explicitly.
const FX_MAX_AGE_SECONDS = 3600

const create = (ctx: TestContext, body: unknown, as?: { merchant?: TestMerchant; mode?: 'test' | 'live' }) =>
  call(ctx, 'POST', '/integration/transactions', body, as ? { as } : {})

/** 422 validation_failed naming exactly `paths`, and nothing was created. */
async function assertInvalid(ctx: TestContext, body: Record<string, unknown>, paths: string[]) {
  const res = await create(ctx, body)
  const error = assertError(res, 422, 'validation_failed')
  assert.deepEqual(
    Object.keys(error.errors).sort(),
    [...paths].sort(),
    `${JSON.stringify(body).slice(0, 200)} → ${res.body}`,
  )
  for (const messages of Object.values(error.errors)) {
    assert.ok(Array.isArray(messages) && messages.length > 0)
    for (const message of messages as unknown[]) assert.equal(typeof message, 'string')
  }
  if (typeof body.external_id === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(body.external_id)) {
    const lookup = await call(ctx, 'GET', `/integration/transactions/by-external-id/${body.external_id}`)
    assert.equal(lookup.statusCode, 404, 'a refused request creates nothing')
  }
  return error
}

const ageRate = (ctx: TestContext, currency: string, seconds: number) =>
  ctx.db
    .updateTable('fx_rates')
    .set({ updated_at: new Date(Date.now() - seconds * 1000) })
    .where('currency', '=', currency)
    .executeTakeFirstOrThrow()

for (const backend of backends()) {
  describe(`create transaction: errors (${backend})`, () => {
    const ctx = suiteContext(backend, { config: { fxMaxAgeSeconds: FX_MAX_AGE_SECONDS } })

    describe('validation', () => {
      it('names every missing required field', async () => {
        const error = await assertInvalid(ctx, {}, ['amount', 'currency', 'payment_method', 'external_id'])
        assert.deepEqual(error.errors.amount, ['is required'])
        const { amount: _amount, ...noAmount } = newTransaction()
        await assertInvalid(ctx, noAmount, ['amount'])
        const { external_id: _ext, ...noExternalId } = newTransaction()
        await assertInvalid(ctx, noExternalId, ['external_id'])
      })

      it('refuses an unknown top-level field', async () => {
        const error = await assertInvalid(ctx, newTransaction({ amout: 100 }), ['amout'])
        assert.deepEqual(error.errors.amout, ['is not a recognised field'])
        await assertInvalid(ctx, newTransaction({ status: 'paid', fee_amount: 0 }), ['status', 'fee_amount'])
      })

      it('bounds amount to an integer in 1…100000000000, with no coercion', async () => {
        for (const amount of [0, -1, 100000000001, 1.5, '100', null, true, 1e21]) {
          await assertInvalid(ctx, newTransaction({ amount }), ['amount'])
        }
      })

      it('checks the types of currency and payment_method', async () => {
        await assertInvalid(ctx, newTransaction({ currency: '' }), ['currency'])
        await assertInvalid(ctx, newTransaction({ currency: 643 }), ['currency'])
        await assertInvalid(ctx, newTransaction({ payment_method: '' }), ['payment_method'])
        await assertInvalid(ctx, newTransaction({ payment_method: ['card'] }), ['payment_method'])
      })

      it('checks external_id: 1–64 of A-Z a-z 0-9 . _ : -', async () => {
        for (const external_id of ['a'.repeat(65), '', 'has space', 'a/b', 'ünïcode', 'a\nb', 'a%20b', 42]) {
          await assertInvalid(ctx, newTransaction({ external_id }), ['external_id'])
        }
      })

      it('bounds description to 500 characters', async () => {
        const error = await assertInvalid(ctx, newTransaction({ description: 'd'.repeat(501) }), [
          'description',
        ])
        // The real issue only, not the failed `null` branch of the nullable field.
        assert.deepEqual(error.errors.description, ['must NOT have more than 500 characters'])
        await assertInvalid(ctx, newTransaction({ description: 7 }), ['description'])
        // U+0000 cannot be stored in PostgreSQL text: a 422, never a 500.
        await assertInvalid(ctx, newTransaction({ description: 'a\u0000b' }), ['description'])
      })

      it('checks metadata: at most 20 string pairs, keys ≤ 40, values ≤ 500', async () => {
        const keys21 = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v']))
        await assertInvalid(ctx, newTransaction({ metadata: keys21 }), ['metadata'])
        const longKey = 'k'.repeat(41)
        await assertInvalid(ctx, newTransaction({ metadata: { [longKey]: 'v' } }), [`metadata.${longKey}`])
        await assertInvalid(ctx, newTransaction({ metadata: { note: 'v'.repeat(501) } }), ['metadata.note'])
        await assertInvalid(ctx, newTransaction({ metadata: { ok: 'fine', x: 1 } }), ['metadata.x'])
        await assertInvalid(ctx, newTransaction({ metadata: { x: { nested: 'no' } } }), ['metadata.x'])
        await assertInvalid(ctx, newTransaction({ metadata: { x: null } }), ['metadata.x'])
        await assertInvalid(ctx, newTransaction({ metadata: { k: 'a\u0000b' } }), ['metadata.k'])
        await assertInvalid(ctx, newTransaction({ metadata: { 'a\u0000': 'b' } }), ['metadata.a\u0000'])
        await assertInvalid(ctx, newTransaction({ metadata: ['a'] }), ['metadata'])
        await assertInvalid(ctx, newTransaction({ metadata: 'a=b' }), ['metadata'])
      })

      it('accepts only absolute http(s) URLs of at most 2048 characters', async () => {
        const tooLong = `https://shop.example/${'p'.repeat(2049 - 'https://shop.example/'.length)}`
        assert.equal(tooLong.length, 2049)
        for (const field of ['callback_url', 'success_url', 'fail_url']) {
          for (const url of [
            'ftp://shop.example/x',
            'javascript:alert(1)',
            '/relative/path',
            'shop.example/cb',
            'not a url',
            tooLong,
            '',
          ]) {
            await assertInvalid(ctx, newTransaction({ [field]: url }), [field])
          }
        }
      })

      it('accepts every bound at its limit', async () => {
        const external_id = `AZaz09._:-${'x'.repeat(54)}`
        assert.equal(external_id.length, 64)
        const url = `https://shop.example/${'p'.repeat(2048 - 'https://shop.example/'.length)}`
        assert.equal(url.length, 2048)
        const metadata = Object.fromEntries(
          Array.from({ length: 20 }, (_, i) => [
            `${String(i).padStart(2, '0')}${'k'.repeat(38)}`,
            'v'.repeat(500),
          ]),
        )
        const body = newTransaction({
          amount: 1,
          external_id,
          description: 'd'.repeat(500),
          metadata,
          callback_url: url,
          success_url: 'http://localhost:8080/ok?x=1#frag',
          fail_url: 'https://shop.example/fail',
        })
        const res = await create(ctx, body)
        assert.equal(res.statusCode, 201, res.body)
        const tx = res.json()
        assert.equal(tx.external_id, external_id)
        assert.equal(tx.amount, 1)
        assert.deepEqual(tx.metadata, metadata)
        assert.equal(tx.callback_url, url)
        assert.equal(tx.success_url, 'http://localhost:8080/ok?x=1#frag')
      })

      it('accepts null for every optional field and shows it as null, as when omitted', async () => {
        const nulls = {
          description: null,
          metadata: null,
          callback_url: null,
          success_url: null,
          fail_url: null,
        }
        const res = await create(ctx, newTransaction(nulls))
        assert.equal(res.statusCode, 201, res.body)
        const tx = res.json()
        for (const field of Object.keys(nulls)) assert.equal(tx[field], null, field)

        const { description: _d, ...minimal } = newTransaction()
        const omitted = await create(ctx, minimal)
        assert.equal(omitted.statusCode, 201, omitted.body)
        for (const field of Object.keys(nulls)) {
          assert.ok(field in omitted.json(), `${field} is present`)
          assert.equal(omitted.json()[field], null, field)
        }
      })
    })

    describe('currency and rates', () => {
      it('answers 422 unsupported_currency for an unknown code and for a real currency without a rate', async () => {
        for (const currency of ['XYZ', 'CHF', 'rub', 'US', 'R\u0000B']) {
          const error = assertError(
            await create(ctx, newTransaction({ currency })),
            422,
            'unsupported_currency',
          )
          assert.equal(error.details.currency, currency)
        }
      })

      it('answers 503 fx_rate_unavailable when the market rate is older than FX_MAX_AGE', async () => {
        try {
          await ageRate(ctx, 'KWD', FX_MAX_AGE_SECONDS + 60)
          const body = newTransaction({ currency: 'KWD', amount: 1000 })
          const error = await acceptUnavailable(ctx, await create(ctx, body), 'fx_rate_unavailable')
          assert.equal(error.details.currency, 'KWD')
          const lookup = await call(
            ctx,
            'GET',
            `/integration/transactions/by-external-id/${body.external_id}`,
          )
          assert.equal(lookup.statusCode, 404, 'nothing was created')

          // Other currencies are unaffected.
          assert.equal((await create(ctx, newTransaction({ currency: 'RUB' }))).statusCode, 201)

          // Within the limit the same rate is usable.
          await ageRate(ctx, 'KWD', FX_MAX_AGE_SECONDS - 60)
          const fresh = await create(ctx, newTransaction({ currency: 'KWD', amount: 1000 }))
          assert.equal(fresh.statusCode, 201, fresh.body)
          assert.equal(fresh.json().fx_rate, '0.307')
        } finally {
          await ctx.services.rates.setMarketRate('KWD', '0.307')
        }
      })

      it('answers 503 when the rate of the merchant settlement currency is stale', async () => {
        const eurShop = await merchantSettledIn(ctx, 'EUR')
        try {
          await ageRate(ctx, 'EUR', FX_MAX_AGE_SECONDS + 60)
          const res = await create(ctx, newTransaction({ currency: 'RUB' }), { merchant: eurShop })
          const error = await acceptUnavailable(ctx, res, 'fx_rate_unavailable')
          assert.equal(error.details.currency, 'EUR')
          // A USDT-settled merchant does not need the EUR rate for a RUB payment.
          assert.equal((await create(ctx, newTransaction({ currency: 'RUB' }))).statusCode, 201)
        } finally {
          await ctx.services.rates.setMarketRate('EUR', '0.92')
        }
        const after = await create(ctx, newTransaction({ currency: 'RUB' }), { merchant: eurShop })
        assert.equal(after.statusCode, 201, after.body)
      })
    })

    describe('payment methods', () => {
      it('answers 422 unsupported_payment_method for an unknown method', async () => {
        for (const payment_method of ['crypto', 'CARD', 'p2p-card']) {
          const error = assertError(
            await create(ctx, newTransaction({ payment_method })),
            422,
            'unsupported_payment_method',
          )
          assert.deepEqual(error.details.supported, ['card', 'p2p_card', 'bank_transfer', 'usdt_erc20'])
        }
      })

      it('answers 422 unsupported_payment_method for p2p_card when its requisites pool has no active rows', async () => {
        const body = newTransaction({ payment_method: 'p2p_card' })
        try {
          await ctx.db
            .updateTable('requisites')
            .set({ active: false })
            .where('payment_method', '=', 'p2p_card')
            .execute()
          assertError(await create(ctx, body), 422, 'unsupported_payment_method')
          const lookup = await call(
            ctx,
            'GET',
            `/integration/transactions/by-external-id/${body.external_id}`,
          )
          assert.equal(lookup.statusCode, 404, 'nothing was created')
          // The other pool still serves its method.
          const bank = await create(ctx, newTransaction({ payment_method: 'bank_transfer' }))
          assert.equal(bank.statusCode, 201, bank.body)
        } finally {
          await ctx.db
            .updateTable('requisites')
            .set({ active: true })
            .where('payment_method', '=', 'p2p_card')
            .execute()
        }
        // The refused attempt left nothing behind: the same external_id now succeeds.
        const retry = await create(ctx, body)
        assert.equal(retry.statusCode, 201, retry.body)
        assert.equal(retry.json().requisites.card_number, '2200700112345678')
      })
    })

    describe('external_id uniqueness', () => {
      it('answers 409 conflict for a duplicate external_id of the same merchant and mode', async () => {
        const body = newTransaction()
        const first = await create(ctx, body)
        assert.equal(first.statusCode, 201, first.body)
        // Even with different other fields: external_id alone identifies the order.
        const error = assertError(await create(ctx, { ...body, amount: 999 }), 409, 'conflict')
        assert.equal(error.details.external_id, body.external_id)
        const stored = await call(ctx, 'GET', `/integration/transactions/by-external-id/${body.external_id}`)
        assert.deepEqual(stored.json(), first.json(), 'the original is unchanged')
      })

      it('allows the same external_id in the other mode and for another merchant', async () => {
        const external_id = extId('shared')
        const test = await create(ctx, newTransaction({ external_id }))
        assert.equal(test.statusCode, 201, test.body)
        const live = await create(ctx, newTransaction({ external_id }), { mode: 'live' })
        assert.equal(live.statusCode, 201, live.body)
        assert.equal(live.json().mode, 'live')
        const other = await create(ctx, newTransaction({ external_id }), { merchant: ctx.other })
        assert.equal(other.statusCode, 201, other.body)
        assert.equal(new Set([test.json().uuid, live.json().uuid, other.json().uuid]).size, 3)
        // Each scope now has its own, and a repeat in any of them conflicts.
        assertError(await create(ctx, newTransaction({ external_id }), { mode: 'live' }), 409, 'conflict')
        assertError(
          await create(ctx, newTransaction({ external_id }), { merchant: ctx.other }),
          409,
          'conflict',
        )
      })
    })
  })
}

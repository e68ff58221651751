import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { before, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { Webhook } from 'standardwebhooks'
import type { Mode } from '../../../src/db/types.ts'
import { onePageMeta } from '../../helpers/assertions.ts'
import { acceptUnavailable, assertError } from '../../helpers/errors.ts'
import {
  backends,
  call,
  eventually,
  newTransaction,
  paidTransaction,
  startReceiver,
  type TestContext,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { newPayout, TRC20 } from '../../helpers/payouts.ts'
import { payoutCallbacks } from '../../helpers/rows.ts'
import { FAST_WORKERS, suiteContext, suiteReceiver, suiteWorkers } from '../../helpers/suite.ts'
import { deliveryRows } from '../webhooks/helpers.ts'

// Market rates in the test context, units per 1 USDT: USD 1, EUR 0.92, RUB 92.15, JPY 151.2, KWD 0.307.
// Every expected figure below is worked out by hand in the comment above it (docs/API.md, Payouts):
//   payout_rate = market × (1 − markup_bps / 10000)
//   amount_usdt_micro = ceil(amount in major units / payout_rate) in micro USDT
//   fee = round_half_up(amount_usdt_micro × payout_fee_bps / 10000) + payout_fixed_fee_micro
//   payout_usdt_amount_micro = amount_usdt_micro + fee

/** Rates older than this are stale (an hour: the context's own rates stay fresh however slow the machine). */
const FX_MAX_AGE_SECONDS = 3600

const ERC20 = { address: '0x52908400098527886E0F7030069857D2E4169EE7', network: 'ERC20' }
const VISA = '4111111111111111'
const VISA_MASKED = '411111******1111'
/** The sandbox provider declines this card (SANDBOX_DECLINED_CARD; Luhn-valid). */
const DECLINED_CARD = '4000000000000002'
const cardTo = (number: string, holder = 'JANE DOE') => ({ card_number: number, holder_name: holder })

/** 1000.00 USD at USD 1 with no pay-in fee settles 1000 USDT, available at once in test mode. */
const FUNDED_MICRO = 1_000_000_000

/** Merchant terms: a 150 bps FX markup and a 250 bps + 0.5 USDT payout fee. */
const MARKUP_150_FEE_250_BPS_HALF_USDT = { fxMarkupBps: 150, payoutFeeBps: 250, payoutFixedFeeMicro: 500_000 }
/** Merchant terms: a 1% + 0.25 USDT payout fee. */
const FEE_100_BPS_QUARTER_USDT = { payoutFeeBps: 100, payoutFixedFeeMicro: 250_000 }

let keyCounter = 0
const idem = () => `payout-${Date.now()}-${keyCounter++}`

interface Balance {
  available: number
  pending: number
  reserved: number
  total: number
}

/** A USDT balance with nothing pending (test-mode pay-ins are available at once), in micro USDT. */
const usdtBalance = (available: number, reserved: number, total: number): Balance => ({
  available,
  pending: 0,
  reserved,
  total,
})

/** 422 validation_failed naming exactly `paths`. */
function assertInvalid(res: LightMyRequestResponse, paths: string[]) {
  const error = assertError(res, 422, 'validation_failed')
  assert.deepEqual(Object.keys(error.errors).sort(), [...paths].sort(), res.body)
  return error
}

const isIso = (value: unknown) =>
  typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(value)

/** The payout's fx block but for fx_rate_updated_at (a time that tests check apart where they care). */
function assertFxFigures(payout: { fx: Record<string, unknown> }, expected: Record<string, unknown>) {
  const { fx_rate_updated_at: _time, ...figures } = payout.fx
  assert.deepEqual(figures, expected)
}

/** Helpers bound to one context. */
function helpers(get: () => TestContext) {
  const h = {
    /** Pays `amount` USD cents in through the sandbox; test-mode money is available at once. */
    async fund(merchant: TestMerchant, amount = 100000, mode: Mode = 'test') {
      const paid = await paidTransaction(
        get(),
        { amount, currency: 'USD', payment_method: 'card' },
        { merchant, mode },
      )
      assert.equal(paid.status, 'paid')
    },
    /** A fresh merchant with 1000 USDT available in test mode. */
    async funded(name: string, amount = 100000) {
      const m = await get().newMerchant(name)
      await h.fund(m, amount)
      return m
    },
    create(merchant: TestMerchant, body: unknown, options: { key?: string; mode?: Mode } = {}) {
      return call(get(), 'POST', '/integration/payouts', body, {
        as: { merchant, mode: options.mode ?? 'test' },
        auth: 'signature',
        idempotencyKey: options.key ?? idem(),
      })
    },
    /** Creates a payout and expects 201. */
    async created(merchant: TestMerchant, overrides: Record<string, unknown> = {}, mode: Mode = 'test') {
      const res = await h.create(merchant, newPayout(overrides), { mode })
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    },
    quote(merchant: TestMerchant, query: Record<string, string | number>, mode: Mode = 'test') {
      const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))
      return call(get(), 'GET', `/integration/payouts/quote?${qs}`, undefined, { as: { merchant, mode } })
    },
    async balance(merchant: TestMerchant, mode: Mode = 'test'): Promise<Balance> {
      const res = await call(get(), 'GET', '/integration/balances', undefined, { as: { merchant, mode } })
      assert.equal(res.statusCode, 200, res.body)
      const row = res.json().data.find((r: { currency: string }) => r.currency === 'USDT')
      assert.ok(row, res.body)
      return { available: row.available, pending: row.pending, reserved: row.reserved, total: row.total }
    },
    simulate(merchant: TestMerchant, uuid: string, outcome: 'completed' | 'failed', mode: Mode = 'test') {
      return call(get(), 'POST', `/integration/sandbox/payouts/${uuid}/${outcome}`, undefined, {
        as: { merchant, mode },
      })
    },
    getPayout(merchant: TestMerchant, uuid: string, mode: Mode = 'test') {
      return call(get(), 'GET', `/integration/payouts/${uuid}`, undefined, { as: { merchant, mode } })
    },
    payoutRows: (merchant: TestMerchant) =>
      get().db.selectFrom('payouts').selectAll().where('merchant_uuid', '=', merchant.uuid).execute(),
    events: (uuid: string) =>
      get()
        .db.selectFrom('events')
        .selectAll()
        .where('aggregate_uuid', '=', uuid)
        .orderBy('aggregate_version')
        .execute(),
    callbacks: async (uuid: string) =>
      (await payoutCallbacks(get().db, uuid)).map((c) => [c.outcome, c.result, c.from_status, c.to_status]),
    /** The payout's events, oldest first, as [event, aggregate_version]. */
    eventTrail: async (uuid: string) =>
      (await h.events(uuid)).map((e) => [e.event, e.aggregate_version] as [string, number]),
    /**
     * A payout that failed straight from pending (as `payout` answers it): a reason and a time, the whole
     * 1000 USDT back in available, one applied callback, one event, a sound ledger.
     */
    async assertFailedFromPending(
      merchant: TestMerchant,
      payout: Record<string, unknown> & { uuid: string },
    ) {
      assert.deepEqual([payout.status, payout.aggregate_version], ['failed', 2])
      assert.ok(typeof payout.failure_reason === 'string' && payout.failure_reason.length > 0)
      assert.ok(isIso(payout.failed_at))
      assert.deepEqual(await h.balance(merchant), usdtBalance(FUNDED_MICRO, 0, FUNDED_MICRO))
      assert.deepEqual(await h.callbacks(payout.uuid), [['failed', 'applied', 'pending', 'failed']])
      assert.deepEqual(await h.eventTrail(payout.uuid), [['payout.failed', 2]])
      assert.equal((await get().services.ledger.verify()).ok, true)
    },
  }
  return h
}

for (const backend of backends()) {
  describe(`payouts (${backend})`, () => {
    const ctx = suiteContext(backend, { config: { fxMaxAgeSeconds: FX_MAX_AGE_SECONDS } })
    const h = helpers(() => ctx)

    describe('quote', () => {
      it('RUB at 92.15 with a 150 bps markup and a 250 bps + 0.5 USDT fee; the figures hold 60 s', async () => {
        const m = await ctx.newMerchant('Quote')
        await ctx.services.merchants.updateMerchant(m.uuid, MARKUP_150_FEE_250_BPS_HALF_USDT)
        const sentAt = Date.now()
        const res = await h.quote(m, { amount: 1_000_000, currency: 'RUB', method: 'card' })
        const receivedAt = Date.now()
        assert.equal(res.statusCode, 200, res.body)
        const q = res.json()
        assert.deepEqual(Object.keys(q).sort(), [
          'amount',
          'amount_usdt_micro',
          'currency',
          'expires_at',
          'fee_usdt_micro',
          'fx_rate',
          'method',
          'payout_usdt_amount_micro',
          'quote_id',
        ])
        assert.match(q.quote_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/)
        assert.deepEqual([q.amount, q.currency, q.method], [1_000_000, 'RUB', 'card'])
        // payout_rate = 92.15 × (1 − 0.015) = 92.15 × 0.985 = 90.76775
        assert.equal(q.fx_rate, '90.76775')
        // 10000.00 RUB / 90.76775 = 110.1712887… USDT → ceil micro 110171289
        assert.equal(q.amount_usdt_micro, 110_171_289)
        // 110171289 × 250 / 10000 = 2754282.225 → 2754282; + 500000 fixed = 3254282
        assert.equal(q.fee_usdt_micro, 3_254_282)
        // 110171289 + 3254282 = 113425571
        assert.equal(q.payout_usdt_amount_micro, 113_425_571)
        assert.ok(isIso(q.expires_at), q.expires_at)
        const expires = Date.parse(q.expires_at)
        assert.ok(
          expires >= sentAt + 60_000 && expires <= receivedAt + 60_000,
          `expires_at ${q.expires_at} is 60 s after the request`,
        )
        const row = await ctx.db
          .selectFrom('payout_quotes')
          .selectAll()
          .where('uuid', '=', q.quote_id)
          .executeTakeFirstOrThrow()
        assert.equal(row.expires_at.getTime() - row.created_at.getTime(), 60_000)
        assert.deepEqual([row.merchant_uuid, row.mode], [m.uuid, 'test'])
      })

      it('the fee rounds half up, for currencies of exponent 0, 2 and 3, and for USDT itself', async () => {
        const m = await ctx.newMerchant('Half up')
        await ctx.services.merchants.updateMerchant(m.uuid, { payoutFeeBps: 5000 })
        const figures = async (amount: number, currency: string) => {
          const res = await h.quote(m, { amount, currency, method: 'usdt_wallet' })
          assert.equal(res.statusCode, 200, res.body)
          const q = res.json()
          return [q.fx_rate, q.amount_usdt_micro, q.fee_usdt_micro, q.payout_usdt_amount_micro]
        }
        // 1.01 RUB / 92.15 = 0.0109603906… → ceil 10961; fee 10961 × 0.5 = 5480.5 → 5481; total 16442
        assert.deepEqual(await figures(101, 'RUB'), ['92.15', 10961, 5481, 16442])
        // 1000 JPY / 151.2 = 6.6137566… → ceil 6613757; fee 3306878.5 → 3306879; total 9920636
        assert.deepEqual(await figures(1000, 'JPY'), ['151.2', 6_613_757, 3_306_879, 9_920_636])
        // 1.000 KWD / 0.307 = 3.2573289… → ceil 3257329; fee 1628664.5 → 1628665; total 4885994
        assert.deepEqual(await figures(1000, 'KWD'), ['0.307', 3_257_329, 1_628_665, 4_885_994])
        // 12.345678 USDT is itself: fee 6172839; total 18518517
        assert.deepEqual(await figures(12_345_678, 'USDT'), ['1', 12_345_678, 6_172_839, 18_518_517])
      })

      it('422 for a bad amount or method; unsupported_currency for a currency without a rate', async () => {
        const base = { amount: 1000, currency: 'RUB', method: 'card' }
        for (const amount of ['0', '-1', '1.5', 'abc', '100000000001']) {
          assertInvalid(await h.quote(ctx.merchant, { ...base, amount }), ['amount'])
        }
        for (const method of ['bank_transfer', 'CARD', '']) {
          assertInvalid(await h.quote(ctx.merchant, { ...base, method }), ['method'])
        }
        const { method: _method, ...noMethod } = base
        assertInvalid(await h.quote(ctx.merchant, noMethod), ['method'])
        for (const currency of ['ZZZ', 'BTC']) {
          const error = assertError(
            await h.quote(ctx.merchant, { ...base, currency }),
            422,
            'unsupported_currency',
          )
          assert.equal(error.details.currency, currency)
        }
      })

      it('503 fx_rate_unavailable for a stale rate, on quote and create; a quote made before still holds', async () => {
        const m = await h.funded('Stale')
        const early = (await h.quote(m, { amount: 10000, currency: 'JPY', method: 'usdt_wallet' })).json()
        try {
          await ctx.db
            .updateTable('fx_rates')
            .set({ updated_at: new Date(Date.now() - (FX_MAX_AGE_SECONDS + 60) * 1000) })
            .where('currency', '=', 'JPY')
            .executeTakeFirstOrThrow()
          const quoted = await h.quote(m, { amount: 10000, currency: 'JPY', method: 'usdt_wallet' })
          const error = await acceptUnavailable(ctx, quoted, 'fx_rate_unavailable')
          assert.equal(error.details.currency, 'JPY')

          const key = idem()
          const body = newPayout({ amount: 10000, currency: 'JPY' })
          await acceptUnavailable(ctx, await h.create(m, body, { key }), 'fx_rate_unavailable')
          assert.equal((await h.payoutRows(m)).length, 0, 'nothing was created')
          assert.deepEqual(await h.balance(m), usdtBalance(FUNDED_MICRO, 0, FUNDED_MICRO))
          // Other currencies are unaffected.
          assert.equal((await h.quote(m, { amount: 100, currency: 'RUB', method: 'card' })).statusCode, 200)

          // The quote made while the rate was fresh holds its figures for its 60 s.
          const held = await h.create(
            m,
            newPayout({ amount: 10000, currency: 'JPY', quote_id: early.quote_id }),
          )
          assert.equal(held.statusCode, 201, held.body)
          // 10000 JPY / 151.2 = 66.137566… → ceil 66137567 micro, no fee
          assert.equal(held.json().payout_usdt_amount_micro, 66_137_567)
          assert.equal(held.json().fx.fx_rate, '151.2')

          // A 503 does not keep its Idempotency-Key: once the rate is fresh the same request goes through.
          await ctx.services.rates.setMarketRate('JPY', '151.2')
          const retried = await h.create(m, body, { key })
          assert.equal(retried.statusCode, 201, retried.body)
          assert.equal(retried.headers['idempotent-replayed'], undefined)
        } finally {
          await ctx.services.rates.setMarketRate('JPY', '151.2')
        }
      })
    })

    describe('create', () => {
      it('without a quote: 201 processing at version 2, Location, and the total reserved from available', async () => {
        const m = await h.funded('Create')
        await ctx.services.merchants.updateMerchant(m.uuid, FEE_100_BPS_QUARTER_USDT)
        const body = newPayout({ amount: 10000, metadata: { order: '1001' } })
        const res = await h.create(m, body)
        assert.equal(res.statusCode, 201, res.body)
        const p = res.json()
        assert.equal(res.headers.location, `/integration/payouts/${p.uuid}`)
        assert.match(p.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/)
        assert.deepEqual(
          [p.merchant_uuid, p.mode, p.external_id, p.amount, p.currency, p.method, p.status],
          [m.uuid, 'test', body.external_id, 10000, 'USD', 'usdt_wallet', 'processing'],
        )
        assert.equal(p.aggregate_version, 2)
        assert.deepEqual(p.destination, TRC20)
        assert.deepEqual(p.metadata, { order: '1001' })
        assert.deepEqual(
          [p.callback_url, p.failure_reason, p.quote_id, p.completed_at, p.failed_at, p.card_payout],
          [null, null, null, null, null, null],
        )
        assert.deepEqual(
          { ...p.wallet, uuid: undefined },
          {
            uuid: undefined,
            type: 'TRC20',
            address: TRC20.address,
            label: 'USDT TRC20',
          },
        )
        assert.match(p.wallet.uuid, /^[0-9a-f-]{36}$/)
        // 100.00 USD / 1 = 100 USDT = 100000000 micro; fee 100000000 × 100 / 10000 = 1000000 + 250000 = 1250000
        // total 101250000
        assert.equal(p.payout_usdt_amount_micro, 101_250_000)
        assertFxFigures(p, {
          fx_rate: '1',
          amount_usdt_micro: '100000000',
          fee_usdt_micro: '1250000',
          payout_usdt_amount_micro: '101250000',
        })
        assert.ok(isIso(p.fx.fx_rate_updated_at))
        assert.ok(isIso(p.created_at) && isIso(p.updated_at))

        // 1000000000 − 101250000 = 898750000 available; 101250000 reserved; the total is unchanged.
        assert.deepEqual(await h.balance(m), usdtBalance(898_750_000, 101_250_000, FUNDED_MICRO))
        const got = await h.getPayout(m, p.uuid)
        assert.equal(got.statusCode, 200)
        assert.deepEqual(got.json(), p)
        assert.deepEqual(await h.callbacks(p.uuid), [['processing', 'applied', 'pending', 'processing']])
        assert.equal((await ctx.services.ledger.verify()).ok, true)
      })

      it('with quote_id: the quote figures, even after the market rate moved', async () => {
        const m = await h.funded('Quoted')
        await ctx.services.merchants.updateMerchant(m.uuid, MARKUP_150_FEE_250_BPS_HALF_USDT)
        const q = (await h.quote(m, { amount: 1_000_000, currency: 'RUB', method: 'usdt_wallet' })).json()
        try {
          await ctx.services.rates.setMarketRate('RUB', '100')
          // The market moved: a new quote is at 100 × 0.985 = 98.5; 10000 / 98.5 = 101.5228426… → 101522843;
          // fee 101522843 × 0.025 = 2538071.075 → 2538071 + 500000 = 3038071; total 104560914.
          const now = (await h.quote(m, { amount: 1_000_000, currency: 'RUB', method: 'usdt_wallet' })).json()
          assert.deepEqual(
            [now.fx_rate, now.amount_usdt_micro, now.fee_usdt_micro, now.payout_usdt_amount_micro],
            ['98.5', 101_522_843, 3_038_071, 104_560_914],
          )
          const res = await h.create(
            m,
            newPayout({ amount: 1_000_000, currency: 'RUB', quote_id: q.quote_id }),
          )
          assert.equal(res.statusCode, 201, res.body)
          const p = res.json()
          // The quote's figures (see the quote test): 90.76775, 110171289 + 3254282 = 113425571.
          assert.equal(p.quote_id, q.quote_id)
          assertFxFigures(p, {
            fx_rate: '90.76775',
            amount_usdt_micro: '110171289',
            fee_usdt_micro: '3254282',
            payout_usdt_amount_micro: '113425571',
            quote_id: q.quote_id,
          })
          assert.equal(p.payout_usdt_amount_micro, 113_425_571)
          // 1000000000 − 113425571 = 886574429
          assert.deepEqual(await h.balance(m), usdtBalance(886_574_429, 113_425_571, FUNDED_MICRO))
        } finally {
          await ctx.services.rates.setMarketRate('RUB', '92.15')
        }
      })

      it("quote_id: expired, another merchant's or mode's, or unknown → 422 quote_expired; for another amount or method → 422 on quote_id", async () => {
        const m = await h.funded('Quote misuse')
        const query = { amount: 5000, currency: 'USD', method: 'usdt_wallet' }
        const body = (quoteId: string, overrides = {}) =>
          newPayout({ amount: 5000, currency: 'USD', quote_id: quoteId, ...overrides })

        const expired = (await h.quote(m, query)).json()
        await ctx.db
          .updateTable('payout_quotes')
          .set({ expires_at: new Date(Date.now() - 1000) })
          .where('uuid', '=', expired.quote_id)
          .executeTakeFirstOrThrow()
        const theirs = (await h.quote(ctx.other, query)).json()
        const live = (await h.quote(m, query, 'live')).json()
        const unknown = globalThis.crypto.randomUUID()
        for (const quoteId of [expired.quote_id, theirs.quote_id, live.quote_id, unknown]) {
          const error = assertError(await h.create(m, body(quoteId)), 422, 'quote_expired')
          assert.equal(error.details.quote_id, quoteId)
        }

        const mine = (await h.quote(m, query)).json()
        for (const overrides of [
          { amount: 5001 },
          { currency: 'EUR' },
          { method: 'card', destination: cardTo(VISA) },
        ]) {
          const error = assertInvalid(await h.create(m, body(mine.quote_id, overrides)), ['quote_id'])
          assert.equal(error.errors.quote_id.length, 1)
        }
        assert.equal((await h.payoutRows(m)).length, 0, 'nothing was created')
        assert.deepEqual(await h.balance(m), usdtBalance(FUNDED_MICRO, 0, FUNDED_MICRO))
        // The quote itself is still good for what it was made for.
        const ok = await h.create(m, body(mine.quote_id))
        assert.equal(ok.statusCode, 201, ok.body)
        assert.equal(ok.json().quote_id, mine.quote_id)
      })

      it('a card payout: masked number, brand and last four; spaces in the number are accepted', async () => {
        const m = await h.funded('Card')
        const p = await h.created(m, {
          method: 'card',
          destination: cardTo('5555 5555 5555 4444', ' Ann Lee '),
        })
        assert.deepEqual(p.destination, { card_number: '555555******4444', holder_name: 'Ann Lee' })
        assert.deepEqual(p.card_payout, {
          card_number: '555555******4444',
          holder_name: 'Ann Lee',
          brand: 'mastercard',
          last4: '4444',
        })
        assert.equal(p.wallet, null)
        const visa = await h.created(m, { method: 'card', destination: cardTo(VISA) })
        assert.deepEqual(visa.card_payout, {
          card_number: VISA_MASKED,
          holder_name: 'JANE DOE',
          brand: 'visa',
          last4: '1111',
        })
        const erc = await h.created(m, { destination: ERC20 })
        assert.deepEqual(erc.wallet.type, 'ERC20')
        assert.deepEqual(erc.wallet.label, 'USDT ERC20')
        assert.deepEqual(erc.destination, ERC20)
      })

      it('destination checks: 422 validation_failed under destination.<field>; a card number is never echoed', async () => {
        const m = await h.funded('Destinations')
        const card = (destination: Record<string, string>) => newPayout({ method: 'card', destination })
        const wallet = (destination: Record<string, string>) => newPayout({ destination })
        const cases: [unknown, string[]][] = [
          [card(cardTo('4111111111111112')), ['destination.card_number']],
          [card(cardTo('41111111111111a1')), ['destination.card_number']],
          [card(cardTo('41111111111')), ['destination.card_number']],
          [card({ card_number: VISA }), ['destination.holder_name']],
          [card({ card_number: VISA, holder_name: '   ' }), ['destination.holder_name']],
          [card({ ...cardTo(VISA), cvv: '123' }), ['destination.cvv']],
          [card({}), ['destination.card_number', 'destination.holder_name']],
          [
            card(TRC20),
            [
              'destination.address',
              'destination.network',
              'destination.card_number',
              'destination.holder_name',
            ],
          ],
          [wallet({ ...TRC20, memo: 'x' }), ['destination.memo']],
          [wallet({ ...TRC20, network: 'BEP20' }), ['destination.network']],
          [wallet({ address: TRC20.address }), ['destination.network']],
          [wallet({ network: 'TRC20' }), ['destination.address']],
          // base58 has no 0, O, I or l; a TRON address is T + 33 characters
          [wallet({ ...TRC20, address: `T${'0'.repeat(33)}` }), ['destination.address']],
          [wallet({ ...TRC20, address: TRC20.address.slice(0, -1) }), ['destination.address']],
          [wallet({ ...TRC20, address: ERC20.address }), ['destination.address']],
          [wallet({ ...ERC20, address: ERC20.address.slice(0, -1) }), ['destination.address']],
          [wallet({ ...ERC20, address: `0x${'g'.repeat(40)}` }), ['destination.address']],
          [wallet({ ...ERC20, address: TRC20.address }), ['destination.address']],
        ]
        for (const [body, paths] of cases) {
          const res = await h.create(m, body)
          assertInvalid(res, paths)
          const number = (body as { destination: { card_number?: string } }).destination.card_number
          if (number) assert.ok(!res.body.includes(number), `the card number is echoed: ${res.body}`)
        }
        assert.equal((await h.payoutRows(m)).length, 0)
        assert.equal((await h.balance(m)).available, FUNDED_MICRO)

        // A refusal of the request's content does not keep the Idempotency-Key: the corrected request may use it.
        const key = idem()
        const first = newPayout({ method: 'card', destination: cardTo('4111111111111112') })
        assertInvalid(await h.create(m, first, { key }), ['destination.card_number'])
        const fixed = await h.create(m, { ...first, destination: cardTo(VISA) }, { key })
        assert.equal(fixed.statusCode, 201, fixed.body)
      })

      it('the full card number is never stored, sent or logged: only 411111******1111', async () => {
        const m = await h.funded('Card secrecy')
        // Deliveries are written (and stay pending: no dispatcher runs here), so their bodies can be read.
        const put = await call(
          ctx,
          'PUT',
          '/integration/webhook',
          { url: 'http://127.0.0.1:9/hooks' },
          {
            as: { merchant: m },
          },
        )
        assert.equal(put.statusCode, 200, put.body)
        const spaced = '4111 1111 1111 1111'
        const bodies = [
          newPayout({ method: 'card', destination: cardTo(VISA) }),
          newPayout({ method: 'card', destination: cardTo(spaced) }),
        ]
        const created = await h.create(m, bodies[0])
        assert.equal(created.statusCode, 201, created.body)
        const p = created.json()
        const second = await h.create(m, bodies[1])
        assert.equal(second.statusCode, 201, second.body)
        assert.equal((await h.simulate(m, p.uuid, 'completed')).statusCode, 200)

        const got = await h.getPayout(m, p.uuid)
        const list = await call(ctx, 'GET', '/integration/payouts', undefined, { as: { merchant: m } })
        const tables = {
          payouts: await h.payoutRows(m),
          events: await ctx.db
            .selectFrom('events')
            .selectAll()
            .where('merchant_uuid', '=', m.uuid)
            .where('aggregate_type', '=', 'payout')
            .execute(),
          webhook_deliveries: await ctx.db
            .selectFrom('webhook_deliveries')
            .selectAll()
            .where('merchant_uuid', '=', m.uuid)
            .execute(),
          idempotency_keys: await ctx.db
            .selectFrom('idempotency_keys')
            .selectAll()
            .where('merchant_uuid', '=', m.uuid)
            .execute(),
          payout_callbacks: await ctx.db
            .selectFrom('payout_callbacks')
            .selectAll()
            .where('payout_uuid', 'in', [p.uuid, second.json().uuid])
            .execute(),
        }
        // Each place holds the payouts at all (so the absence below means something).
        assert.equal(tables.payouts.length, 2)
        assert.equal(tables.events.length, 3, 'processing × 2 and completed')
        assert.equal(tables.webhook_deliveries.length, 3)
        assert.equal(tables.idempotency_keys.length, 2)
        const places: [string, string][] = [
          ['create response', created.body],
          ['second create response', second.body],
          ['GET', got.body],
          ['list', list.body],
          ...Object.entries(tables).map(([name, rows]) => [name, JSON.stringify(rows)] as [string, string]),
        ]
        for (const [name, text] of places) {
          assert.ok(!text.includes(VISA), `${name} holds the full card number`)
          assert.ok(!text.includes(spaced), `${name} holds the full card number as sent`)
        }
        // A delivery keeps no body of its own (it sends its event's); a provider callback shows no card number.
        assert.ok(tables.webhook_deliveries.every((d) => d.body === null))
        for (const [name, text] of places.filter(
          ([n]) => n !== 'payout_callbacks' && n !== 'webhook_deliveries',
        ))
          assert.ok(text.includes(VISA_MASKED), `${name} shows the masked number`)
        const logs = ctx.logs.join('\n')
        assert.ok(logs.length > 0)
        assert.ok(!logs.includes(VISA) && !logs.includes(spaced), 'the logs hold the full card number')

        // The stored idempotency fingerprint is keyed: a plain hash of the body could be searched through the
        // middle digits the masked number hides.
        const plain = bodies.map((b) =>
          createHash('sha256')
            .update(`POST\n/integration/payouts\n${JSON.stringify(b)}`)
            .digest('hex'),
        )
        for (const row of tables.idempotency_keys) assert.ok(!plain.includes(row.fingerprint))
      })

      it('a duplicate external_id → 409 conflict, and nothing is reserved for it', async () => {
        const m = await h.funded('Duplicate')
        const first = await h.created(m, { external_id: 'po-dup-1', amount: 10000 })
        const before = await h.balance(m)
        // 1000000000 − 100000000 = 900000000
        assert.deepEqual(before, usdtBalance(900_000_000, 100_000_000, FUNDED_MICRO))
        const dup = await h.create(m, newPayout({ external_id: 'po-dup-1', amount: 20000 }))
        const error = assertError(dup, 409, 'conflict')
        assert.equal(error.details.external_id, 'po-dup-1')
        assert.deepEqual(await h.balance(m), before)
        const rows = await h.payoutRows(m)
        assert.deepEqual(
          rows.map((r) => r.uuid),
          [first.uuid],
        )
        // Unique per merchant and mode: the other mode and another merchant may use it.
        await h.fund(ctx.other)
        assert.equal((await h.create(ctx.other, newPayout({ external_id: 'po-dup-1' }))).statusCode, 201)
        await ctx.services.merchants.updateMerchant(m.uuid, { settlementHoldSeconds: 0 })
        await h.fund(m, 100000, 'live')
        const live = await h.create(m, newPayout({ external_id: 'po-dup-1' }), { mode: 'live' })
        assert.equal(live.statusCode, 201, live.body)
      })

      it('insufficient_balance: exactly the available balance passes, one micro more is refused and writes nothing', async () => {
        const m = await h.funded('Balance', 1000)
        // 10.00 USD → 10 USDT = 10000000 micro available
        assert.equal((await h.balance(m)).available, 10_000_000)
        const over = await h.create(m, newPayout({ amount: 10_000_001, currency: 'USDT' }))
        assertError(over, 422, 'insufficient_balance')
        assert.equal((await h.payoutRows(m)).length, 0)
        assert.deepEqual(await h.balance(m), usdtBalance(10_000_000, 0, 10_000_000))

        const exact = await h.create(m, newPayout({ amount: 10_000_000, currency: 'USDT' }))
        assert.equal(exact.statusCode, 201, exact.body)
        assert.deepEqual(await h.balance(m), usdtBalance(0, 10_000_000, 10_000_000))

        // Nothing is left: even 0.01 USD (10000 micro) is refused.
        const again = await h.create(m, newPayout({ amount: 1 }))
        assertError(again, 422, 'insufficient_balance')
        assert.equal((await h.payoutRows(m)).length, 1)
        assert.equal((await ctx.services.ledger.verify()).ok, true)
      })

      it('needs X-Signature and an Idempotency-Key; a replay returns the same payout and reserves once', async () => {
        const m = await h.funded('Idempotent')
        const body = newPayout({ amount: 10000 })
        const apiKey = await call(ctx, 'POST', '/integration/payouts', body, {
          as: { merchant: m },
          idempotencyKey: idem(),
        })
        assertError(apiKey, 401, 'signature_required')
        const noKey = await call(ctx, 'POST', '/integration/payouts', body, {
          as: { merchant: m },
          auth: 'signature',
        })
        assertError(noKey, 400, 'idempotency_key_required')
        assert.equal((await h.payoutRows(m)).length, 0)

        const key = idem()
        const first = await h.create(m, body, { key })
        assert.equal(first.statusCode, 201, first.body)
        assert.equal(first.headers['idempotent-replayed'], undefined)
        const once = await h.balance(m)
        // 1000000000 − 100000000
        assert.deepEqual(once, usdtBalance(900_000_000, 100_000_000, FUNDED_MICRO))
        const again = await h.create(m, body, { key })
        assert.equal(again.statusCode, 201)
        assert.equal(again.headers['idempotent-replayed'], 'true')
        assert.equal(again.body, first.body)
        assert.equal(again.headers.location, first.headers.location)
        assert.deepEqual(await h.balance(m), once)
        assert.equal((await h.payoutRows(m)).length, 1)
        // The same key with another body is refused.
        const reused = await h.create(m, { ...body, amount: 10001 }, { key })
        assertError(reused, 422, 'idempotency_key_reused')
        assert.equal(first.json().uuid, (await h.payoutRows(m))[0]?.uuid)
      })

      it('a payout with a test key never touches live balances, and the other way round', async () => {
        const m = await h.funded('Modes')
        await ctx.services.merchants.updateMerchant(m.uuid, { settlementHoldSeconds: 0 })
        await h.fund(m, 50000, 'live')
        const live500 = usdtBalance(500_000_000, 0, 500_000_000)
        assert.deepEqual(await h.balance(m, 'live'), live500)

        const test = await h.created(m, { amount: 10000 })
        assert.equal(test.mode, 'test')
        assert.deepEqual(await h.balance(m, 'live'), live500)
        assert.equal((await h.balance(m)).reserved, 100_000_000)
        assertError(await h.getPayout(m, test.uuid, 'live'), 404, 'not_found')
        assertError(await h.simulate(m, test.uuid, 'completed', 'live'), 404, 'not_found')
        assert.deepEqual(await h.balance(m, 'live'), live500)

        // Live holds 500 USDT: 600 is refused there though test mode has 900 available.
        assertError(
          await h.create(m, newPayout({ amount: 60000 }), { mode: 'live' }),
          422,
          'insufficient_balance',
        )
        const livePayout = await h.created(m, { amount: 20000 }, 'live')
        assert.equal(livePayout.mode, 'live')
        assert.deepEqual(await h.balance(m, 'live'), usdtBalance(300_000_000, 200_000_000, 500_000_000))
        assert.deepEqual(await h.balance(m), usdtBalance(900_000_000, 100_000_000, FUNDED_MICRO))
        assertError(await h.getPayout(m, livePayout.uuid), 404, 'not_found')
      })
    })

    describe('sandbox outcomes', () => {
      /** A merchant with one 101.25 USDT payout processing (1% + 0.25 USDT fee on 100 USD). */
      const processing = async (name: string) => {
        const m = await h.funded(name)
        await ctx.services.merchants.updateMerchant(m.uuid, FEE_100_BPS_QUARTER_USDT)
        const p = await h.created(m, { amount: 10000 })
        assert.equal(p.status, 'processing')
        return { m, p }
      }
      /** The payout of `processing(name)` once the sandbox sent `outcome`: 200, in that status at version 3. */
      const settled = async (name: string, outcome: 'completed' | 'failed') => {
        const { m, p } = await processing(name)
        const res = await h.simulate(m, p.uuid, outcome)
        assert.equal(res.statusCode, 200, res.body)
        const payout = res.json()
        assert.deepEqual([payout.status, payout.aggregate_version], [outcome, 3])
        return { m, p, payout }
      }

      /**
       * What a payout that went processing, then `final`, then heard `final` again and the other outcome late
       * leaves behind: each callback recorded as applied, duplicate or stale, one event per change, a sound ledger.
       */
      const assertFinalOnce = async (uuid: string, final: 'completed' | 'failed') => {
        const late = final === 'completed' ? 'failed' : 'completed'
        assert.deepEqual(await h.callbacks(uuid), [
          ['processing', 'applied', 'pending', 'processing'],
          [final, 'applied', 'processing', final],
          [final, 'duplicate', final, final],
          [late, 'stale', final, final],
        ])
        assert.deepEqual(await h.eventTrail(uuid), [
          ['payout.processing', 2],
          [`payout.${final}`, 3],
        ])
        assert.equal((await ctx.services.ledger.verify()).ok, true)
      }

      it('completed: the reservation leaves the balance; a repeat and a late failure change nothing', async () => {
        const { m, p, payout: done } = await settled('Completed', 'completed')
        assert.ok(isIso(done.completed_at))
        assert.deepEqual([done.failed_at, done.failure_reason], [null, null])
        assert.deepEqual((await h.getPayout(m, p.uuid)).json(), done)
        // 1000000000 − 101250000 = 898750000 left, nothing reserved
        const after = usdtBalance(898_750_000, 0, 898_750_000)
        assert.deepEqual(await h.balance(m), after)

        const repeat = await h.simulate(m, p.uuid, 'completed')
        assert.equal(repeat.statusCode, 200)
        assert.deepEqual(repeat.json(), done)
        const late = await h.simulate(m, p.uuid, 'failed')
        assert.equal(late.statusCode, 200)
        assert.deepEqual(late.json(), done)
        assert.deepEqual(await h.balance(m), after)
        await assertFinalOnce(p.uuid, 'completed')
      })

      it('failed: the reservation returns to available; a repeat and a late completion change nothing', async () => {
        const { m, p, payout: failed } = await settled('Failed', 'failed')
        assert.equal(typeof failed.failure_reason, 'string')
        assert.ok(failed.failure_reason.length > 0)
        assert.ok(isIso(failed.failed_at))
        assert.equal(failed.completed_at, null)
        const restored = usdtBalance(FUNDED_MICRO, 0, FUNDED_MICRO)
        assert.deepEqual(await h.balance(m), restored)

        const repeat = await h.simulate(m, p.uuid, 'failed')
        assert.deepEqual(repeat.json(), failed)
        const late = await h.simulate(m, p.uuid, 'completed')
        assert.equal(late.statusCode, 200)
        assert.deepEqual(late.json(), failed)
        assert.deepEqual((await h.getPayout(m, p.uuid)).json(), failed)
        assert.deepEqual(await h.balance(m), restored)
        await assertFinalOnce(p.uuid, 'failed')
      })

      it('the sandbox declined card: 201 already failed, and the money back in available', async () => {
        const m = await h.funded('Declined')
        const res = await h.create(m, newPayout({ method: 'card', destination: cardTo(DECLINED_CARD) }))
        assert.equal(res.statusCode, 201, res.body)
        const p = res.json()
        assert.equal(p.card_payout.card_number, '400000******0002')
        await h.assertFailedFromPending(m, p)
      })

      it('404 for an unknown payout, and for a transaction uuid', async () => {
        const tx = await call(ctx, 'POST', '/integration/transactions', newTransaction())
        for (const uuid of [globalThis.crypto.randomUUID(), 'not-a-uuid', tx.json().uuid]) {
          assertError(await h.simulate(ctx.merchant, uuid, 'completed'), 404, 'not_found')
          assertError(await h.getPayout(ctx.merchant, uuid), 404, 'not_found')
        }
      })
    })

    describe('list', () => {
      it('newest first, cursor pages both ways, filters, and only the caller’s merchant and mode', async () => {
        const m = await h.funded('List')
        const p1 = await h.created(m, { amount: 1000 })
        assert.equal((await h.simulate(m, p1.uuid, 'completed')).statusCode, 200)
        const p2 = await h.created(m, {
          amount: 10000,
          currency: 'RUB',
          method: 'card',
          destination: cardTo(VISA),
        })
        assert.equal((await h.simulate(m, p2.uuid, 'failed')).statusCode, 200)
        const p3 = await h.created(m, { amount: 2000, method: 'card', destination: cardTo(VISA) })
        const p4 = await h.created(m, { amount: 500, currency: 'EUR' })
        const p5 = await h.created(m, { amount: 3000, destination: ERC20 })
        assert.equal((await h.simulate(m, p5.uuid, 'completed')).statusCode, 200)
        // Not listed: another merchant's, and this merchant's live ones.
        await h.fund(ctx.other)
        const theirs = await h.created(ctx.other, { amount: 100 })
        await ctx.services.merchants.updateMerchant(m.uuid, { settlementHoldSeconds: 0 })
        await h.fund(m, 10000, 'live')
        const live = await h.created(m, { amount: 100 }, 'live')

        const list = async (query: string, mode: Mode = 'test') => {
          const res = await call(ctx, 'GET', `/integration/payouts${query}`, undefined, {
            as: { merchant: m, mode },
          })
          assert.equal(res.statusCode, 200, res.body)
          return res.json()
        }
        const uuids = (page: { data: { uuid: string }[] }) => page.data.map((p) => p.uuid)

        const all = await list('')
        assert.deepEqual(uuids(all), [p5.uuid, p4.uuid, p3.uuid, p2.uuid, p1.uuid])
        assert.deepEqual(all.meta, onePageMeta('/integration/payouts'))
        assert.deepEqual(all.data[0], (await h.getPayout(m, p5.uuid)).json())
        assert.ok(!uuids(all).includes(theirs.uuid) && !uuids(all).includes(live.uuid))
        assert.deepEqual(uuids(await list('', 'live')), [live.uuid])

        const page1 = await list('?per_page=2')
        assert.deepEqual(uuids(page1), [p5.uuid, p4.uuid])
        assert.equal(page1.meta.prev_cursor, null)
        assert.ok(page1.meta.next_cursor)
        const page2 = await list(`?per_page=2&cursor=${page1.meta.next_cursor}`)
        assert.deepEqual(uuids(page2), [p3.uuid, p2.uuid])
        assert.ok(page2.meta.prev_cursor && page2.meta.next_cursor)
        const page3 = await list(`?per_page=2&cursor=${page2.meta.next_cursor}`)
        assert.deepEqual(uuids(page3), [p1.uuid])
        assert.equal(page3.meta.next_cursor, null)
        const back = await list(`?per_page=2&cursor=${page2.meta.prev_cursor}`)
        assert.deepEqual(uuids(back), uuids(page1))
        assert.equal(back.meta.prev_cursor, null)
        const back2 = await list(`?per_page=2&cursor=${page3.meta.prev_cursor}`)
        assert.deepEqual(uuids(back2), uuids(page2))

        assert.deepEqual(uuids(await list('?status=completed')), [p5.uuid, p1.uuid])
        assert.deepEqual(uuids(await list('?status=processing,failed')), [p4.uuid, p3.uuid, p2.uuid])
        assert.deepEqual(uuids(await list('?status=pending')), [])
        assert.deepEqual(uuids(await list('?method=card')), [p3.uuid, p2.uuid])
        assert.deepEqual(uuids(await list('?currency=USD')), [p5.uuid, p3.uuid, p1.uuid])
        assert.deepEqual(uuids(await list('?status=processing&method=card')), [p3.uuid])
        assert.deepEqual(uuids(await list('?currency=RUB&method=usdt_wallet')), [])

        const filtered = await list('?status=processing,failed&per_page=2')
        assert.deepEqual(uuids(filtered), [p4.uuid, p3.uuid])
        const cursor = filtered.meta.next_cursor
        assert.deepEqual(uuids(await list(`?status=processing,failed&per_page=2&cursor=${cursor}`)), [
          p2.uuid,
        ])
        for (const query of [
          `?per_page=2&cursor=${cursor}`,
          `?status=processing&per_page=2&cursor=${cursor}`,
          `?status=processing,failed&currency=USD&per_page=2&cursor=${cursor}`,
          `?cursor=not-a-cursor`,
        ]) {
          const res = await call(ctx, 'GET', `/integration/payouts${query}`, undefined, {
            as: { merchant: m },
          })
          assertInvalid(res, ['cursor'])
        }
        for (const query of [
          '?status=refunded',
          '?status=completed,',
          '?method=bank_transfer',
          '?per_page=0',
          '?per_page=101',
        ]) {
          const res = await call(ctx, 'GET', `/integration/payouts${query}`, undefined, {
            as: { merchant: m },
          })
          assertError(res, 422, 'validation_failed')
        }
      })
    })
  })

  describe(`payout events (${backend})`, () => {
    // The sandbox provider completes a payout 100 ms after taking it; the worker asks every 50 ms.
    const ctx = suiteContext(backend, {
      services: { payouts: { completionMs: 100, timing: { pollIntervalMs: 50 } } },
    })
    const receiver = suiteReceiver(ctx)
    suiteWorkers(ctx, { ...FAST_WORKERS, payoutIntervalMs: 50 })
    let secret: string
    before(async () => {
      const put = await call(ctx, 'PUT', '/integration/webhook', { url: `${receiver.url}/hooks` })
      assert.equal(put.statusCode, 200, put.body)
      secret = put.json().secret
      await helpers(() => ctx).fund(ctx.merchant)
    })
    const h = helpers(() => ctx)
    const about = (r: Awaited<ReturnType<typeof startReceiver>>, uuid: string) =>
      r.received.filter((x) => JSON.parse(x.body).payout?.uuid === uuid)

    it('payout.processing then payout.completed, signed, each body the payout as it stood at that version', async () => {
      const created = await h.created(ctx.merchant, { amount: 1000 })
      const got = await eventually(async () => {
        const payout: { status: string; aggregate_version: number } = (
          await h.getPayout(ctx.merchant, created.uuid)
        ).json()
        return payout.status === 'completed' ? payout : null
      })
      assert.equal(got.aggregate_version, 3)
      const received = await eventually(async () =>
        about(receiver, created.uuid).length === 2 ? about(receiver, created.uuid) : null,
      )
      const events = received
        .map((r) => ({ r, body: JSON.parse(r.body) }))
        .sort((a, b) => a.body.aggregate_version - b.body.aggregate_version)
      assert.deepEqual(
        events.map((e) => [e.body.event, e.body.aggregate_version]),
        [
          ['payout.processing', 2],
          ['payout.completed', 3],
        ],
      )
      const [processing, completed] = events.map((e) => e.body)
      for (const { r, body } of events) {
        assert.deepEqual(Object.keys(body).sort(), [
          'aggregate_version',
          'event',
          'event_id',
          'occurred_at',
          'payout',
          'schema_version',
        ])
        assert.equal(body.schema_version, '1')
        assert.equal(r.headers['webhook-id'], body.event_id)
        assert.ok(isIso(body.occurred_at))
        assert.equal(body.occurred_at, body.payout.updated_at)
        assert.doesNotThrow(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>))
      }
      assert.notEqual(processing.event_id, completed.event_id)
      assert.deepEqual(processing.payout, created)
      assert.deepEqual(completed.payout, got)
    })

    it('a payout’s own callback_url takes precedence over the configured URL', async () => {
      const own = await startReceiver()
      try {
        const created = await h.created(ctx.merchant, { amount: 1000, callback_url: `${own.url}/payout` })
        assert.equal(created.callback_url, `${own.url}/payout`)
        const received = await eventually(async () =>
          about(own, created.uuid).length === 2 ? about(own, created.uuid) : null,
        )
        assert.deepEqual(received.map((r) => JSON.parse(r.body).event).sort(), [
          'payout.completed',
          'payout.processing',
        ])
        for (const r of received)
          assert.doesNotThrow(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>))
        const deliveries = await deliveryRows(ctx, created.uuid)
        assert.deepEqual(
          deliveries.map((d) => d.url),
          [`${own.url}/payout`, `${own.url}/payout`],
        )
        assert.equal(about(receiver, created.uuid).length, 0)
      } finally {
        await own.close()
      }
    })

    it('a declined card sends payout.failed alone, at version 2', async () => {
      const created = await h.created(ctx.merchant, { method: 'card', destination: cardTo(DECLINED_CARD) })
      assert.equal(created.status, 'failed')
      const [r] = await eventually(async () =>
        about(receiver, created.uuid).length ? about(receiver, created.uuid) : null,
      )
      const body = JSON.parse(r?.body ?? '{}')
      assert.deepEqual([body.event, body.aggregate_version], ['payout.failed', 2])
      assert.deepEqual(body.payout, created)
      // A later payout's events arriving shows the queue went past this one: still one event.
      const marker = await h.created(ctx.merchant, { method: 'card', destination: cardTo(DECLINED_CARD) })
      await eventually(async () => about(receiver, marker.uuid).length === 1)
      assert.equal(about(receiver, created.uuid).length, 1)
    })
  })

  describe(`payout checks by a worker (${backend})`, () => {
    const ctx = suiteContext(backend, {
      services: { payouts: { completionMs: 0, timing: { pollIntervalMs: 0 } } },
    })
    const h = helpers(() => ctx)

    it('checkDue completes a processing payout once the provider says so', async () => {
      const m = await h.funded('Worker')
      const p = await h.created(m, { amount: 10000 })
      assert.equal(p.status, 'processing')
      assert.ok((await ctx.services.payouts.checkDue()) >= 1)
      const done = (await h.getPayout(m, p.uuid)).json()
      assert.deepEqual([done.status, done.aggregate_version], ['completed', 3])
      assert.ok(isIso(done.completed_at))
      // 1000000000 − 100000000
      assert.deepEqual(await h.balance(m), usdtBalance(900_000_000, 0, 900_000_000))
      assert.deepEqual(await h.eventTrail(p.uuid), [
        ['payout.processing', 2],
        ['payout.completed', 3],
      ])
      // Nothing open is left to check.
      assert.equal(await ctx.services.payouts.checkDue(), 0)
      assert.equal((await ctx.services.ledger.verify()).ok, true)
    })

    it('a pending payout that cannot be handed over again (no sealed destination) is failed once its check is due, and its reservation released', async () => {
      const m = await h.funded('Cut off')
      const p = await h.created(m, { amount: 10000 })
      // Back to the state just after the intent committed: pending, never handed over, no event.
      await ctx.db.deleteFrom('events').where('aggregate_uuid', '=', p.uuid).execute()
      await ctx.db.deleteFrom('payout_callbacks').where('payout_uuid', '=', p.uuid).execute()
      await ctx.db
        .updateTable('payouts')
        .set({
          status: 'pending',
          aggregate_version: 1,
          submitted_at: null,
          provider_reference: null,
          next_check_at: new Date(Date.now() + 60_000),
        })
        .where('uuid', '=', p.uuid)
        .executeTakeFirstOrThrow()
      const reserved = usdtBalance(900_000_000, 100_000_000, FUNDED_MICRO)
      assert.deepEqual(await h.balance(m), reserved)

      // Its check is not due yet: nothing happens.
      assert.equal(await ctx.services.payouts.checkDue(), 0)
      assert.deepEqual(
        [
          (await h.getPayout(m, p.uuid)).json().status,
          (await h.getPayout(m, p.uuid)).json().aggregate_version,
        ],
        ['pending', 1],
      )
      await ctx.db
        .updateTable('payouts')
        .set({ next_check_at: new Date(Date.now() - 1000) })
        .where('uuid', '=', p.uuid)
        .executeTakeFirstOrThrow()
      assert.equal(await ctx.services.payouts.checkDue(), 1)
      await h.assertFailedFromPending(m, (await h.getPayout(m, p.uuid)).json())
    })
  })
}

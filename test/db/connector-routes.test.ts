import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { DbHandle } from '../../src/db/index.ts'
import type { AppError } from '../../src/http/errors.ts'
import { createMerchantService } from '../../src/modules/merchants/service.ts'
import {
  createProviderService,
  type ProviderService,
  type RouteKey,
} from '../../src/modules/providers/service.ts'
import { backends, migratedDatabase, testConfig } from '../helpers/harness.ts'
import { rowCount } from '../helpers/rows.ts'

for (const backend of backends()) {
  describe(`connector routes (${backend})`, () => {
    let db: { handle: DbHandle; drop(): Promise<void> }
    let providers: ProviderService
    let merchant: string
    let other: string
    before(async () => {
      db = await migratedDatabase(backend)
      const config = testConfig()
      providers = createProviderService({ db: db.handle.db, config })
      const merchants = createMerchantService({ db: db.handle.db, config })
      merchant = (await merchants.createMerchant({ name: 'Routed' })).merchant.uuid
      other = (await merchants.createMerchant({ name: 'Other' })).merchant.uuid
      for (const [name, mode] of [
        ['acq-a', 'live'],
        ['acq-b', 'live'],
        ['acq-c', 'live'],
        ['acq-test', 'test'],
      ] as const)
        await providers.accounts.add({
          name,
          kind: 'http-acquirer',
          mode,
          settings: { base_url: `https://${name}.example` },
          secrets: { api_key: 'k' },
        })
    })
    after(() => db.drop())

    const card = (merchantUuid: string | null, currency: string | null = null): RouteKey => ({
      merchantUuid,
      mode: 'live',
      subject: 'payment',
      method: 'card',
      currency,
    })
    const resolved = async (merchantUuid: string, key: Partial<RouteKey> = {}) =>
      (await providers.routes.resolve({ ...card(merchantUuid), ...key, merchantUuid })).map((a) => a.name)

    it('resolves nothing while no route is set', async () => {
      assert.deepEqual(await resolved(merchant), [])
    })

    it("takes the merchant's own route before the default, and a currency's before any currency's", async () => {
      await providers.routes.set(card(null), ['acq-c'])
      assert.deepEqual(await resolved(merchant), ['acq-c'])
      await providers.routes.set(card(merchant), ['acq-a', 'acq-b'])
      await providers.routes.set(card(merchant, 'RUB'), ['acq-b', 'acq-a'])
      assert.deepEqual(await resolved(merchant, { currency: 'RUB' }), ['acq-b', 'acq-a'])
      assert.deepEqual(await resolved(merchant, { currency: 'EUR' }), ['acq-a', 'acq-b'])
      assert.deepEqual(await resolved(other, { currency: 'RUB' }), ['acq-c'])
      // Another method, mode or subject has none.
      assert.deepEqual(await resolved(merchant, { method: 'p2p_card' }), [])
      assert.deepEqual(await resolved(merchant, { mode: 'test' }), [])
      assert.deepEqual(await resolved(merchant, { subject: 'payout', method: 'card' }), [])
    })

    it('replaces a route whole, and clears it back to the default', async () => {
      const view = await providers.routes.set(card(merchant), ['acq-c', 'acq-a'])
      assert.deepEqual(view.accounts, ['acq-c', 'acq-a'])
      assert.deepEqual(await resolved(merchant, { currency: 'USD' }), ['acq-c', 'acq-a'])
      assert.equal(await providers.routes.clear(card(merchant)), true)
      assert.equal(await providers.routes.clear(card(merchant)), false)
      assert.deepEqual(await resolved(merchant, { currency: 'USD' }), ['acq-c'])
    })

    it('passes over a disabled account, without falling through to the default', async () => {
      await providers.routes.set(card(merchant), ['acq-a', 'acq-b'])
      await providers.accounts.setStatus('acq-a', 'disabled')
      assert.deepEqual(await resolved(merchant), ['acq-b'])
      const before = await providers.routes.withoutAccount()
      await providers.accounts.setStatus('acq-b', 'disabled')
      assert.deepEqual(await resolved(merchant), [])
      // The operator's alert: the merchant's two card routes (any currency, RUB) are served by nothing now.
      assert.equal(await providers.routes.withoutAccount(), before + 2)
      await providers.accounts.setStatus('acq-a', 'enabled')
      assert.equal(await providers.routes.withoutAccount(), before)
      await providers.accounts.setStatus('acq-b', 'enabled')
    })

    it('routes payouts by method and network', async () => {
      const usdt = (network: string | null): RouteKey => ({
        merchantUuid: null,
        mode: 'live',
        subject: 'payout',
        method: 'usdt_wallet',
        network,
      })
      await providers.routes.set(usdt('ERC20'), ['acq-b'])
      await providers.routes.set(usdt(null), ['acq-a'])
      const payout = (network: string) =>
        providers.routes
          .resolve({ ...usdt(network), merchantUuid: merchant })
          .then((accounts) => accounts.map((a) => a.name))
      assert.deepEqual(await payout('ERC20'), ['acq-b'])
      assert.deepEqual(await payout('TRC20'), ['acq-a'])
    })

    it('lists the routes in order, a merchant’s with the defaults', async () => {
      const all = await providers.routes.list()
      const mine = await providers.routes.list({ merchantUuid: merchant })
      const lines = (views: typeof all) =>
        views.map(
          (v) =>
            `${v.subject} ${v.method} ${v.merchant_uuid ?? '*'} ${v.currency ?? v.network ?? '-'}: ${v.accounts}`,
        )
      // In the order resolution tries them: a merchant's before the defaults, a currency's before any currency's.
      assert.deepEqual(lines(mine), [
        `payment card ${merchant} RUB: acq-b,acq-a`,
        `payment card ${merchant} -: acq-a,acq-b`,
        'payment card * -: acq-c',
        'payout usdt_wallet * ERC20: acq-b',
        'payout usdt_wallet * -: acq-a',
      ])
      assert.deepEqual(lines(all), lines(mine))
    })

    it('refuses a route that cannot be followed, and writes nothing', async () => {
      const count = () => rowCount(db.handle.db, 'connector_routes')
      const before = await count()
      const cases: [string, RouteKey, string[], string][] = [
        ['an unknown method', { ...card(null), method: 'cash' }, ['acq-a'], 'method'],
        [
          'a currency for a payout',
          { ...card(null), subject: 'payout', currency: 'RUB' },
          ['acq-a'],
          'currency',
        ],
        ['an unknown currency', card(null, 'XXQ'), ['acq-a'], 'currency'],
        [
          'a network for a card payout',
          { ...card(null), subject: 'payout', network: 'TRC20' },
          ['acq-a'],
          'network',
        ],
        ['no account', card(null), [], 'accounts'],
        ['an account twice', card(null), ['acq-a', 'acq-a'], 'accounts'],
        ['an unknown account', card(null), ['acq-z'], 'accounts'],
        ['a test account in a live route', card(null), ['acq-a', 'acq-test'], 'accounts'],
        ['an unknown merchant', card('00000000-0000-4000-8000-000000000000'), ['acq-a'], 'merchant'],
        ['a merchant that is not a uuid', card('shop'), ['acq-a'], 'merchant'],
      ]
      for (const [what, key, accounts, field] of cases) {
        const error = (await providers.routes.set(key, accounts).then(
          () => assert.fail(what),
          (e: unknown) => e,
        )) as AppError
        assert.equal(error.code, 'validation_failed', what)
        assert.ok(error.errors?.[field], `${what}: ${JSON.stringify(error.errors)}`)
      }
      assert.equal(await count(), before)
    })
  })
}

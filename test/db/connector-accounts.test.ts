import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { DbHandle } from '../../src/db/index.ts'
import type { AppError } from '../../src/http/errors.ts'
import { createProviderService, type ProviderService } from '../../src/modules/providers/service.ts'
import { backends, migratedDatabase, testConfig } from '../helpers/harness.ts'

const API_KEY = `sk_live_${randomBytes(12).toString('hex')}`
const acquirer = (name: string, extra: Partial<Parameters<ProviderService['accounts']['add']>[0]> = {}) => ({
  name,
  kind: 'http-acquirer',
  mode: 'live' as const,
  settings: { base_url: 'https://acquirer.example/v1' },
  secrets: { api_key: API_KEY },
  ...extra,
})

/** Runs `work`, which must be refused with `code`; answers the refusal's field errors. */
async function refused(code: string, work: () => Promise<unknown>): Promise<Record<string, string[]>> {
  const error = (await work().then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  )) as AppError
  assert.equal(error.code, code, error.message)
  return error.errors ?? {}
}

for (const backend of backends()) {
  describe(`connector accounts (${backend})`, () => {
    let db: { handle: DbHandle; drop(): Promise<void> }
    let providers: ProviderService
    before(async () => {
      db = await migratedDatabase(backend)
      providers = createProviderService({ db: db.handle.db, config: testConfig() })
    })
    after(() => db.drop())

    const rows = () => db.handle.db.selectFrom('connector_accounts').selectAll().execute()
    const secretRows = () => db.handle.db.selectFrom('connector_callback_secrets').selectAll().execute()

    it('adds an account with its settings checked and defaulted, its secrets sealed, and a callback secret made once', async () => {
      const { account, callbackSecret } = await providers.accounts.add(
        acquirer('acquirer-live', {
          settings: { base_url: 'https://acquirer.example/v1', timeout_ms: '5000' },
        }),
      )
      assert.deepEqual(account.settings, {
        base_url: 'https://acquirer.example/v1',
        timeout_ms: 5000,
      })
      assert.deepEqual(account.secrets, ['api_key'])
      assert.equal(account.status, 'enabled')
      assert.equal(account.callback_url, `http://gateway.test/providers/${account.uuid}/callbacks`)
      assert.match(callbackSecret ?? '', /^whsec_[0-9A-Za-z+/]{43}=$/)
      // Neither secret is stored as it was given, and the view carries neither.
      const stored = JSON.stringify([await rows(), await secretRows()])
      assert.ok(!stored.includes(API_KEY) && !stored.includes(callbackSecret as string))
      assert.ok(!JSON.stringify(account).includes(API_KEY))
      // The connector gets them back.
      assert.deepEqual(await providers.accounts.secrets('acquirer-live'), { api_key: API_KEY })
      assert.deepEqual(await providers.accounts.callbackSecrets(account.uuid), [callbackSecret])
    })

    it('keeps the callback secret the provider issued, and the simulator with no secret at all', async () => {
      const issued = `whsec_${randomBytes(16).toString('hex')}`
      const { account, callbackSecret } = await providers.accounts.add(
        acquirer('acquirer-issued', { mode: 'test', callbackSecret: issued }),
      )
      assert.equal(callbackSecret, issued)
      assert.deepEqual(await providers.accounts.callbackSecrets(account.uuid), [issued])
      const simulator = await providers.accounts.add({
        name: 'sandbox',
        kind: 'simulator',
        mode: 'test',
        settings: {},
        secrets: {},
      })
      assert.equal(simulator.callbackSecret, null)
      assert.deepEqual(simulator.account.secrets, [])
      assert.equal(simulator.account.callback_url, null)
      assert.deepEqual(await providers.accounts.callbackSecrets(simulator.account.uuid), [])
    })

    it('refuses what does not fit the kind, field by field, and writes nothing', async () => {
      const before = [(await rows()).length, (await secretRows()).length]
      const base = 'https://a.example'
      // Each input, under the field its refusal names: a name with capitals, an unknown kind, the simulator in live
      // mode, no base_url, a time-out that is not a number, a base_url that is not http(s), a setting the kind does
      // not have, no api_key, a secret the kind does not keep, a secret of two lines, a callback secret that
      // cannot sign.
      const invalid: [string, Parameters<ProviderService['accounts']['add']>[0]][] = [
        ['name', acquirer('Acquirer')],
        ['kind', acquirer('x1', { kind: 'paypal' })],
        ['mode', { name: 'x2', kind: 'simulator', mode: 'live', settings: {}, secrets: {} }],
        ['settings.base_url', acquirer('x3', { settings: {} })],
        ['settings.timeout_ms', acquirer('x4', { settings: { base_url: base, timeout_ms: 'soon' } })],
        ['settings.base_url', acquirer('x5', { settings: { base_url: 'ftp://a.example' } })],
        ['settings.colour', acquirer('x6', { settings: { base_url: base, colour: 'red' } })],
        ['secrets', acquirer('x7', { secrets: {} })],
        ['secrets.password', acquirer('x8', { secrets: { api_key: 'k', password: 'p' } })],
        ['secrets.api_key', acquirer('x9', { secrets: { api_key: 'one\ntwo' } })],
        ['callback_secret', acquirer('x10', { callbackSecret: 'secret' })],
      ]
      for (const [field, input] of invalid) {
        const errors = await refused('validation_failed', () => providers.accounts.add(input))
        assert.ok(errors[field], `${input.name}: ${field} expected in ${JSON.stringify(errors)}`)
      }
      await refused('conflict', () => providers.accounts.add(acquirer('acquirer-live')))
      assert.deepEqual([(await rows()).length, (await secretRows()).length], before)
    })

    it('rotates a callback secret: the old one is accepted through the overlap, then only the new one', async () => {
      const { account, callbackSecret: first } = await providers.accounts.add(acquirer('acquirer-rotating'))
      const rotated = await providers.accounts.rotateCallbackSecret('acquirer-rotating', {
        overlapSeconds: 3600,
      })
      assert.notEqual(rotated.secret, first)
      assert.deepEqual(await providers.accounts.callbackSecrets(account.uuid), [rotated.secret, first])
      const { callbackSecrets } = await providers.accounts.show('acquirer-rotating')
      assert.deepEqual(
        callbackSecrets.map((s) => s.retires_at?.getTime() ?? null),
        [null, rotated.retiresAt.getTime()],
      )
      const afterOverlap = new Date(rotated.retiresAt.getTime() + 1)
      assert.deepEqual(await providers.accounts.callbackSecrets(account.uuid, afterOverlap), [rotated.secret])
      // A second rotation with no overlap retires both earlier ones at once.
      const again = await providers.accounts.rotateCallbackSecret('acquirer-rotating', { overlapSeconds: 0 })
      assert.deepEqual(await providers.accounts.callbackSecrets(account.uuid), [again.secret])
      await refused('invalid_state', () =>
        providers.accounts.rotateCallbackSecret('sandbox', { overlapSeconds: 60 }),
      )
      await refused('not_found', () =>
        providers.accounts.rotateCallbackSecret('nobody', { overlapSeconds: 60 }),
      )
    })

    it('updates settings by merging them, replaces a secret, and can turn an account off and on', async () => {
      const updated = await providers.accounts.update('acquirer-live', {
        settings: { merchant_account: 'mg-1' },
        unset: ['timeout_ms'],
        secrets: { api_key: 'sk_live_rotated' },
      })
      assert.deepEqual(updated.settings, {
        base_url: 'https://acquirer.example/v1',
        merchant_account: 'mg-1',
        timeout_ms: 10_000,
      })
      assert.deepEqual(await providers.accounts.secrets('acquirer-live'), { api_key: 'sk_live_rotated' })
      const errors = await refused('validation_failed', () =>
        providers.accounts.update('acquirer-live', { unset: ['base_url'] }),
      )
      assert.ok(errors['settings.base_url'])
      assert.equal((await providers.accounts.show('acquirer-live')).account.settings.merchant_account, 'mg-1')
      assert.equal((await providers.accounts.setStatus('acquirer-live', 'disabled')).status, 'disabled')
      assert.equal((await providers.accounts.setStatus('acquirer-live', 'enabled')).status, 'enabled')
    })

    it('lists every account without a secret, and a service with another master key cannot open them', async () => {
      const list = await providers.accounts.list()
      assert.deepEqual(
        list.map((a) => a.name),
        // Live mode's first, then test, each by name.
        ['acquirer-live', 'acquirer-rotating', 'acquirer-issued', 'sandbox'],
      )
      assert.ok(!JSON.stringify(list).includes('sk_live_'))
      const stranger = createProviderService({
        db: db.handle.db,
        config: testConfig({ masterKey: randomBytes(32) }),
      })
      await assert.rejects(stranger.accounts.secrets('acquirer-live'))
    })
  })
}

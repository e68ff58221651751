import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { connectPglite } from '../../src/db/index.ts'
import { suiteCommand } from '../helpers/commands.ts'

// The commands over the embedded database; the service under them is tested on both backends
// (test/db/connector-accounts.test.ts).
describe('connectors commands', () => {
  const apiKey = `sk_live_${randomBytes(12).toString('hex')}`
  const issued = `whsec_${randomBytes(12).toString('hex')}`
  const cli = suiteCommand('connectors', { ACQUIRER_API_KEY: apiKey })
  const connectors = cli.run
  before(() => writeFile(join(cli.dataDir, 'issued-secret'), `${issued}\n`))

  const FROM_ENV = ['--secret', 'api_key=env:ACQUIRER_API_KEY']
  /** `connectors add <name>` of an acquirer in `mode` with its base URL, then `extra` (settings, the secret). */
  const addAcquirer = (name: string, mode: 'test' | 'live', ...extra: string[]) =>
    connectors(
      ...['add', name, '--kind', 'http-acquirer', '--mode', mode],
      ...['--setting', 'base_url=https://acquirer.example/v1', ...extra],
    )

  it('adds an account with its API key read from the environment, and prints the callback secret once', async () => {
    const added = await addAcquirer('acquirer-live', 'live', '--setting', 'timeout_ms=4000', ...FROM_ENV)
    assert.equal(added.code, 0, added.output)
    assert.match(added.output, /setting: {2}timeout_ms = 4000/)
    assert.match(added.output, /secret: {3}api_key \(set\)/)
    assert.match(added.output, /shown this once[^\n]*\n\s+whsec_[0-9A-Za-z+/]{43}=\n/)
    assert.ok(!added.output.includes(apiKey))
  })

  it('refuses a secret written on the command line, and writes nothing', async () => {
    const refused = await addAcquirer('acquirer-plain', 'live', '--secret', `api_key=${apiKey}`)
    assert.notEqual(refused.code, 0)
    assert.match(refused.output, /env:VARIABLE or file:PATH, never as its value/)
    const missing = await connectors('show', 'acquirer-plain')
    assert.equal(missing.code, 2)
    assert.match(missing.output, /No such connector account/)
  })

  it('says which setting is wrong, with exit code 2', async () => {
    const wrong = await addAcquirer('acquirer-test', 'test', '--setting', 'timeout_ms=soon', ...FROM_ENV)
    assert.equal(wrong.code, 2)
    assert.match(wrong.output, /settings\.timeout_ms/)
  })

  it('rotates to the secret the provider issued, read from a file, keeping the old one for the overlap', async () => {
    const rotated = await connectors(
      'rotate-callback-secret',
      'acquirer-live',
      '--overlap',
      '2h',
      '--callback-secret',
      `file:${join(cli.dataDir, 'issued-secret')}`,
    )
    assert.equal(rotated.code, 0, rotated.output)
    assert.match(rotated.output, /the previous one accepted until \d{4}-\d\d-\d\dT/)
    assert.ok(!rotated.output.includes(issued), 'a secret the operator gave is not printed back')
    const shown = await connectors('show', 'acquirer-live')
    assert.equal(shown.code, 0, shown.output)
    assert.match(
      shown.output,
      /callback secret: made [^,]+, current\n {2}callback secret: made [^,]+, accepted until /,
    )
  })

  it('lists, disables and enables, and no output ever carries a secret', async () => {
    assert.equal((await connectors('disable', 'acquirer-live')).code, 0)
    const listed = await connectors('list')
    assert.equal(listed.code, 0, listed.output)
    assert.match(
      listed.output,
      /^acquirer-live {2}http-acquirer {2}live {2}disabled {2}[0-9a-f-]{36} {2}\{"base_url"/m,
    )
    assert.match((await connectors('enable', 'acquirer-live')).output, /acquirer-live is enabled/)
    const shown = await connectors('show', 'acquirer-live')
    for (const output of [listed.output, shown.output]) {
      assert.ok(!output.includes(apiKey))
      assert.ok(!output.includes(issued))
      assert.ok(!/whsec_/.test(output))
    }
    // Stored sealed: the database files hold neither secret as given.
    const handle = await connectPglite(cli.dataDir)
    try {
      const rows = await handle.db.selectFrom('connector_accounts').selectAll().execute()
      const secrets = await handle.db.selectFrom('connector_callback_secrets').selectAll().execute()
      assert.equal(rows.length, 1)
      assert.equal(secrets.length, 2)
      assert.ok(!JSON.stringify([rows, secrets]).includes(apiKey))
      assert.ok(!JSON.stringify([rows, secrets]).includes(issued))
    } finally {
      await handle.close()
    }
  })

  it('sets a route, lists it, refuses one to an account of the other mode, and clears it', async () => {
    const set = await connectors(
      ...['route', 'set', '--mode', 'live', '--payment', 'card', '--currency', 'RUB'],
      'acquirer-live',
    )
    assert.equal(set.code, 0, set.output)
    assert.match(set.output, /^live {2}payment card RUB {2}every merchant {2}→ acquirer-live$/m)
    assert.match(
      (await connectors('routes')).output,
      /^live {2}payment card RUB {2}every merchant {2}→ acquirer-live$/m,
    )
    const wrongMode = await connectors('route', 'set', '--mode', 'test', '--payment', 'card', 'acquirer-live')
    assert.equal(wrongMode.code, 2)
    assert.match(wrongMode.output, /acquirer-live serves live mode, not test/)
    const neither = await connectors('route', 'clear', '--mode', 'live')
    assert.equal(neither.code, 2)
    assert.match(neither.output, /name one of --payment or --payout/)
    const cleared = await connectors(
      'route',
      'clear',
      '--mode',
      'live',
      '--payment',
      'card',
      '--currency',
      'RUB',
    )
    assert.match(cleared.output, /route removed/)
    assert.equal((await connectors('routes')).output.trim(), '')
  })
})

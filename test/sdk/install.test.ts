import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { webhooks } from '../../sdk/src/index.ts'
import { backends, createTestContext, type TestContext } from '../helpers/harness.ts'
import { ROOT } from '../helpers/program.ts'

/**
 * The SDK as a merchant installs it, away from this repository: `npm pack ./sdk`, then `npm install` of the
 * tarball into an empty folder outside it (nothing of the root node_modules within reach), as sdk/README.md
 * says. The packed dist/ is the one `npm test` built; eventsource-parser is packed beside it from node_modules.
 */

const run = promisify(execFile)
const DEADLINE_MS = 120_000

/** The environment of a process in the fresh folder: none of npm's or node's settings of this run. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env))
    if (!/^(npm_|NODE_|MERCHANT_GATEWAY_)/i.test(name)) env[name] = value
  return { ...env, ...extra }
}

/** The README's SDK snippet (README.md, "From code: the SDK, and webhooks on localhost"). */
async function readmeSnippet(): Promise<string> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('### From code: the SDK'))
  const block = /```js\n([\s\S]*?)```/.exec(section)?.[1]
  assert.ok(block, 'no js block in the README section')
  return block
}

let folder: string
let tarball: string

before(async () => {
  folder = await mkdtemp(join(tmpdir(), 'mg-sdk-install-'))
  assert.ok(!folder.startsWith(ROOT), 'the folder is outside the repository')
  const packed = await run(
    'npm',
    ['pack', '--json', '--ignore-scripts', './sdk', '--pack-destination', folder],
    {
      cwd: ROOT,
      env: cleanEnv(),
      timeout: DEADLINE_MS,
    },
  )
  const [info] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }]
  const files = info.files.map((f) => f.path)
  for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/cli.js', 'package.json', 'README.md'])
    assert.ok(files.includes(file), `${file} is not in the tarball: ${files.join(', ')}`)
  tarball = join(folder, info.filename)
  await writeFile(
    join(folder, 'package.json'),
    JSON.stringify({ name: 'shop', private: true, type: 'module' }),
  )
  // Its one dependency, packed from the copy the lockfile installed: the install needs no registry and no cache
  // (an empty one of its own), so it never waits on the network.
  const dependency = await run(
    'npm',
    ['pack', '--json', '--ignore-scripts', './node_modules/eventsource-parser', '--pack-destination', folder],
    { cwd: ROOT, env: cleanEnv(), timeout: DEADLINE_MS },
  )
  const [{ filename: dependencyFile }] = JSON.parse(dependency.stdout) as [{ filename: string }]
  await run(
    'npm',
    [
      ...['install', '--offline', '--cache', join(folder, '.npm-cache'), '--no-audit', '--no-fund'],
      ...['--ignore-scripts', tarball, join(folder, dependencyFile)],
    ],
    { cwd: folder, env: cleanEnv(), timeout: DEADLINE_MS },
  )
})

after(async () => {
  if (folder) await rm(folder, { recursive: true, force: true })
})

describe('the packed SDK, installed into a fresh folder', () => {
  it('resolves itself and eventsource-parser from that folder, and its CLI runs', async () => {
    assert.deepEqual(
      (await readdir(join(folder, 'node_modules'))).filter((name) => !name.startsWith('.')).sort(),
      ['@merchant-gateway', 'eventsource-parser'],
    )
    const { stdout } = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "console.log(import.meta.resolve('@merchant-gateway/node'), import.meta.resolve('eventsource-parser/stream'))",
      ],
      { cwd: folder, env: cleanEnv() },
    )
    for (const url of stdout.trim().split(' '))
      assert.ok(url.startsWith(`file://${folder}/node_modules/`), `${url} is not in ${folder}`)
    const help = await run(join(folder, 'node_modules/.bin/merchant-gateway'), ['--help'], {
      cwd: folder,
      env: cleanEnv(),
    })
    assert.match(help.stdout, /merchant-gateway trigger <transaction\.paid\|/)
  })

  it('its declarations refuse what the service refuses (test/sdk/types.check.ts)', async () => {
    const check = (await readFile(join(ROOT, 'test/sdk/types.check.ts'), 'utf8')).replace(
      "'../../sdk/src/index.ts'",
      "'@merchant-gateway/node'",
    )
    await writeFile(join(folder, 'check.ts'), check)
    await writeFile(
      join(folder, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          types: [],
        },
        files: ['check.ts'],
      }),
    )
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const result = await run(process.execPath, [tsc, '-p', folder], { cwd: folder, env: cleanEnv() }).catch(
      (error: { stdout?: string; code?: number }) => ({ stdout: error.stdout ?? '', code: error.code }),
    )
    assert.equal(result.stdout, '', 'tsc reports nothing')
  })
})

for (const backend of backends()) {
  describe(`the packed SDK against the service (${backend})`, () => {
    let ctx: TestContext
    let baseUrl: string
    before(async () => {
      ctx = await createTestContext(backend)
      baseUrl = await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    })
    after(() => ctx.close())

    it("the README's snippet runs from the fresh folder with the three variables the server prints", async () => {
      const snippet = (await readmeSnippet()).replace("'./sdk/dist/index.js'", "'@merchant-gateway/node'")
      assert.match(snippet, /from '@merchant-gateway\/node'/)
      const key = ctx.merchant.keys.test
      const child = run(process.execPath, ['--input-type=module', '-e', snippet], {
        cwd: folder,
        timeout: DEADLINE_MS,
        // What `export MERCHANT_GATEWAY_BASE_URL=… MERCHANT_GATEWAY_KEY_ID=… MERCHANT_GATEWAY_API_KEY=…` sets.
        env: cleanEnv({
          MERCHANT_GATEWAY_BASE_URL: baseUrl,
          MERCHANT_GATEWAY_KEY_ID: key.key_id,
          MERCHANT_GATEWAY_API_KEY: key.secret,
        }),
      })
      const { stdout } = await child.catch((error: { stderr?: string }) =>
        assert.fail(`the snippet failed:\n${error.stderr}`),
      )
      // It made a payment, paid it, refunded part of it, and listed it.
      const [refunded] = await ctx.db
        .selectFrom('transactions')
        .select(['uuid', 'status'])
        .where('merchant_uuid', '=', ctx.merchant.uuid)
        .where('status', '=', 'partially_refunded')
        .execute()
      assert.ok(refunded, 'a partially refunded payment')
      assert.match(stdout, new RegExp(`${refunded.uuid} partially_refunded`))
    })

    it('verifies a webhook signed as the service signs, and refuses a changed body', async () => {
      const secret = webhooks.generateSecret()
      const body = '{"event":"transaction.paid","event_id":"evt_1"}'
      const headers = webhooks.signHeaders(body, { id: 'evt_1', secrets: secret })
      const script = `
        import { webhooks, WebhookVerificationError } from '@merchant-gateway/node'
        const [body, headers, secret] = JSON.parse(process.argv[1])
        console.log(webhooks.verify(body, headers, secret).event_id)
        try { webhooks.verify(body + ' ', headers, secret) } catch (e) { console.log(e instanceof WebhookVerificationError) }
      `
      const { stdout } = await run(
        process.execPath,
        ['--input-type=module', '-e', script, JSON.stringify([body, headers, secret])],
        { cwd: folder, env: cleanEnv() },
      )
      assert.deepEqual(stdout.trim().split('\n'), ['evt_1', 'true'])
    })
  })
}

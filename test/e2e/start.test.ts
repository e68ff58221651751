import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { eventually } from '../helpers/harness.ts'
import { freePort, type Program, ROOT, spawnProgram } from '../helpers/program.ts'

/** Starting the real program compiles it with tsx and opens PGlite: generous, as CI machines can be busy. */
const START_DEADLINE_MS = 120_000
const run = promisify(execFile)

/** The program as a user runs it, on the embedded default in `dataDir`; never a PostgreSQL of the caller's. */
function environment(dataDir: string, port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' }
  for (const name of ['DATABASE_URL', 'MASTER_KEY', 'PUBLIC_BASE_URL', 'APP_ENV', 'REDIS_URL', 'FX_MAX_AGE'])
    delete env[name]
  env.LOG_LEVEL = 'warn'
  return env
}

function start(dataDir: string, port: number, options: { compiled?: boolean } = {}): Program {
  return spawnProgram(['serve'], environment(dataDir, port), options)
}

interface Banner {
  keyId: string
  secret: string
  docsUrl: string
  curl: string
}

/** Waits for the start banner: the test key, the docs URL and the curl line. */
async function banner(program: Program): Promise<Banner> {
  let exitCode: number | null | undefined
  void program.exited.then((code) => {
    exitCode = code
  })
  return eventually(
    async () => {
      if (exitCode !== undefined) throw new Error(`the server exited (${exitCode}):\n${program.output()}`)
      const text = program.output()
      const keyId = /Test key id:\s+(mk_test_\w+)/.exec(text)?.[1]
      const secret = /Test key secret:\s+(sk_test_\w+)/.exec(text)?.[1]
      const docsUrl = /API docs:\s+(http:\/\/\S+\/docs)\s*$/m.exec(text)?.[1]
      const curl = /^\s*(curl .+)$/m.exec(text)?.[1]
      return keyId && secret && docsUrl && curl ? { keyId, secret, docsUrl, curl } : null
    },
    START_DEADLINE_MS,
    100,
  )
}

/** SIGTERM, then the exit code (a stuck process is killed and fails the test). */
async function stop(program: Program): Promise<number | null> {
  if (program.child.exitCode !== null) return program.child.exitCode
  program.child.kill('SIGTERM')
  const timer = setTimeout(() => program.child.kill('SIGKILL'), 20_000)
  try {
    return await program.exited
  } finally {
    clearTimeout(timer)
  }
}

/** Runs an operator command with the same environment; resolves with its exit code and output. */
async function cli(dataDir: string, port: number, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
      cwd: ROOT,
      env: environment(dataDir, port),
      timeout: START_DEADLINE_MS,
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string }
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' }
  }
}

describe('the real program on the embedded default', () => {
  let dataDir: string
  let port: number
  const running: Program[] = []
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'mg-e2e-'))
    port = await freePort()
  })
  after(async () => {
    for (const program of running) if (program.child.exitCode === null) await stop(program)
    await rm(dataDir, { recursive: true, force: true })
  })

  let first: Banner
  let firstPassword: string

  it('starts, prints a test key, the docs URL and a curl command that creates a transaction', async () => {
    const server = start(dataDir, port)
    running.push(server)
    first = await banner(server)
    assert.equal(first.docsUrl, `http://127.0.0.1:${port}/docs`)
    assert.match(server.output(), /\(created\)/, 'the first start creates the demo merchant')

    const docs = await fetch(first.docsUrl)
    assert.equal(docs.status, 200)
    assert.match(docs.headers.get('content-type') ?? '', /^text\/html/)

    // The printed line, run as a user pastes it, with the status appended on a line of its own.
    const { stdout } = await run('bash', ['-c', `${first.curl} -w '\\n%{http_code}'`], { timeout: 30_000 })
    const lines = stdout.trimEnd().split('\n')
    assert.equal(lines.at(-1), '201', stdout)
    const tx = JSON.parse(lines.slice(0, -1).join('\n'))
    assert.equal(tx.status, 'pending')
    assert.equal(tx.mode, 'test')
    assert.equal(tx.amount, 150000)
    assert.equal(tx.currency, 'RUB')

    // The dashboard's ready sign-in: the demo owner with the password printed this once.
    const text = server.output()
    // The shell lines for the SDK and its CLI name the port the server really listens on, and the key just printed.
    assert.match(
      text,
      new RegExp(`^\\s*export MERCHANT_GATEWAY_BASE_URL=http://127\\.0\\.0\\.1:${port}$`, 'm'),
    )
    assert.match(text, new RegExp(`^\\s*export MERCHANT_GATEWAY_KEY_ID=${first.keyId}$`, 'm'))
    assert.match(text, new RegExp(`^\\s*export MERCHANT_GATEWAY_API_KEY=${first.secret}$`, 'm'))
    assert.ok(first.curl.includes(`http://127.0.0.1:${port}/integration/transactions`), first.curl)
    assert.match(text, new RegExp(`Dashboard:\\s+http://127\\.0\\.0\\.1:${port}/dashboard/`))
    const signIn = /sign in as (\S+@\S+) with the password (\w{20})$/m.exec(text)
    assert.ok(signIn, text)
    firstPassword = signIn[2] as string
    const session = await fetch(`http://127.0.0.1:${port}/dashboard/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}` },
      body: JSON.stringify({ email: signIn[1], password: signIn[2] }),
    })
    assert.equal(session.status, 200, await session.clone().text())
    assert.equal((await session.json()).user.role, 'owner')
    const page = await fetch(`http://127.0.0.1:${port}/dashboard/`)
    assert.equal(page.status, 200)
    assert.match(await page.text(), /<div id="root">/)
  })

  it('refuses an operator command while the server holds the embedded database, with a plain message', async () => {
    const result = await cli(dataDir, port, 'rates', 'list')
    assert.notEqual(result.code, 0)
    assert.match(result.stderr, /embedded database .* is in use/)
    assert.doesNotMatch(result.stderr, /^\s+at /m, 'no stack trace')
  })

  it('stops on SIGTERM, and a second start reuses the demo data and its test key', async () => {
    const server = running[0] as Program
    assert.equal(await stop(server), 0, server.output())

    // With the server gone, the operator commands work on the same data.
    const rates = await cli(dataDir, port, 'rates', 'list')
    assert.equal(rates.code, 0, rates.stderr)
    assert.match(rates.stdout, /^RUB\s+92\.15\s/m)

    const again = start(dataDir, port)
    running.push(again)
    const second = await banner(again)
    assert.equal(second.keyId, first.keyId)
    assert.equal(second.secret, first.secret)
    assert.doesNotMatch(again.output(), /\(created\)/, 'the second start finds the demo merchant')
    // The owner's password was shown once; now only where to find it.
    assert.doesNotMatch(again.output(), /with the password \w{20}$/m)
    assert.match(again.output(), /with the password printed at the first start/)
    assert.match(again.output(), /--reset-demo-password/, 'says how to get a new one')
    assert.equal(await stop(again), 0, again.output())
  })

  it('--reset-demo-password prints a new owner password that signs in, and the old one no longer does', async () => {
    const signIn = (password: string) =>
      fetch(`http://127.0.0.1:${port}/dashboard/api/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}` },
        body: JSON.stringify({ email: 'owner@demo-merchant.example', password }),
      })
    // Readable log lines, as a terminal gets them by default.
    const env = { ...environment(dataDir, port), LOG_FORMAT: 'pretty', LOG_LEVEL: 'info' }
    const reset = spawnProgram(['serve', '--reset-demo-password'], env)
    running.push(reset)
    await banner(reset)
    const password = /sign in as owner@demo-merchant\.example with the password (\w{20})$/m.exec(
      reset.output(),
    )?.[1]
    assert.ok(password, reset.output())
    assert.notEqual(password, firstPassword)
    assert.equal((await signIn(firstPassword)).status, 401)
    const session = await signIn(password)
    assert.equal(session.status, 200, await session.text())
    assert.equal(await stop(reset), 0, reset.output())
    const lines = reset.output().split('\n')
    assert.ok(
      lines.some((line) => /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: shutting down/.test(line)),
      reset.output(),
    )
    assert.deepEqual(
      lines.filter((line) => line.trimStart().startsWith('{')),
      [],
      'no JSON log line',
    )
  })
})

describe('the compiled program, as `npm start` runs it', () => {
  let dataDir: string
  let port: number
  let server: Program | undefined
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'mg-e2e-dist-'))
    port = await freePort()
  })
  after(async () => {
    if (server && server.child.exitCode === null) await stop(server)
    await rm(dataDir, { recursive: true, force: true })
  })

  it('builds to dist/ on install and before the tests, and `npm start` runs dist/main.js with no transpiler', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'))
    // The young generation capped at 2 × 8 MiB: the server's memory stays under 200 MB (docs/OPERATIONS.md).
    assert.equal(pkg.scripts.start, 'node --max-semi-space-size=8 dist/main.js serve')
    assert.equal(pkg.scripts.prepare, 'npm run build')
    // `npm test` builds before any suite starts: a build here would empty dist/dashboard, which every app a suite
    // starts serves, under the suite that may be running beside this one.
    assert.equal(pkg.scripts.pretest, 'npm run build')
    assert.equal(pkg.dependencies.tsx, undefined, 'production installs no runtime transpiler')
    for (const built of [
      'dist/main.js',
      'dist/modules/checkout/assets/checkout.css',
      'dist/http/assets/base.css',
      'dist/dashboard/index.html',
    ])
      assert.ok((await stat(join(ROOT, built))).isFile(), `${built} is built`)
  })

  it('serves the API, the docs and the hosted page from the compiled files', async () => {
    server = start(dataDir, port, { compiled: true })
    const printed = await banner(server)
    const { stdout } = await run('bash', ['-c', `${printed.curl} -w '\\n%{http_code}'`], { timeout: 30_000 })
    const lines = stdout.trimEnd().split('\n')
    assert.equal(lines.at(-1), '201', stdout)
    const tx = JSON.parse(lines.slice(0, -1).join('\n'))
    // The hosted page and its stylesheet, read from beside the compiled modules.
    const page = await fetch(tx.payment_url)
    assert.equal(page.status, 200)
    const css = await fetch(`http://127.0.0.1:${port}/pay/assets/checkout.css`)
    assert.equal(css.status, 200)
    const stylesheet = await css.text()
    assert.match(stylesheet, /--accent/)
    assert.match(stylesheet, /box-sizing/, 'the shared reset, from dist/http/assets')
    const doc = await fetch(`http://127.0.0.1:${port}/integration/openapi.json`)
    assert.equal(doc.status, 200)
    const version = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')).version
    assert.equal((await doc.json()).info.version, version)
    assert.equal(await stop(server), 0, server.output())
  })

  it('runs the operator commands through bin/merchant-gateway.js', async () => {
    const { stdout } = await run(process.execPath, ['bin/merchant-gateway.js', 'rates', 'list'], {
      cwd: ROOT,
      env: environment(dataDir, port),
      timeout: START_DEADLINE_MS,
    })
    assert.match(stdout, /^RUB\s+92\.15\s/m)
  })
})

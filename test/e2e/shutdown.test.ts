import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  createTestContext,
  eventually,
  postgresUrlOf,
  serviceEnv,
  TEST_MASTER_KEY,
  type TestContext,
} from '../helpers/harness.ts'
import { onPostgres } from '../helpers/postgres.ts'
import { START_DEADLINE_MS, untilHealthy } from '../helpers/processes.ts'
import { freePort, type Program, programEnv, spawnProgram, stopProgram } from '../helpers/program.ts'

/**
 * The real program's life cycle: a SIGTERM lets the requests in flight finish and refuses new connections;
 * a second SIGTERM ends a shutdown that hangs; APP_ENV=production refuses to start without its settings.
 */

// PostgreSQL, as in production.
onPostgres()

/** A webhook endpoint that holds every request until told to answer (or forever). */
async function startHoldingReceiver() {
  const held: ServerResponse[] = []
  let received = 0
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume()
    req.on('end', () => {
      received++
      held.push(res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as import('node:net').AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received: () => received,
    /** Answers every request held so far with 200. */
    release() {
      for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
    },
    async close() {
      for (const res of held.splice(0)) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** Whether a new TCP connection to the port is refused (nothing listens any more). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'))
  })
}

describe('shutdown of the real program on PostgreSQL', () => {
  let ctx: TestContext
  let databaseUrl: string
  const programs: Program[] = []
  const receivers: Awaited<ReturnType<typeof startHoldingReceiver>>[] = []

  before(async () => {
    ctx = await createTestContext('postgres')
    databaseUrl = await postgresUrlOf(ctx)
  })
  after(async () => {
    await Promise.all(programs.map((p) => stopProgram(p, 'SIGKILL')))
    await Promise.all(receivers.map((r) => r.close()))
    await ctx?.close()
  })

  /** Starts `serve --role <role>` on a free port and waits until it answers. */
  async function serve(role: 'all' | 'api', env: Record<string, string> = {}) {
    const port = await freePort()
    const program = spawnProgram(['serve', '--role', role], serviceEnv(databaseUrl, port, env))
    programs.push(program)
    const base = `http://127.0.0.1:${port}`
    await untilHealthy(program, base, 'the server', 100)
    return { program, port, base }
  }

  /** Points the main merchant's test-mode webhook at a holding receiver, through the running server. */
  async function holdingWebhook(base: string) {
    const receiver = await startHoldingReceiver()
    receivers.push(receiver)
    const res = await fetch(`${base}/integration/webhook`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-api-key': ctx.merchant.keys.test.secret },
      body: JSON.stringify({ url: receiver.url }),
    })
    assert.equal(res.status, 200, await res.text())
    return receiver
  }

  /**
   * POST /integration/webhook/test: answers once the receiver has answered the test delivery. `keepAlive`:
   * fetch's pooled connection, kept open after the answer (as a load balancer's upstream pool does); otherwise a
   * connection of its own that asks the server to close it after the answer (`Connection: close`).
   */
  function sendTest(base: string, keepAlive: boolean): Promise<{ status: number; text: string }> {
    const url = `${base}/integration/webhook/test`
    const headers = { 'x-api-key': ctx.merchant.keys.test.secret }
    if (keepAlive)
      return fetch(url, { method: 'POST', headers }).then(async (res) => ({
        status: res.status,
        text: await res.text(),
      }))
    return new Promise((resolve, reject) => {
      const req = httpRequest(url, { method: 'POST', headers, agent: false }, (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          text += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
      })
      req.on('error', reject)
      req.end()
    })
  }

  /**
   * SIGTERM while a request waits for the receiver: new connections are refused at once, the request completes
   * with its 200, and the process exits 0 on its own within `exitMs`.
   */
  async function inFlightAtSigterm(keepAlive: boolean, exitMs: number) {
    const { program, port, base } = await serve('all')
    const receiver = await holdingWebhook(base)

    const inFlight = sendTest(base, keepAlive)
    // The request is inside its handler: the server is waiting for the receiver.
    await eventually(async () => receiver.received() === 1, 10_000)
    program.child.kill('SIGTERM')

    await eventually(() => refused(port), 10_000)
    assert.equal(program.child.exitCode, null, 'still running while a request is in flight')

    receiver.release()
    const reply = await inFlight
    assert.equal(reply.status, 200, reply.text)
    const delivery = JSON.parse(reply.text)
    assert.equal(delivery.event, 'webhook.test')
    assert.equal(delivery.status, 'succeeded')
    assert.equal(delivery.response_status, 200)

    const answered = Date.now()
    const code = await stopProgram(program, null, exitMs)
    assert.equal(
      code,
      0,
      `exit ${code} ${Date.now() - answered} ms after the answer (null: still running after ${exitMs} ms)\n${program.output()}`,
    )
  }

  it('SIGTERM: the request in flight completes, new connections are refused, the process exits 0', () =>
    inFlightAtSigterm(false, 20_000))

  it('SIGTERM with a keep-alive client: the request in flight completes and the process exits 0 promptly', () =>
    inFlightAtSigterm(true, 10_000))

  it('a second SIGTERM ends a shutdown that hangs, with a non-zero exit', async () => {
    // An attempt may take ten minutes: the graceful shutdown would wait that long for it.
    const { program, port, base } = await serve('api', { WEBHOOK_TIMEOUT_MS: '600000' })
    const receiver = await holdingWebhook(base)

    const inFlight = sendTest(base, false).then(
      (res) => ({ status: res.status }),
      (error: Error) => ({ error }),
    )
    await eventually(async () => receiver.received() === 1, 10_000)
    program.child.kill('SIGTERM')
    await eventually(() => refused(port), 10_000)
    assert.equal(program.child.exitCode, null, 'the first SIGTERM waits for the hung request')

    const code = await stopProgram(program, 'SIGTERM', 10_000)
    assert.ok(code !== null && code !== 0, `exit ${code} (null: it had to be killed)\n${program.output()}`)
    // The hung request never got an answer: its connection ended with the process.
    assert.ok('error' in (await inFlight))
  })
})

describe('APP_ENV=production refuses to start without its settings (docs/OPERATIONS.md, Production)', () => {
  let dataDir: string
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'mg-e2e-prod-'))
  })
  after(async () => {
    await rm(dataDir, { recursive: true, force: true })
  })

  /** Runs `serve` with `env` and resolves with its exit code and output once it ends. */
  async function refusal(env: Record<string, string>) {
    const port = await freePort()
    const program = spawnProgram(
      ['serve'],
      programEnv({
        APP_ENV: 'production',
        DATA_DIR: join(dataDir, 'data'),
        HOST: '127.0.0.1',
        PORT: String(port),
        ...env,
      }),
    )
    const timer = setTimeout(() => program.child.kill('SIGKILL'), START_DEADLINE_MS)
    const code = await program.exited
    clearTimeout(timer)
    return { code, output: program.output() }
  }

  it('without DATABASE_URL: exits non-zero naming DATABASE_URL, and creates no embedded database', async () => {
    const { code, output } = await refusal({ MASTER_KEY: TEST_MASTER_KEY })
    assert.ok(code !== null && code !== 0, `exit ${code}\n${output}`)
    assert.match(output, /^merchant-gateway: APP_ENV=production needs DATABASE_URL\b/m)
    assert.doesNotMatch(output, /^\s+at /m, 'no stack trace')
    assert.equal(existsSync(join(dataDir, 'data')), false, 'nothing written to DATA_DIR')
  })

  it('without MASTER_KEY: exits non-zero naming MASTER_KEY, before connecting to the database', async () => {
    // A database nobody listens on: the refusal must come first, so the message is about the key.
    const { code, output } = await refusal({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/none`,
    })
    assert.ok(code !== null && code !== 0, `exit ${code}\n${output}`)
    assert.match(output, /^merchant-gateway: APP_ENV=production needs MASTER_KEY\b/m)
    assert.doesNotMatch(output, /^\s+at /m, 'no stack trace')
    assert.doesNotMatch(output, /ECONNREFUSED/)
    assert.equal(existsSync(join(dataDir, 'data')), false, 'no master key generated into DATA_DIR')
  })
})

import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { Webhook } from 'standardwebhooks'
import { webhooks } from '../../sdk/src/index.ts'
import {
  createTestContext,
  eventually,
  postgresUrlOf,
  type Received,
  serviceEnv,
  startReceiver,
  type TestContext,
} from '../helpers/harness.ts'
import { onPostgres } from '../helpers/postgres.ts'
import { START_DEADLINE_MS, untilHealthy } from '../helpers/processes.ts'
import { freePort, type Program, programEnv, ROOT, spawnProgram, stopProgram } from '../helpers/program.ts'

/**
 * The developer CLI end to end, as a merchant's developer runs it against a service it reaches only over HTTP
 * (--base-url): `merchant-gateway listen --forward-to` on their laptop, `merchant-gateway trigger` beside it, the
 * service on PostgreSQL. Every process here is a real program.
 */

// The service runs on PostgreSQL.
onPostgres()

/** How soon the local receiver must have the event: within 1 s of it happening. */
const WITHIN_MS = 1_000

const run = promisify(execFile)
const CLI = ['--import', 'tsx', 'sdk/src/cli.ts']

/** A process with no configuration of ours but what the test gives it. */
const env = (extra: Record<string, string> = {}) => programEnv(extra)

/** Runs `merchant-gateway trigger …` to its end: its exit code and output. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...CLI, ...args], {
      cwd: ROOT,
      env: env(),
      timeout: START_DEADLINE_MS,
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string }
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' }
  }
}

const uuidIn = (text: string, label: string): string => {
  const match = new RegExp(`${label} ([0-9a-f-]{36})`).exec(text)
  assert.ok(match?.[1], `no ${label} uuid in:\n${text}`)
  return match[1]
}

describe('merchant-gateway listen and trigger against the service on PostgreSQL', () => {
  let ctx: TestContext
  let databaseUrl: string
  let port: number
  let base: string
  let service: Program
  let listener: Program
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  let sessionSecret: string

  const startService = () =>
    spawnProgram(['serve'], serviceEnv(databaseUrl, port, { PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }))

  const serviceUp = (program: Program) => untilHealthy(program, base, 'the service', 100)

  /** The receiver's request carrying the event `name` of the object `uuid`, once it has come. */
  const receivedEvent = (name: string, uuid: string) =>
    eventually(
      async () =>
        receiver.received.find((r) => {
          const body = JSON.parse(r.body)
          return body.event === name && (body.transaction ?? body.payout)?.uuid === uuid
        }),
      10_000,
      10,
    )

  /** The forward is signed with the session secret `listen` printed: the SDK and Standard Webhooks agree. */
  const assertSigned = (request: Received) => {
    const parsed = webhooks.verify(request.body, request.headers, sessionSecret)
    assert.equal(parsed.event_id, request.headers['webhook-id'])
    new Webhook(sessionSecret).verify(request.body, request.headers as Record<string, string>)
    assert.throws(() => webhooks.verify(request.body, request.headers, webhooks.generateSecret()))
  }

  /** `merchant-gateway trigger <what> [options]` against the service with the merchant's test key, to its end. */
  const trigger = (what: string, ...options: string[]) =>
    cli(['trigger', what, '--api-key', ctx.merchant.keys.test.secret, ...options, '--base-url', base])

  /** `merchant-gateway trigger transaction.paid` against the service, which must succeed: its output. */
  const triggerPaid = async () => {
    const triggered = await trigger('transaction.paid')
    assert.equal(triggered.code, 0, triggered.stderr)
    return triggered
  }

  before(async () => {
    // The database: fresh, migrated, with rates and requisites and a merchant (this process's API is not used).
    ctx = await createTestContext('postgres')
    databaseUrl = await postgresUrlOf(ctx)
    port = await freePort()
    base = `http://127.0.0.1:${port}`
    service = startService()
    await serviceUp(service)
    receiver = await startReceiver()
    listener = spawnProgram(
      ['listen', '--base-url', base, '--forward-to', `${receiver.url}/webhooks`],
      env({ MERCHANT_GATEWAY_API_KEY: ctx.merchant.keys.test.secret }),
      { script: 'sdk/src/cli.ts' },
    )
    sessionSecret = await eventually(
      async () => /signing secret is (whsec_[A-Za-z0-9+/=]+)/.exec(listener.output())?.[1],
      START_DEADLINE_MS,
      50,
    )
  })

  after(async () => {
    if (listener) await stopProgram(listener)
    if (service) await stopProgram(service)
    await receiver?.close()
    await ctx?.close()
  })

  it('trigger transaction.paid: the local receiver gets the event, signed, within 1 s of it happening', async (t) => {
    const triggered = await triggerPaid()
    const uuid = uuidIn(triggered.stdout, 'transaction')
    const request = await receivedEvent('transaction.paid', uuid)
    const body = JSON.parse(request.body)
    const latency = request.at - Date.parse(body.occurred_at)
    assert.ok(latency < WITHIN_MS, `received ${latency} ms after the event occurred`)
    t.diagnostic(`event → local receiver: ${latency} ms`)
    assertSigned(request)
    assert.equal(request.headers['content-type'], 'application/json')
    // The forwarded body is the one the service's webhook carries, byte for byte: the events API shows it.
    const event = await fetch(`${base}/integration/events/${body.event_id}`, {
      headers: { 'x-api-key': ctx.merchant.keys.test.secret },
    }).then((r) => r.json())
    const { webhook_status: _status, ...stored } = event
    assert.deepEqual(stored, body)
    // listen printed the event and the receiver's answer.
    await eventually(async () =>
      new RegExp(`<-- +\\[200\\] POST ${receiver.url}/webhooks \\[${body.event_id}\\]`).test(
        listener.output(),
      ),
    )
    assert.match(listener.output(), new RegExp(`--> transaction.paid \\[${body.event_id}\\]`))
  })

  it('every other trigger fires its event at the receiver, signed', async () => {
    const key = ctx.merchant.keys.test
    for (const [what, event, object] of [
      ['transaction.failed', 'transaction.failed', 'transaction'],
      ['transaction.expired', 'transaction.expired', 'transaction'],
      ['refund', 'transaction.refunded', 'transaction'],
      ['payout.completed', 'payout.completed', 'payout'],
    ] as const) {
      const triggered = await trigger(what, '--key-id', key.key_id)
      assert.equal(triggered.code, 0, `${what}: ${triggered.stderr}`)
      const request = await receivedEvent(event, uuidIn(triggered.stdout, object))
      assertSigned(request)
    }
  })

  it('listen reconnects after the service restarts, and forwards what happens next', async (t) => {
    assert.equal(await stopProgram(service), 0, 'the service stops cleanly with a stream open')
    await eventually(async () => /Lost the connection|The stream ended/.test(listener.output()), 10_000, 20)
    service = startService()
    await serviceUp(service)
    await eventually(async () => listener.output().includes('Reconnected to'), 15_000, 50)
    const triggered = await triggerPaid()
    const request = await receivedEvent('transaction.paid', uuidIn(triggered.stdout, 'transaction'))
    assertSigned(request)
    const latency = request.at - Date.parse(JSON.parse(request.body).occurred_at)
    assert.ok(latency < WITHIN_MS, `received ${latency} ms after the event occurred`)
    t.diagnostic(`after the restart, event → local receiver: ${latency} ms`)
  })

  it('the installed program hands listen and trigger to the compiled SDK (bin/merchant-gateway.js)', async () => {
    const key = ctx.merchant.keys.test
    const { stdout } = await run(
      process.execPath,
      [
        'bin/merchant-gateway.js',
        'trigger',
        'transaction.failed',
        '--api-key',
        key.secret,
        '--base-url',
        base,
      ],
      { cwd: ROOT, env: env(), timeout: START_DEADLINE_MS },
    )
    assertSigned(await receivedEvent('transaction.failed', uuidIn(stdout, 'transaction')))
    const help = await run(process.execPath, ['bin/merchant-gateway.js', 'listen', '--help'], {
      cwd: ROOT,
      env: env(),
    })
    assert.match(help.stdout, /merchant-gateway listen +--api-key sk_test_/)
  })

  it('trigger refund without --key-id stops before it creates anything', async () => {
    const count = async () =>
      Number(
        (
          await ctx.db
            .selectFrom('transactions')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('merchant_uuid', '=', ctx.merchant.uuid)
            .executeTakeFirstOrThrow()
        ).n,
      )
    const before = await count()
    const refused = await trigger('refund')
    assert.equal(refused.code, 2)
    assert.match(refused.stderr, /give --key-id mk_test_/)
    assert.equal(await count(), before)
  })

  it('a live key is refused: by the CLI before it connects, and by the service itself', async () => {
    const live = ctx.merchant.keys.live
    for (const args of [
      ['listen', '--api-key', live.secret, '--base-url', base],
      ['trigger', 'transaction.paid', '--api-key', live.secret, '--base-url', base],
    ]) {
      const refused = await cli(args)
      assert.equal(refused.code, 2)
      assert.match(refused.stderr, /test mode only: use a test key/)
    }
    // A client other than the CLI (any EventSource) is refused by the service: 403 with the error envelope.
    const answer = await fetch(`${base}/integration/events/stream`, {
      headers: { 'x-api-key': live.secret, accept: 'text/event-stream' },
    })
    assert.equal(answer.status, 403)
    const { error } = await answer.json()
    assert.equal(error.code, 'forbidden')
    assert.match(error.message, /test mode/)
  })
})

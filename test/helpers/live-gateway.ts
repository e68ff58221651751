import assert from 'node:assert/strict'
import { before } from 'node:test'
import type { Browser } from 'playwright-core'
import { type AcquirerProgram, startAcquirerProgram } from './acquirer-program.ts'
import { launchChromium } from './browser.ts'
import { serviceEnv, workerEnv } from './config.ts'
import type { TestContext } from './context.ts'
import { postgresUrlOf } from './database.ts'
import { listeningSessions } from './postgres.ts'
import { request, untilEmulatorListens, untilHealthy, untilUp } from './processes.ts'
import { freePort, type Program, spawnProgram, stopProgram } from './program.ts'
import { beforeClose, suiteReceiver } from './suite.ts'

/** Live money with every party a real program, and Chromium for the customer. */
export interface LiveGateway {
  /** The gateway's origin, e.g. http://127.0.0.1:41234. */
  origin: string
  /** The gateway's API: `serve`, or `serve --role api` beside its worker. */
  gateway: Program
  /** `serve --role worker`, when the suite asked for one. */
  worker?: Program
  acquirer: AcquirerProgram
  browser: Browser
  /** Where the merchant's live webhook goes. */
  receiver: ReturnType<typeof suiteReceiver>
  /** The secret the merchant's live webhook is signed with. */
  webhookSecret: string
}

/**
 * A suite's gateway as production runs it, on the suite's PostgreSQL database (a fixture of `suite.ts`'s kind:
 * filled in before the suite's tests, ended before its context is closed): the gateway program on a free port,
 * with a worker of its own when `worker` is set (then the gateway serves only the API); a live acquirer
 * (`startAcquirerProgram`, with `acquirer`'s options) that live card payments are routed to; Chromium; and the
 * context's merchant's live webhook for `events` at a receiver. `env` is given to both gateway programs.
 */
export function suiteLiveGateway(
  ctx: TestContext,
  options: {
    apiKey: string
    events: string[]
    worker?: boolean
    env?: Record<string, string>
    acquirer?: Omit<Parameters<typeof startAcquirerProgram>[1], 'gateway' | 'apiKey'>
  },
): LiveGateway {
  const live = { receiver: suiteReceiver(ctx) } as LiveGateway
  before(async () => {
    const databaseUrl = await postgresUrlOf(ctx)
    const port = await freePort()
    const origin = `http://127.0.0.1:${port}`
    const env = { PUBLIC_BASE_URL: origin, ...options.env }
    live.origin = origin
    // The programs start (they read accounts and routes from the database when a payment comes) while the
    // operator's side is set up on the same database.
    live.gateway = spawnProgram(
      options.worker ? ['serve', '--role', 'api'] : ['serve'],
      serviceEnv(databaseUrl, port, env),
    )
    if (options.worker) live.worker = spawnProgram(['serve', '--role', 'worker'], workerEnv(databaseUrl, env))
    live.acquirer = await startAcquirerProgram(ctx, {
      ...options.acquirer,
      gateway: origin,
      apiKey: options.apiKey,
    })
    const worker = live.worker
    ;[live.browser] = await Promise.all([
      launchChromium(),
      untilEmulatorListens(live.acquirer.program),
      untilHealthy(live.gateway, origin),
      // The worker is up once its dispatcher listens for new deliveries (the API process does not).
      worker && untilUp(worker, 'the worker', async () => (await listeningSessions(ctx.db)) === 1),
    ])

    const webhook = await request(origin, 'PUT', '/integration/webhook', {
      secret: ctx.merchant.keys.live.secret,
      body: { url: `${live.receiver.url}/hooks`, events: options.events },
    })
    assert.equal(webhook.status, 200, webhook.text)
    live.webhookSecret = webhook.json().secret
  })
  beforeClose(ctx, async () => {
    await live.browser?.close()
    await Promise.all(
      [live.gateway, live.worker, live.acquirer?.program].map((program) => program && stopProgram(program)),
    )
  })
  return live
}

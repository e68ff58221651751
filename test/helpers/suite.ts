import { after, before } from 'node:test'
import type { KyselyPlugin } from 'kysely'
import type { ServiceOptions } from '../../src/app.ts'
import type { Config } from '../../src/config.ts'
import { startWorkers, type WorkerOptions } from '../../src/workers/index.ts'
import { createTestContext, type TestContext } from './context.ts'
import type { Backend } from './database.ts'
import { startReceiver } from './receiver.ts'

/**
 * A suite's fixtures: each is made in a `before` hook of the suite it is called in and ended after its tests. The
 * objects returned are filled in when the hook runs, so the suite's tests (and the helpers they define) use them
 * as they would the fixture itself; nothing of them may be read while the suite is being declared.
 */

/** What ends before the context of a suite is closed, last made first ended. */
const teardowns = new WeakMap<TestContext, (() => unknown)[]>()

export function beforeClose(ctx: TestContext, end: () => unknown) {
  const steps = teardowns.get(ctx)
  if (!steps) throw new Error('not a context made by suiteContext()')
  steps.push(end)
}

export interface SuiteContextOptions {
  /** Overrides of the test configuration. */
  config?: Partial<Config>
  /** Options of the services (a provider of the test's own, the webhook dispatch schedule…). */
  services?: ServiceOptions
  /** Kysely plugins on the app's database only (a suite injects database failures with one). */
  plugins?: KyselyPlugin[]
  /** Secrets the suite's tests use themselves (a password they type): no more than the others may reach a log. */
  secrets?: string[]
}

/**
 * The context of the suite this is called in: `createTestContext` on `backend` before its tests, closed after them
 * (which fails the suite on a 5xx, an answer the OpenAPI document does not allow, or a leaked secret), once the
 * workers and receivers started for it have ended.
 */
export function suiteContext(backend: Backend, options: SuiteContextOptions = {}): TestContext {
  const ctx = {} as TestContext
  const steps: (() => unknown)[] = []
  teardowns.set(ctx, steps)
  before(async () => {
    Object.assign(ctx, await createTestContext(backend, options.config, options.services, options.plugins))
    ctx.secrets.push(...(options.secrets ?? []))
  })
  after(async () => {
    try {
      for (const end of steps.reverse()) await end()
    } finally {
      // Unset when the context could not be made: the hook that failed has said why.
      await ctx.close?.()
    }
  })
  return ctx
}

export type Workers = ReturnType<typeof startWorkers>

/** The delivery dispatcher polls every 50 ms: a suite's deliveries go out as soon as they are due. */
export const FAST_WORKERS: WorkerOptions = { dispatcher: { pollMs: 50 } }

/** The background workers of the suite's context (`startWorkers`), stopped before the context is closed. */
export function suiteWorkers(ctx: TestContext, options: WorkerOptions = FAST_WORKERS): Workers {
  const workers = {} as Workers
  before(() => {
    Object.assign(workers, startWorkers(ctx.handle, ctx.services, ctx.app.log, options))
  })
  beforeClose(ctx, () => workers.stop?.())
  return workers
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>

/** A webhook receiver for the suite (`startReceiver(respond)`), closed before its context is. */
export function suiteReceiver(ctx: TestContext, respond?: Parameters<typeof startReceiver>[0]): Receiver {
  const receiver = {} as Receiver
  before(async () => {
    Object.assign(receiver, await startReceiver(respond))
  })
  beforeClose(ctx, () => receiver.close?.())
  return receiver
}

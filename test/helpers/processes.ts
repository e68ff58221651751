import { eventually } from './eventually.ts'
import { type Program, programEnv, spawnProgram } from './program.ts'

/**
 * How long a real program may take to start: it compiles its TypeScript with tsx first; generous, as CI machines
 * can be busy.
 */
export const START_DEADLINE_MS = 60_000

/** An answer over real HTTP, read to its end. */
export interface Reply {
  status: number
  headers: Headers
  text: string
  // biome-ignore lint/suspicious/noExplicitAny: response bodies
  json(): any
}

/**
 * One real HTTP request to a running program: `secret` goes in X-Api-Key, `body` as JSON; given up (a failed
 * fetch) after `timeoutMs` when one is given.
 */
export async function request(
  base: string,
  method: string,
  path: string,
  options: { secret?: string; body?: unknown; idempotencyKey?: string; timeoutMs?: number } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {}
  if (options.secret) headers['x-api-key'] = options.secret
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey
  let body: string | undefined
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(options.body)
  }
  const signal = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs)
  const res = await fetch(`${base}${path}`, { method, headers, body, signal })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) }
}

/** Fails with the program's output when it has exited; `name` says which program it is. */
export function assertRunning(program: Program, name = 'the program'): void {
  if (program.child.exitCode !== null || program.child.signalCode !== null)
    throw new Error(
      `${name} exited (${program.child.exitCode ?? program.child.signalCode}):\n${program.output()}`,
    )
}

/** Waits until `probe` says `program` is up (to START_DEADLINE_MS), failing at once if it exits. */
export const untilUp = (program: Program, name: string, probe: () => Promise<boolean>) =>
  eventually(
    async () => {
      assertRunning(program, name)
      return probe()
    },
    START_DEADLINE_MS,
    100,
  )

/** Waits until the API at `origin` answers its health check. */
export const untilHealthy = (gateway: Program, origin: string) =>
  untilUp(gateway, 'the gateway', async () => {
    const res = await fetch(`${origin}/integration/health`).catch(() => null)
    return res?.status === 200
  })

/**
 * `provider-emulator` on `port` as a program of its own, taking `apiKey` and signing its callbacks to
 * `callbackUrl` with `callbackSecret` (both passed through the environment, as an operator would); `args` adds
 * its other flags. Wait for it with `untilEmulatorListens`.
 */
export const spawnEmulator = (input: {
  port: number
  apiKey: string
  callbackUrl: string
  callbackSecret: string
  args?: string[]
}): Program =>
  spawnProgram(
    [
      'provider-emulator',
      '--port',
      String(input.port),
      '--api-key',
      'env:ACQUIRER_API_KEY',
      '--callback-url',
      input.callbackUrl,
      '--callback-secret',
      'env:ACQUIRER_CALLBACK_SECRET',
      ...(input.args ?? []),
    ],
    programEnv({ ACQUIRER_API_KEY: input.apiKey, ACQUIRER_CALLBACK_SECRET: input.callbackSecret }),
  )

export const untilEmulatorListens = (emulator: Program) =>
  untilUp(emulator, 'the emulator', async () => emulator.output().includes('provider emulator listening on'))

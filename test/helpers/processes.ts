import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { eventually } from './eventually.ts'
import { type Program, programEnv, ROOT, spawnProgram } from './program.ts'

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

/**
 * Waits until the program serving at `base` answers its health check 200, polling every `intervalMs`; fails with
 * its output as soon as it exits.
 */
export async function untilHealthy(program: Program, base: string, name = 'the program', intervalMs = 25) {
  await eventually(
    async () => {
      assertRunning(program, name)
      const res = await fetch(`${base}/integration/health`).catch(() => null)
      await res?.arrayBuffer()
      return res?.status === 200
    },
    START_DEADLINE_MS,
    intervalMs,
  )
}

/** Runs `ledger verify` from the sources with `env`, and fails with its output unless the ledger is clean. */
export async function assertLedgerVerifies(env: NodeJS.ProcessEnv): Promise<void> {
  const verify = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', 'src/main.ts', 'ledger', 'verify'],
    { cwd: ROOT, env, timeout: START_DEADLINE_MS },
  ).catch((error: { code?: number; stdout?: string; stderr?: string }) => {
    throw new Error(`ledger verify exited ${error.code}:\n${error.stdout}${error.stderr}`)
  })
  assert.match(verify.stdout, /^ledger ok: \d+ entries, every balance matches the journal$/m)
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

import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** The repository root: where the real program runs from. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** A running `merchant-gateway` process and everything it has printed so far. */
export interface Program {
  child: ChildProcess
  output(): string
  exited: Promise<number | null>
}

/**
 * Starts the real program with exactly `env`, collecting its output: from its sources
 * (`node --import tsx src/main.ts <args>`; `script` names another, such as the SDK's CLI), or as production runs
 * it, compiled (`node dist/main.js <args>`).
 */
export function spawnProgram(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { compiled?: boolean; script?: string } = {},
): Program {
  const entry = options.compiled ? ['dist/main.js'] : ['--import', 'tsx', options.script ?? 'src/main.ts']
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let text = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    text += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, output: () => text, exited }
}

/** A port nobody listens on right now: the kernel's pick for port 0 (free again once this returns). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net')
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (!address || typeof address !== 'object') throw new Error('no port')
  return address.port
}

/** Variables that configure the program: none of the caller's leak into a spawned one. */
const PROGRAM_VARIABLES =
  /^(NODE_TEST|DATABASE_URL$|DATA_DIR$|MASTER_KEY$|REDIS_URL$|PORT$|HOST$|PUBLIC_BASE_URL$|APP_ENV$|LOG_LEVEL$|FX_MAX_AGE$|METRICS_|RATE_LIMIT_|WEBHOOK_|IDEMPOTENCY_|PROVIDER_|DASHBOARD_)/

/** The caller's environment without anything that configures the program, then `env`. */
export function programEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(base)) if (PROGRAM_VARIABLES.test(name)) delete base[name]
  return { ...base, ...env }
}

/**
 * Sends `signal` (none: only waits) unless the program has ended, then resolves with its exit code; a program
 * still running after `graceMs` is killed (SIGKILL), and its code is then null.
 */
export async function stopProgram(
  program: Program,
  signal: NodeJS.Signals | null = 'SIGTERM',
  graceMs = 20_000,
): Promise<number | null> {
  if (signal && program.child.exitCode === null && program.child.signalCode === null)
    program.child.kill(signal)
  const timer = setTimeout(() => program.child.kill('SIGKILL'), graceMs)
  try {
    return await program.exited
  } finally {
    clearTimeout(timer)
  }
}

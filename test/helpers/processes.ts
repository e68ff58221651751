import type { Program } from './program.ts'

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

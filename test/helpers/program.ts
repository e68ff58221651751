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

/** Starts the real program (`node --import tsx src/main.ts <args>`) with exactly `env`, collecting its output. */
export function spawnProgram(args: string[], env: NodeJS.ProcessEnv): Program {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
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

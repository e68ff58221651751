import assert from 'node:assert/strict'
import type { Db } from '../../src/db/index.ts'
import { serviceEnv } from './config.ts'
import { eventually } from './eventually.ts'
import { sessionsOf, sessionUrl } from './postgres.ts'
import { untilHealthy } from './processes.ts'
import { freePort, type Program, spawnProgram, stopProgram } from './program.ts'

/**
 * The real gateway (`serve`, role all) for a drill that kills it and starts it again, always on the same port (a
 * provider's callback URL may name it). Each start's sessions carry a name of their own, so that a kill can wait
 * until PostgreSQL has ended the killed process's sessions.
 */
export interface GatewayProgram {
  /** Where it serves, e.g. http://127.0.0.1:41234: the same for every start. */
  readonly base: string
  /** The process running now. */
  readonly program: Program
  /** Its sessions' application_name. */
  readonly name: string
  /** How long each start took until the gateway answered, for the diagnostics. */
  readonly startMs: readonly number[]
  /** The environment of a process on the gateway's database whose sessions carry `name` (`ledger verify`). */
  env(name: string): NodeJS.ProcessEnv
  /** Starts the gateway and waits until it answers its health check. */
  start(): Promise<void>
  /**
   * SIGKILLs the gateway, runs `letGo` (what the test holds up; a session waiting on a lock notices that its client
   * is gone only once it has the lock, and its transaction, with no COMMIT ever sent, is then rolled back), and
   * waits until PostgreSQL has ended the killed process's sessions.
   */
  kill(letGo?: () => unknown): Promise<void>
  /** Kills whatever of it still runs, at the suite's end. */
  close(): Promise<void>
}

/**
 * A gateway on the database `db` is on (`databaseUrl`), its starts named `<prefix>-1`, `<prefix>-2`, …; `extra`
 * adds to its environment. Nothing runs until `start`.
 */
export async function gatewayProgram(
  db: Db,
  databaseUrl: string,
  prefix: string,
  extra: Record<string, string> = {},
): Promise<GatewayProgram> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const programs: Program[] = []
  const startMs: number[] = []
  let running: { program: Program; name: string } | null = null
  const current = () => {
    if (!running) throw new Error('the gateway was never started')
    return running
  }
  const env = (name: string) => serviceEnv(sessionUrl(databaseUrl, name), port, extra)
  return {
    base,
    startMs,
    env,
    get program() {
      return current().program
    },
    get name() {
      return current().name
    },
    async start() {
      const started = Date.now()
      const name = `${prefix}-${programs.length + 1}`
      const program = spawnProgram(['serve', '--role', 'all'], env(name))
      programs.push(program)
      await untilHealthy(program, base, name)
      running = { program, name }
      startMs.push(Date.now() - started)
    },
    async kill(letGo) {
      const { program, name } = current()
      program.child.kill('SIGKILL')
      try {
        assert.equal(await program.exited, null, 'the gateway was killed')
      } finally {
        await letGo?.()
      }
      await eventually(async () => (await sessionsOf(db, name)) === 0, 10_000)
    },
    async close() {
      await Promise.all(programs.map((program) => stopProgram(program, 'SIGKILL')))
    },
  }
}

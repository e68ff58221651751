import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import { TEST_MASTER_KEY } from './config.ts'
import { programEnv, spawnProgram } from './program.ts'

/** An operator's command group run against the suite's own embedded database. */
export interface SuiteCommand {
  /** The embedded database's directory: set before the suite's own `before` hooks run. */
  dataDir: string
  /** Runs `merchant-gateway <command> <args>` to its end: its exit code and all it printed. */
  run(...args: string[]): Promise<{ code: number | null; output: string }>
}

/**
 * `merchant-gateway <command> …` as an operator runs it in development, over an embedded database in a temporary
 * directory of the suite's own (made before its tests, removed after them); `env` adds variables the commands
 * read (a secret given as env:NAME).
 */
export function suiteCommand(command: string, env: Record<string, string> = {}): SuiteCommand {
  let variables: NodeJS.ProcessEnv
  const suite: SuiteCommand = {
    dataDir: '',
    async run(...args) {
      const program = spawnProgram([command, ...args], variables)
      const code = await program.exited
      return { code, output: program.output() }
    },
  }
  before(async () => {
    suite.dataDir = await mkdtemp(join(tmpdir(), `mg-${command}-cli-`))
    variables = programEnv({
      APP_ENV: 'development',
      MASTER_KEY: TEST_MASTER_KEY,
      LOG_LEVEL: 'warn',
      DATA_DIR: suite.dataDir,
      ...env,
    })
  })
  after(() => suite.dataDir && rm(suite.dataDir, { recursive: true, force: true }))
  return suite
}

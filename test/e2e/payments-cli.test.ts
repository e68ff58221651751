import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { TEST_MASTER_KEY } from '../helpers/harness.ts'
import { programEnv, spawnProgram } from '../helpers/program.ts'

// The commands over the embedded database; the service under them is tested on both backends
// (test/api/transactions/reviews.test.ts).
describe('payments commands', () => {
  let dataDir: string
  let env: NodeJS.ProcessEnv

  /** Runs `merchant-gateway payments <args>`: its exit code and all it printed. */
  async function payments(...args: string[]): Promise<{ code: number | null; output: string }> {
    const program = spawnProgram(['payments', ...args], env)
    const code = await program.exited
    return { code, output: program.output() }
  }

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'mg-payments-cli-'))
    env = programEnv({
      APP_ENV: 'development',
      MASTER_KEY: TEST_MASTER_KEY,
      LOG_LEVEL: 'warn',
      DATA_DIR: dataDir,
    })
  })
  after(() => rm(dataDir, { recursive: true, force: true }))

  it('lists no reviews on a new database', async () => {
    const listed = await payments('reviews', '--open')
    assert.equal(listed.code, 0, listed.output)
    assert.equal(listed.output.trim(), '')
  })

  it('refuses to resolve the review of a payment that does not exist, with the reason and exit code 2', async () => {
    for (const [action, uuid] of [
      ['accept', '00000000-0000-4000-8000-000000000000'],
      ['refund', 'not-a-uuid'],
    ] as const) {
      const refused = await payments('review', action, uuid)
      assert.equal(refused.code, 2, refused.output)
      assert.match(refused.output, /merchant-gateway: No such payment\./)
    }
  })

  it('refuses a limit out of range', async () => {
    const refused = await payments('reviews', '--limit', '0')
    assert.notEqual(refused.code, 0)
    assert.match(refused.output, /--limit must be a whole number from 1 to 1000/)
  })
})

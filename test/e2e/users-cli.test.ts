import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { createServices } from '../../src/app.ts'
import { connectPglite, type DbHandle } from '../../src/db/index.ts'
import { backends, freshDatabase, postgresUrlOf, TEST_MASTER_KEY, testConfig } from '../helpers/harness.ts'
import { programEnv, ROOT } from '../helpers/program.ts'

const run = promisify(execFile)
/** Each command compiles the program with tsx and opens the database: generous on a busy machine. */
const DEADLINE_MS = 120_000
const BASE = 'https://dashboard.example.test'

for (const backend of backends()) {
  describe(`users commands (${backend})`, () => {
    let env: NodeJS.ProcessEnv
    let dataDir: string
    let postgres: { handle: DbHandle; drop(): Promise<void> } | null = null
    let merchant: string
    let invitedUuid: string
    let link: string
    const email = `Ops.${Date.now().toString(36)}@Example.test`

    /** Runs `merchant-gateway <args>`: its exit code and what it printed. */
    async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
      try {
        const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
          cwd: ROOT,
          env,
          timeout: DEADLINE_MS,
        })
        return { code: 0, stdout, stderr }
      } catch (error) {
        const failed = error as { code?: number; stdout?: string; stderr?: string }
        return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' }
      }
    }

    /** Runs `merchant-gateway users invite` for the merchant: its exit code and what it printed. */
    const invite = (address: string, role: string) =>
      cli('users', 'invite', '--merchant', merchant, '--email', address, '--role', role)

    /** The database the commands wrote, opened here (after they have exited, for the embedded one). */
    async function withDb<T>(work: (handle: DbHandle) => Promise<T>): Promise<T> {
      if (postgres) return work(postgres.handle)
      const handle = await connectPglite(dataDir)
      try {
        return await work(handle)
      } finally {
        await handle.close()
      }
    }

    before(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'mg-users-cli-'))
      const vars: Record<string, string> = {
        APP_ENV: 'development',
        MASTER_KEY: TEST_MASTER_KEY,
        PUBLIC_BASE_URL: BASE,
        LOG_LEVEL: 'warn',
        DATA_DIR: dataDir,
      }
      if (backend === 'postgres') {
        postgres = await freshDatabase('postgres')
        vars.DATABASE_URL = await postgresUrlOf(postgres.handle)
      }
      env = programEnv(vars)
      const created = await cli('merchants', 'create', '--name', 'CLI Shop', '--json')
      assert.equal(created.code, 0, created.stderr)
      merchant = JSON.parse(created.stdout.trim().split('\n').at(-1) as string).merchant_uuid
    })
    after(async () => {
      await postgres?.drop()
      await rm(dataDir, { recursive: true, force: true })
    })

    it('users invite prints the one-time set-password link on the public base URL', async () => {
      const result = await invite(email, 'support')
      assert.equal(result.code, 0, result.stderr)
      assert.match(
        result.stdout,
        new RegExp(`invited ${email.replace('.', '\\.')} as support of merchant ${merchant}`),
      )
      const found = /^\s+(https:\/\/dashboard\.example\.test\/dashboard\/set-password\?token=\w{43})$/m.exec(
        result.stdout,
      )
      assert.ok(found?.[1], result.stdout)
      link = found[1]
      invitedUuid = /\(user ([0-9a-f-]{36})\)/.exec(result.stdout)?.[1] as string
      assert.ok(invitedUuid)
    })

    it('the printed link sets the password, once', async () => {
      const token = new URL(link).searchParams.get('token') as string
      await withDb(async (handle) => {
        const users = createServices(handle.db, testConfig()).users
        const from = { ip: null, userAgent: null }
        assert.deepEqual(await users.acceptInvitation({ token, password: 'a long enough password' }, from), {
          email,
        })
        await assert.rejects(users.acceptInvitation({ token, password: 'a long enough password' }, from))
      })
    })

    it('users reset-password prints a new password once; the old one stops working and every session ends', async () => {
      const from = { ip: null, userAgent: null }
      const before = await withDb((handle) =>
        createServices(handle.db, testConfig()).users.login(
          { email, password: 'a long enough password' },
          from,
          null,
        ),
      )
      const result = await cli('users', 'reset-password', email.toUpperCase())
      assert.equal(result.code, 0, result.stderr)
      assert.match(
        result.stdout,
        new RegExp(`new password for ${email.replace('.', '\\.')} \\(user ${invitedUuid}\\)`),
      )
      assert.match(result.stdout, /^ {2}1 session\(s\) ended$/m)
      const password = /^ {2}(\w{20})$/m.exec(result.stdout)?.[1]
      assert.ok(password, result.stdout)
      await withDb(async (handle) => {
        const users = createServices(handle.db, testConfig()).users
        assert.equal(await users.authenticate(before.token), null, 'the session signed in before has ended')
        await assert.rejects(
          users.login({ email, password: 'a long enough password' }, from, null),
          /unauthorized|not right|password/i,
        )
        const after = await users.login({ email, password }, from, null)
        assert.equal(after.session.user.uuid, invitedUuid)
        const [row] = await handle.db
          .selectFrom('dashboard_audit_log')
          .select(['via', 'target_id', 'details'])
          .where('action', '=', 'password_reset')
          .where('merchant_uuid', '=', merchant)
          .execute()
        assert.deepEqual(row, { via: 'cli', target_id: invitedUuid, details: { sessions_revoked: 1 } })
      })
      const unknown = await cli('users', 'reset-password', 'nobody@example.test')
      assert.equal(unknown.code, 2)
      assert.match(unknown.stderr, /No such user/)
    })

    it('users list shows the merchant’s users with role and status', async () => {
      const pending = `pending.${Date.now().toString(36)}@example.test`
      assert.equal((await invite(pending, 'viewer')).code, 0)
      const result = await cli('users', 'list', '--merchant', merchant)
      assert.equal(result.code, 0, result.stderr)
      const lines = result.stdout.trim().split('\n')
      assert.equal(lines.length, 2)
      assert.match(
        lines[0] as string,
        new RegExp(`^${invitedUuid}  ${email.replace('.', '\\.')}  support  active$`),
      )
      assert.match(lines[1] as string, / {2}viewer {2}active {2}\(invitation not accepted\)$/)
    })

    it('users disable disables the user and says how many sessions ended; the audit log has every action', async () => {
      const result = await cli('users', 'disable', invitedUuid)
      assert.equal(result.code, 0, result.stderr)
      // The session signed in after the password was reset ends with it.
      assert.match(result.stdout, /^disabled .+ \(user [0-9a-f-]{36}\); 1 session\(s\) ended$/m)
      assert.match(
        (await cli('users', 'list', '--merchant', merchant)).stdout,
        new RegExp(`${invitedUuid} .* disabled`),
      )
      const actions = await withDb((handle) =>
        handle.db
          .selectFrom('dashboard_audit_log')
          .select(['action', 'via'])
          .where('merchant_uuid', '=', merchant)
          .orderBy('created_at')
          .execute(),
      )
      assert.deepEqual(
        actions.map((a) => `${a.action}/${a.via}`),
        [
          'user_invited/cli',
          'invitation_accepted/dashboard',
          'login_succeeded/dashboard',
          'password_reset/cli',
          'login_failed/dashboard',
          'login_succeeded/dashboard',
          'user_invited/cli',
          'user_disabled/cli',
        ],
      )
    })

    it('refuses, with the reason and exit status 2: an email in use, an unknown merchant or user; a bad role', async () => {
      const taken = await invite(email.toUpperCase(), 'owner')
      assert.equal(taken.code, 2)
      assert.match(taken.stderr, /already a dashboard user with the email/)
      const noMerchant = await cli('users', 'list', '--merchant', '00000000-0000-4000-8000-000000000000')
      assert.equal(noMerchant.code, 2)
      assert.match(noMerchant.stderr, /No such merchant/)
      const noUser = await cli('users', 'disable', 'not-a-uuid')
      assert.equal(noUser.code, 2)
      assert.match(noUser.stderr, /No such user/)
      const badRole = await invite('x@example.test', 'god')
      assert.notEqual(badRole.code, 0)
      assert.match(badRole.stderr, /Allowed choices are owner, admin, developer, support, viewer/)
    })
  })
}

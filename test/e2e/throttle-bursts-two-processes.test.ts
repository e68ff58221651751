import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sha256Hex } from '../../src/lib/crypto.ts'
import { totpCode } from '../../src/lib/totp.ts'
import { auditRows, invite, newEmail } from '../helpers/dashboard.ts'
import {
  createTestContext,
  eventually,
  postgresUrlOf,
  serviceEnv,
  type TestContext,
} from '../helpers/harness.ts'
import { onPostgres } from '../helpers/postgres.ts'
import { assertRunning, type Reply as HttpReply, START_DEADLINE_MS } from '../helpers/processes.ts'
import { freePort, type Program, spawnProgram, stopProgram } from '../helpers/program.ts'

/**
 * The dashboard's throttles (sign-in per email and per client address, wrong TOTP codes per user) under bursts
 * of attempts sent at once to two `serve --role api` processes on one PostgreSQL database, over real HTTP: the
 * count, the check and the record of an attempt are one step in the database, so however the attempts are
 * spread over the processes exactly the limit of them is checked. test/api/dashboard/throttle-bursts.test.ts
 * makes the same checks in one process.
 */

// Several processes on one database only make sense on PostgreSQL.
onPostgres()

/** More attempts at once than any limit, half at each process. */
const BURST = 30
/** The origin both processes serve the dashboard at, as behind one load balancer (PUBLIC_BASE_URL). */
const PUBLIC_BASE_URL = 'http://gateway.test'
const ORIGIN = new URL(PUBLIC_BASE_URL).origin
/** The throttles' window (loginWindowSeconds): what a throttled answer's Retry-After says. */
const WINDOW_SECONDS = 15 * 60

interface Reply extends HttpReply {
  /** Which process answered: 0 or 1. */
  process: number
}

interface Call {
  body?: unknown
  /** The sign-in cookie's value (mg_session). */
  cookie?: string
  csrf?: string
  /** The client's address, sent in X-Forwarded-For (the processes trust their loopback peer). */
  ip?: string
  /** X-Dashboard-Mode, for the merchant API called from a dashboard page. */
  mode?: 'test' | 'live'
  headers?: Record<string, string>
}

/** A signed-in user over HTTP: who they are, and the sign-in's cookie token and CSRF token. */
interface Session {
  uuid: string
  email: string
  password: string
  cookie: string
  csrf: string
}

const statuses = (replies: { status: number }[]) => {
  const counts: Record<number, number> = {}
  for (const r of replies) counts[r.status] = (counts[r.status] ?? 0) + 1
  return counts
}

/** How many of the replies with `status` each process gave, for the test's output: "3 + 2". */
const split = (replies: Reply[], status: number) =>
  [0, 1].map((p) => replies.filter((r) => r.status === status && r.process === p).length).join(' + ')

/** Every 429 is the throttle's (its window in Retry-After), not the API's per-key rate limit. */
function assertThrottled(replies: Reply[]): void {
  for (const reply of replies.filter((r) => r.status === 429)) {
    assert.equal(reply.json().error.code, 'rate_limited', reply.text)
    assert.equal(reply.headers.get('retry-after'), String(WINDOW_SECONDS), reply.text)
    assert.equal(reply.json().error.details.retry_after_seconds, WINDOW_SECONDS, reply.text)
  }
}

describe('dashboard throttles under bursts of attempts at two API processes on one PostgreSQL', () => {
  let ctx: TestContext
  let databaseUrl: string
  const apis: { program: Program; base: string }[] = []

  /** One real HTTP request to process `i % 2`, as the dashboard's pages send it (Origin always ours). */
  async function send(
    i: number,
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    call: Call = {},
  ): Promise<Reply> {
    const which = i % 2
    const api = apis[which]
    assert.ok(api, 'the API processes run')
    const headers: Record<string, string> = { 'user-agent': 'dashboard-e2e', origin: ORIGIN }
    if (call.cookie !== undefined) headers.cookie = `mg_session=${call.cookie}`
    if (call.csrf !== undefined) headers['x-csrf-token'] = call.csrf
    if (call.ip !== undefined) headers['x-forwarded-for'] = call.ip
    if (call.mode !== undefined) headers['x-dashboard-mode'] = call.mode
    if (call.body !== undefined) headers['content-type'] = 'application/json'
    Object.assign(headers, call.headers)
    const res = await fetch(`${api.base}${path}`, {
      method,
      headers,
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, process: which, json: () => JSON.parse(text) }
  }

  /** `count` requests sent at once, alternating between the processes. */
  const burst = (count: number, request: (i: number) => Promise<Reply>) =>
    Promise.all(Array.from({ length: count }, (_, i) => request(i)))

  /** A user invited and accepted through this process's services, on the database the programs share. */
  async function activeUser(role: 'owner' | 'viewer', merchantUuid = ctx.merchant.uuid) {
    const invited = await invite(ctx, role, newEmail(`e2e-${role}`), merchantUuid)
    const password = `pw-${sha256Hex(invited.token).slice(0, 20)}`
    await ctx.services.users.acceptInvitation(
      { token: invited.token, password },
      { ip: null, userAgent: 'dashboard-e2e' },
    )
    return { uuid: invited.user.uuid, email: invited.email, password }
  }

  /** Signs in over HTTP at process `i % 2`: the session cookie and CSRF token it answers. */
  async function signIn(
    i: number,
    user: { uuid: string; email: string; password: string },
    totp_code?: string,
  ): Promise<Session> {
    const reply = await send(i, 'POST', '/dashboard/api/session', {
      body: { email: user.email, password: user.password, ...(totp_code !== undefined && { totp_code }) },
    })
    assert.equal(reply.status, 200, reply.text)
    const cookie = reply.headers
      .getSetCookie()
      .map((header) => /^mg_session=([^;]*)/.exec(header)?.[1])
      .find(Boolean)
    assert.ok(cookie, 'the sign-in sets the session cookie')
    return { ...user, cookie, csrf: reply.json().csrf_token }
  }

  /** Turns the user's second factor on over HTTP, starting at one process and confirming at the other. */
  async function enrol(session: Session): Promise<string> {
    const started = await send(0, 'POST', '/dashboard/api/me/totp', session)
    assert.equal(started.status, 200, started.text)
    const { secret } = started.json()
    const confirmed = await send(1, 'POST', '/dashboard/api/me/totp/confirm', {
      ...session,
      body: { code: totpCode(secret) },
    })
    assert.equal(confirmed.status, 200, confirmed.text)
    return secret
  }

  before(async () => {
    // The database: fresh and migrated; this process's own app is not used.
    ctx = await createTestContext('postgres')
    databaseUrl = await postgresUrlOf(ctx)
    for (let i = 0; i < 2; i++) {
      const port = await freePort()
      const program = spawnProgram(
        ['serve', '--role', 'api'],
        // One master key for every process (the suites'): a sign-in's CSRF token and a user's TOTP secret hold
        // at either.
        serviceEnv(databaseUrl, port, {
          PUBLIC_BASE_URL,
          // The test's requests come from the loopback peer: its X-Forwarded-For names the client.
          TRUST_PROXY: '127.0.0.1',
        }),
      )
      apis.push({ program, base: `http://127.0.0.1:${port}` })
    }
    await eventually(
      async () => {
        for (const [i, api] of apis.entries()) assertRunning(api.program, `API process ${i + 1}`)
        const health = await Promise.all(
          apis.map((api) => fetch(`${api.base}/integration/health`).catch(() => null)),
        )
        await Promise.all(health.map((h) => h?.arrayBuffer()))
        return health.every((h) => h?.status === 200)
      },
      START_DEADLINE_MS,
      100,
    )
  })

  after(async () => {
    const codes = await Promise.all(apis.map((api) => stopProgram(api.program)))
    await ctx?.close()
    assert.deepEqual(
      codes,
      apis.map(() => 0),
      apis.map((api, i) => `API process ${i + 1} (exit ${codes[i]}):\n${api.program.output()}`).join('\n'),
    )
  })

  it('checks exactly 5 of 30 wrong passwords for one email sent at once from 30 addresses; a right sign-in before counts for nothing', async (t) => {
    const user = await activeUser('viewer')
    await signIn(1, user)
    const replies = await burst(BURST, (i) =>
      send(i, 'POST', '/dashboard/api/session', {
        body: { email: user.email, password: 'wrong-password' },
        ip: `10.30.0.${i}`,
      }),
    )
    assert.deepEqual(statuses(replies), { 401: 5, 429: BURST - 5 })
    assertThrottled(replies)
    const failed = (await auditRows(ctx, 'login_failed')).filter((r) => r.target_id === user.email)
    assert.equal(failed.length, 5)
    for (const row of failed) assert.equal(row.actor_user_uuid, user.uuid)
    const succeeded = (await auditRows(ctx, 'login_succeeded')).filter((r) => r.actor_user_uuid === user.uuid)
    assert.equal(succeeded.length, 1)
    t.diagnostic(
      `per email: 401 × 5 (${split(replies, 401)} per process), 429 × ${BURST - 5} (${split(replies, 429)})`,
    )
  })

  it('checks exactly 20 of 30 sign-ins with unknown emails sent at once from one address', async (t) => {
    const ip = '10.31.0.1'
    const replies = await burst(BURST, (i) =>
      send(i, 'POST', '/dashboard/api/session', { body: { email: newEmail('guess'), password: 'x' }, ip }),
    )
    const limit = ctx.config.dashboard.loginMaxFailuresPerAddress
    assert.equal(limit, 20, 'the programs run with the default limits too')
    assert.deepEqual(statuses(replies), { 401: limit, 429: BURST - limit })
    assertThrottled(replies)
    const failed = (await auditRows(ctx, 'login_failed')).filter((r) => r.ip === ip)
    assert.equal(failed.length, limit)
    t.diagnostic(
      `per address: 401 × ${limit} (${split(replies, 401)} per process), 429 × ${BURST - limit} (${split(replies, 429)})`,
    )
  })

  it('checks exactly 5 of 30 wrong sign-in codes sent at once with the right password', async (t) => {
    const user = await activeUser('viewer')
    const secret = await enrol(await signIn(0, user))
    const replies = await burst(BURST, (i) =>
      send(i, 'POST', '/dashboard/api/session', {
        body: { email: user.email, password: user.password, totp_code: '000000' },
        ip: `10.32.0.${i}`,
      }),
    )
    assert.deepEqual(statuses(replies), { 401: 5, 429: BURST - 5 })
    assertThrottled(replies)
    for (const reply of replies.filter((r) => r.status === 401))
      assert.equal(reply.json().error.code, 'totp_required', reply.text)
    const failed = (await auditRows(ctx, 'login_failed')).filter((r) => r.target_id === user.email)
    assert.equal(failed.length, 5)
    for (const row of failed) assert.deepEqual(row.details, { reason: 'totp_code' })
    // The right code too is refused until the window has passed.
    const right = await send(1, 'POST', '/dashboard/api/session', {
      body: { email: user.email, password: user.password, totp_code: totpCode(secret) },
      ip: '10.32.1.1',
    })
    assert.equal(right.status, 429, right.text)
    t.diagnostic(`sign-in codes: 401 × 5 (${split(replies, 401)} per process)`)
  })

  it('checks exactly 5 of 30 wrong codes sent at once to confirm, and to turn off, the second factor', async (t) => {
    const enrolling = await signIn(0, await activeUser('viewer'))
    const started = await send(1, 'POST', '/dashboard/api/me/totp', enrolling)
    assert.equal(started.status, 200, started.text)
    const confirms = await burst(BURST, (i) =>
      send(i, 'POST', '/dashboard/api/me/totp/confirm', { ...enrolling, body: { code: '000000' } }),
    )
    assert.deepEqual(statuses(confirms), { 422: 5, 429: BURST - 5 })
    assertThrottled(confirms)

    const enrolled = await signIn(1, await activeUser('viewer'))
    await enrol(enrolled)
    const removals = await burst(BURST, (i) =>
      send(i, 'DELETE', '/dashboard/api/me/totp', { ...enrolled, body: { code: '000000' } }),
    )
    assert.deepEqual(statuses(removals), { 422: 5, 429: BURST - 5 })
    assertThrottled(removals)
    for (const who of [enrolling, enrolled]) {
      const rejected = (await auditRows(ctx, 'totp_code_rejected')).filter((r) => r.target_id === who.uuid)
      assert.equal(rejected.length, 5)
    }
    t.diagnostic(
      `confirm: 422 × 5 (${split(confirms, 422)} per process); turn off: 422 × 5 (${split(removals, 422)})`,
    )
  })

  it('checks only the one step-up code left of 30 payouts sent at once with a wrong X-Dashboard-Totp', async (t) => {
    const merchant = await ctx.newMerchant('Two-process step-up')
    const owner = await signIn(0, await activeUser('owner', merchant.uuid))
    await enrol(owner)
    const required = await send(1, 'PUT', '/dashboard/api/merchant/security', {
      ...owner,
      body: { require_totp: true },
    })
    assert.equal(required.status, 200, required.text)
    assert.equal(required.json().require_totp, true)
    const stamp = Date.now().toString(36)
    const payout = (i: number) =>
      send(i, 'POST', '/integration/payouts', {
        ...owner,
        mode: 'test',
        body: {
          external_id: `burst-${stamp}-${i}`,
          amount: 1000,
          currency: 'USD',
          method: 'usdt_wallet',
          destination: { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' },
        },
        headers: { 'idempotency-key': `burst-${stamp}-${i}`, 'x-dashboard-totp': '000000' },
      })
    // Four wrong codes, two at each process: one is left.
    for (let i = 0; i < 4; i++) {
      const refused = await payout(i)
      assert.equal(refused.status, 403, refused.text)
      assert.deepEqual(refused.json().error.details, { totp_required: true, reason: 'invalid' })
    }
    const replies = await burst(BURST, (i) => payout(100 + i))
    assert.deepEqual(statuses(replies), { 403: 1, 429: BURST - 1 })
    assertThrottled(replies)
    const checked = replies.find((r) => r.status === 403)
    assert.deepEqual(checked?.json().error.details, { totp_required: true, reason: 'invalid' })
    const rejected = (await auditRows(ctx, 'totp_code_rejected')).filter((r) => r.target_id === owner.uuid)
    assert.equal(rejected.length, 5)
    const payouts = await ctx.db
      .selectFrom('payouts')
      .select('uuid')
      .where('merchant_uuid', '=', merchant.uuid)
      .execute()
    assert.equal(payouts.length, 0, 'no payout was made')
    t.diagnostic(`step-up: 403 × 1 (${split(replies, 403)} per process), 429 × ${BURST - 1}`)
  })
})

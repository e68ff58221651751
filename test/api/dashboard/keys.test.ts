import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely'
import { TableNode } from 'kysely'
import { asUser, auditRows, dashboard, signedIn } from '../../helpers/dashboard.ts'
import { backends, call, eventually } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

type Session = Awaited<ReturnType<typeof signedIn>>

/** Fails every UPDATE of api_keys while armed (the write of a key's last use). */
class KeyUseFault implements KyselyPlugin {
  armed = false
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const { node } = args
    const table = node.kind === 'UpdateQueryNode' ? node.table : undefined
    if (this.armed && table && TableNode.is(table) && table.table.identifier.name === 'api_keys')
      throw new Error('Connection terminated unexpectedly (injected)')
    return node
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result
  }
}

const FIELDS = ['created_at', 'key_id', 'last_used_at', 'mode', 'name', 'revoked_at', 'secret_last4']

interface KeyView {
  key_id: string
  name: string | null
  mode: string
  created_at: string
  revoked_at: string | null
  last_used_at: string | null
  secret_last4: string
}

for (const backend of backends()) {
  describe(`API keys in the dashboard (${backend})`, () => {
    const fault = new KeyUseFault()
    const ctx = suiteContext(backend, { plugins: [fault] })
    let developer: Session
    before(async () => {
      developer = await signedIn(ctx, 'developer')
    })

    const list = async (): Promise<KeyView[]> => {
      const res = await dashboard(ctx, 'GET', '/dashboard/api/keys', { cookie: developer.cookie })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers['cache-control'], 'no-store')
      return res.json().data
    }
    const keyOf = async (keyId: string) => (await list()).find((k) => k.key_id === keyId)

    it('lists the merchant’s keys of both modes, without secrets, and no other merchant’s', async () => {
      const keys = await list()
      const ids = keys.map((k) => k.key_id)
      assert.ok(ids.includes(ctx.merchant.keys.test.key_id))
      assert.ok(ids.includes(ctx.merchant.keys.live.key_id))
      assert.ok(!ids.includes(ctx.other.keys.test.key_id))
      for (const key of keys) assert.deepEqual(Object.keys(key).sort(), FIELDS)
      const live = keys.find((k) => k.key_id === ctx.merchant.keys.live.key_id)
      assert.equal(live?.mode, 'live')
      assert.equal(live?.secret_last4, ctx.merchant.keys.live.secret.slice(-4))
      const body = JSON.stringify(keys)
      assert.ok(!body.includes(ctx.merchant.keys.test.secret))
      assert.ok(!body.includes(ctx.merchant.keys.live.secret))
    })

    it('creates a key whose secret is shown once and works at once; audited without the secret', async () => {
      const res = await asUser(ctx, developer, 'POST', '/dashboard/api/keys', { mode: 'live' })
      assert.equal(res.statusCode, 201, res.body)
      const made = res.json()
      ctx.secrets.push(made.secret)
      assert.deepEqual(Object.keys(made).sort(), ['created_at', 'key_id', 'mode', 'name', 'secret'])
      assert.equal(made.name, null)
      assert.equal(made.mode, 'live')
      assert.match(made.key_id, /^mk_live_/)
      assert.match(made.secret, /^sk_live_/)
      const listed = await keyOf(made.key_id)
      assert.deepEqual(listed, {
        key_id: made.key_id,
        name: null,
        mode: 'live',
        created_at: made.created_at,
        revoked_at: null,
        last_used_at: null,
        secret_last4: made.secret.slice(-4),
      })
      // The shown secret is an API key of the merchant's live mode.
      const used = await ctx.app.inject({
        method: 'GET',
        url: '/integration/balances',
        headers: { 'x-api-key': made.secret },
      })
      assert.equal(used.statusCode, 200, used.body)
      const audit = (await auditRows(ctx, 'api_key_created')).filter((r) => r.target_id === made.key_id)
      assert.equal(audit.length, 1)
      assert.equal(audit[0]?.actor_user_uuid, developer.uuid)
      assert.equal(audit[0]?.mode, 'live')
      assert.equal(audit[0]?.merchant_uuid, ctx.merchant.uuid)
      assert.ok(!JSON.stringify(audit).includes(made.secret))
    })

    it('records when a key was last used: at its first use, then at most once a minute', async () => {
      const made = await ctx.services.merchants.createKey(ctx.merchant.uuid, 'test')
      assert.ok(made)
      ctx.secrets.push(made.secret)
      assert.equal((await keyOf(made.key_id))?.last_used_at, null)
      const before = Date.now()
      const res = await ctx.app.inject({
        method: 'GET',
        url: '/integration/balances',
        headers: { 'x-api-key': made.secret },
      })
      assert.equal(res.statusCode, 200)
      const first = await eventually(async () => (await keyOf(made.key_id))?.last_used_at)
      assert.ok(Date.parse(first) >= before - 1000)
      // Within the minute this process writes it no more.
      assert.equal(ctx.services.merchants.keyUsed(made.key_id), null)
      // A signed request is a use too.
      const signedKey = await ctx.services.merchants.createKey(ctx.merchant.uuid, 'test')
      assert.ok(signedKey)
      ctx.secrets.push(signedKey.secret)
      const signed = await call(ctx, 'GET', '/integration/balances', undefined, {
        auth: 'signature',
        as: { merchant: { uuid: ctx.merchant.uuid, keys: { ...ctx.merchant.keys, test: signedKey } } },
      })
      assert.equal(signed.statusCode, 200, signed.body)
      await eventually(async () => (await keyOf(signedKey.key_id))?.last_used_at)
      // A refused request is no use.
      const refusedKey = await ctx.services.merchants.createKey(ctx.merchant.uuid, 'test')
      assert.ok(refusedKey)
      ctx.secrets.push(refusedKey.secret)
      const refused = await ctx.app.inject({
        method: 'GET',
        url: '/integration/balances',
        headers: {
          'x-signature': `key_id=${refusedKey.key_id},t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`,
        },
      })
      assert.equal(refused.statusCode, 401)
      assert.equal(ctx.services.merchants.keyUsed(refusedKey.key_id) !== null, true)
    })

    it('answers the request even when the write of the last use fails', async () => {
      const made = await ctx.services.merchants.createKey(ctx.merchant.uuid, 'test')
      assert.ok(made)
      ctx.secrets.push(made.secret)
      fault.armed = true
      try {
        const res = await ctx.app.inject({
          method: 'GET',
          url: '/integration/balances',
          headers: { 'x-api-key': made.secret },
        })
        assert.equal(res.statusCode, 200, res.body)
      } finally {
        fault.armed = false
      }
      assert.equal((await keyOf(made.key_id))?.last_used_at, null)
    })

    it('revokes a key: 401 from the next request at once; again is 409; another merchant’s is 404', async () => {
      const made = await asUser(ctx, developer, 'POST', '/dashboard/api/keys', { mode: 'test' })
      assert.equal(made.statusCode, 201, made.body)
      const { key_id, secret } = made.json()
      ctx.secrets.push(secret)
      // Used once, so this process has it in its key cache.
      const before = {
        method: 'GET' as const,
        url: '/integration/balances',
        headers: { 'x-api-key': secret },
      }
      assert.equal((await ctx.app.inject(before)).statusCode, 200)

      const revoked = await asUser(ctx, developer, 'DELETE', `/dashboard/api/keys/${key_id}`)
      assert.equal(revoked.statusCode, 200, revoked.body)
      assert.equal(revoked.json().key_id, key_id)
      assert.equal(typeof revoked.json().revoked_at, 'string')
      const after = await ctx.app.inject(before)
      assert.equal(after.statusCode, 401, after.body)
      assert.equal((await keyOf(key_id))?.revoked_at, revoked.json().revoked_at)
      const audit = (await auditRows(ctx, 'api_key_revoked')).filter((r) => r.target_id === key_id)
      assert.equal(audit.length, 1)
      assert.equal(audit[0]?.actor_user_uuid, developer.uuid)

      const again = await asUser(ctx, developer, 'DELETE', `/dashboard/api/keys/${key_id}`)
      assert.equal(again.statusCode, 409, again.body)
      assert.equal(again.json().error.code, 'invalid_state')

      for (const other of [ctx.other.keys.test.key_id, 'mk_test_nothing', 'x'.repeat(100)]) {
        const res = await asUser(ctx, developer, 'DELETE', `/dashboard/api/keys/${other}`)
        assert.equal(res.statusCode, 404, res.body)
        assert.equal(res.json().error.code, 'not_found')
      }
      const theirs = await ctx.app.inject({
        method: 'GET',
        url: '/integration/balances',
        headers: { 'x-api-key': ctx.other.keys.test.secret },
      })
      assert.equal(theirs.statusCode, 200)
      assert.equal((await auditRows(ctx, 'api_key_revoked')).length, 1)
    })

    it('names a key where it is made, shows the name in the list, renames it and takes it away; audited', async () => {
      const made = await asUser(ctx, developer, 'POST', '/dashboard/api/keys', {
        mode: 'test',
        name: '  Checkout server ',
      })
      assert.equal(made.statusCode, 201, made.body)
      const { key_id, secret, name } = made.json()
      ctx.secrets.push(secret)
      assert.equal(name, 'Checkout server')
      assert.equal((await keyOf(key_id))?.name, 'Checkout server')

      const renamed = await asUser(ctx, developer, 'PATCH', `/dashboard/api/keys/${key_id}`, {
        name: 'Reconciliation job',
      })
      assert.equal(renamed.statusCode, 200, renamed.body)
      assert.deepEqual(renamed.json(), await keyOf(key_id))
      assert.equal(renamed.json().name, 'Reconciliation job')
      assert.ok(!renamed.body.includes(secret))

      // A revoked key keeps its name and can be renamed; null takes the name away.
      assert.equal((await asUser(ctx, developer, 'DELETE', `/dashboard/api/keys/${key_id}`)).statusCode, 200)
      const unnamed = await asUser(ctx, developer, 'PATCH', `/dashboard/api/keys/${key_id}`, { name: null })
      assert.equal(unnamed.statusCode, 200, unnamed.body)
      assert.equal((await keyOf(key_id))?.name, null)

      const audit = (await auditRows(ctx, 'api_key_renamed')).filter((r) => r.target_id === key_id)
      assert.deepEqual(
        audit.map((row) => [row.actor_user_uuid, row.mode, row.details]),
        [
          [developer.uuid, 'test', { name: 'Reconciliation job' }],
          [developer.uuid, 'test', { name: null }],
        ],
      )

      for (const other of [ctx.other.keys.test.key_id, 'mk_test_nothing']) {
        const res = await asUser(ctx, developer, 'PATCH', `/dashboard/api/keys/${other}`, { name: 'mine' })
        assert.equal(res.statusCode, 404, res.body)
        assert.equal(res.json().error.code, 'not_found')
      }
      const theirs = await ctx.db
        .selectFrom('api_keys')
        .select('name')
        .where('key_id', '=', ctx.other.keys.test.key_id)
        .executeTakeFirstOrThrow()
      assert.equal(theirs.name, null)
      for (const body of [
        { name: '' },
        { name: '   ' },
        { name: 'a\nb' },
        { name: 'n'.repeat(101) },
        {},
        { name: 1 },
      ]) {
        const res = await asUser(ctx, developer, 'PATCH', `/dashboard/api/keys/${key_id}`, body)
        assert.equal(res.statusCode, 422, `${JSON.stringify(body)}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
      }
    })

    it('refuses bad input with the error envelope, and changes without a session, Origin or CSRF token', async () => {
      for (const body of [
        { mode: 'prod' },
        { mode: 'test', extra: 1 },
        {},
        { mode: 1 },
        { mode: 'test', name: '' },
        { mode: 'test', name: '\t' },
        { mode: 'test', name: 'n'.repeat(101) },
      ]) {
        const res = await asUser(ctx, developer, 'POST', '/dashboard/api/keys', body)
        assert.equal(res.statusCode, 422, `${JSON.stringify(body)}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
      }
      const tooLong = await asUser(ctx, developer, 'DELETE', `/dashboard/api/keys/${'k'.repeat(101)}`)
      assert.ok(tooLong.statusCode >= 400 && tooLong.statusCode < 500, tooLong.body)
      assert.ok(tooLong.json().error)

      const count = async () =>
        (
          await ctx.db
            .selectFrom('api_keys')
            .select('key_id')
            .where('merchant_uuid', '=', ctx.merchant.uuid)
            .execute()
        ).length
      const keysBefore = await count()
      for (const [call, status] of [
        [{ cookie: developer.cookie }, 403],
        [{ cookie: developer.cookie, csrf: developer.csrf, origin: 'https://evil.example' }, 403],
        [{ csrf: developer.csrf }, 401],
      ] as const) {
        const res = await dashboard(ctx, 'POST', '/dashboard/api/keys', { ...call, body: { mode: 'test' } })
        assert.equal(res.statusCode, status, res.body)
      }
      const noSession = await dashboard(ctx, 'GET', '/dashboard/api/keys')
      assert.equal(noSession.statusCode, 401)
      assert.equal(await count(), keysBefore)
    })
  })
}

import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { parse } from 'csv-parse/sync'
import { activeUser, asUser, dashboard, type Session, signedIn } from '../../helpers/dashboard.ts'
import { backends, paidTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

interface Entry {
  uuid: string
  at: string
  action: string
  actor_user_uuid: string | null
  target_type: string | null
  target_id: string | null
  target_kind: string | null
  target_path: string | null
  details: Record<string, unknown> | null
  [field: string]: unknown
}

const CSV_COLUMNS =
  'uuid,at,action,via,actor_user_uuid,actor_email,target_type,target_id,target_kind,target_path,mode,ip,user_agent,details'

for (const backend of backends()) {
  describe(`the audit log's filters, links and export (${backend})`, () => {
    const ctx = suiteContext(backend)
    let owner: Session
    let admin: Session
    let member: { uuid: string }
    let between: string
    let paymentUuid: string
    let refundUuid: string
    let keyId: string

    /** Every entry the query finds, page by page, newest first. */
    const entries = async (query = ''): Promise<Entry[]> => {
      const seen: Entry[] = []
      let cursor: string | null = null
      do {
        const url: string = `/dashboard/api/audit-log?per_page=3${query}${cursor ? `&cursor=${cursor}` : ''}`
        const res = await asUser(ctx, owner, 'GET', url)
        assert.equal(res.statusCode, 200, res.body)
        seen.push(...res.json().data)
        cursor = res.json().next_cursor
      } while (cursor)
      return seen
    }

    before(async () => {
      owner = await signedIn(ctx, 'owner')
      admin = await signedIn(ctx, 'admin')
      member = await activeUser(ctx, 'viewer')
      assert.equal(
        (await asUser(ctx, owner, 'PATCH', `/dashboard/api/users/${member.uuid}`, { role: 'support' }))
          .statusCode,
        200,
      )
      // Every row so far is before `between`, every later one after it: wait for the clock to pass it.
      const t = Date.now() + 1
      between = new Date(t).toISOString()
      while (Date.now() <= t) await new Promise((resolve) => setImmediate(resolve))
      const made = await asUser(ctx, admin, 'POST', '/dashboard/api/keys', { mode: 'test', name: 'Audited' })
      assert.equal(made.statusCode, 201, made.body)
      ctx.secrets.push(made.json().secret)
      keyId = made.json().key_id
      const paid = await paidTransaction(ctx)
      paymentUuid = paid.uuid
      const refunded = await dashboard(ctx, 'POST', '/integration/refunds', {
        mode: 'test',
        cookie: owner.cookie,
        csrf: owner.csrf,
        headers: { 'idempotency-key': `audit-${paid.uuid}` },
        body: { transaction_uuid: paid.uuid, amount_minor: 100 },
      })
      assert.equal(refunded.statusCode, 201, refunded.body)
      refundUuid = refunded.json().uuid
      // Another merchant's activity never shows.
      const theirs = await signedIn(ctx, 'owner', ctx.other.uuid)
      await asUser(ctx, theirs, 'POST', '/dashboard/api/keys', { mode: 'test' }).then((res) =>
        ctx.secrets.push(res.json().secret),
      )
    })

    it('filters by person, by action (one or several) and by date range, pages bound to the filters', async () => {
      const all = await entries()
      assert.ok(all.length >= 6, String(all.length))
      const byAdmin = await entries(`&actor_user_uuid=${admin.uuid}`)
      assert.ok(byAdmin.length >= 2)
      assert.deepEqual(
        byAdmin.map((e) => e.uuid),
        all.filter((e) => e.actor_user_uuid === admin.uuid).map((e) => e.uuid),
      )
      const keysAndRoles = await entries('&action=user_role_changed,api_key_created')
      assert.deepEqual(
        keysAndRoles.map((e) => [e.action, e.target_id]),
        [
          ['api_key_created', keyId],
          ['user_role_changed', member.uuid],
        ],
      )
      assert.deepEqual(
        (await entries('&action=api_key_created,user_role_changed')).map((e) => e.uuid),
        keysAndRoles.map((e) => e.uuid),
      )
      const after = await entries(`&from=${between}`)
      const before = await entries(`&to=${between}`)
      assert.ok(after.length > 0 && before.length > 0)
      assert.ok(after.every((e) => e.at >= between))
      assert.ok(before.every((e) => e.at <= between))
      assert.deepEqual(
        [...after, ...before].map((e) => e.uuid),
        all.map((e) => e.uuid),
      )
      assert.deepEqual(
        (await entries(`&action=user_role_changed&from=${between}`)).map((e) => e.uuid),
        [],
      )
      const today = new Date().toISOString().slice(0, 10)
      assert.equal((await entries(`&from=${today}&to=${today}`)).length, all.length)

      // A cursor of other filters is refused; so are filters that do not parse.
      const first = await asUser(
        ctx,
        owner,
        'GET',
        '/dashboard/api/audit-log?per_page=1&action=api_key_created,user_role_changed',
      )
      const cursor = first.json().next_cursor
      assert.ok(cursor)
      for (const query of [
        `per_page=1&cursor=${cursor}`,
        `per_page=1&cursor=${cursor}&action=logout`,
        'action=nothing',
        'action=logout,',
        'actor_user_uuid=not-a-uuid',
        'from=2026-13-01',
        'from=2026-12-02&to=2026-12-01',
        'to=yesterday',
      ]) {
        const res = await asUser(ctx, owner, 'GET', `/dashboard/api/audit-log?${query}`)
        assert.equal(res.statusCode, 422, `${query}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
      }
    })

    it('names each target and the page that shows it', async () => {
      const all = await entries()
      const find = (action: string, targetId: string) =>
        all.find((e) => e.action === action && e.target_id === targetId)
      const refund = find('api_operation', refundUuid)
      assert.deepEqual(
        [refund?.target_kind, refund?.target_path, refund?.details?.operation],
        ['refund', `/payments/${paymentUuid}`, 'createRefund'],
      )
      const key = find('api_key_created', keyId)
      assert.deepEqual([key?.target_kind, key?.target_path], ['api_key', '/developers/api-keys'])
      const role = find('user_role_changed', member.uuid)
      assert.deepEqual([role?.target_kind, role?.target_path], ['user', '/settings/people'])
    })

    it('exports the filtered log as CSV, every row, the same as its pages', async () => {
      const csvOf = async (query: string) => {
        const res = await dashboard(ctx, 'GET', `/dashboard/api/audit-log?${query}`, {
          cookie: owner.cookie,
          headers: { accept: 'text/csv' },
        })
        assert.equal(res.statusCode, 200, res.body)
        assert.match(String(res.headers['content-type']), /^text\/csv; charset=utf-8$/)
        assert.equal(res.headers['content-disposition'], 'attachment; filename="audit-log.csv"')
        assert.ok(res.body.endsWith('\r\n'))
        const [header, ...rows] = parse(res.body, { record_delimiter: '\r\n' }) as string[][]
        return { header: header?.join(','), rows }
      }
      for (const query of ['', `actor_user_uuid=${admin.uuid}`, 'action=api_operation', `from=${between}`]) {
        const json = await entries(query ? `&${query}` : '')
        const csv = await csvOf(query)
        assert.equal(csv.header, CSV_COLUMNS)
        assert.deepEqual(
          csv.rows,
          json.map((entry) =>
            CSV_COLUMNS.split(',').map((column) => {
              const value = entry[column]
              return value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value)
            }),
          ),
          query,
        )
      }
      const withCursor = await dashboard(ctx, 'GET', '/dashboard/api/audit-log?cursor=abc', {
        cookie: owner.cookie,
        headers: { accept: 'text/csv' },
      })
      assert.equal(withCursor.statusCode, 422, withCursor.body)
      // Only the roles that read the log export it.
      const support = await signedIn(ctx, 'support')
      const refused = await dashboard(ctx, 'GET', '/dashboard/api/audit-log', {
        cookie: support.cookie,
        headers: { accept: 'text/csv' },
      })
      assert.equal(refused.statusCode, 403, refused.body)
    })
  })
}

import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { newCallbackSecret, signCallback } from '../../../src/connectors/http-acquirer/signature.ts'
import { registry } from '../../../src/lib/metrics.ts'
import { runMaintenance } from '../../../src/workers/maintenance.ts'
import { backends } from '../../helpers/harness.ts'
import { seededRandom } from '../../helpers/random.ts'
import { rowCounts } from '../../helpers/rows.ts'
import { suiteContext } from '../../helpers/suite.ts'

const callback = (reference: string, type = 'payment.succeeded') =>
  JSON.stringify({ id: `evt_${reference}`, type, data: { reference, amount: 150000, currency: 'RUB' } })

for (const backend of backends()) {
  describe(`provider callbacks (${backend})`, () => {
    const ctx = suiteContext(backend, { secrets: ['sk_acquirer_key'] })
    let account: { uuid: string; secret: string }
    let secret: string
    let other: { uuid: string; secret: string }
    /** An acquirer account in live mode: its id and its first callback secret. */
    const addAcquirer = async (name: string) => {
      const added = await ctx.services.providers.accounts.add({
        name,
        kind: 'http-acquirer',
        mode: 'live',
        settings: { base_url: `https://${name}.example/v1` },
        secrets: { api_key: 'sk_acquirer_key' },
      })
      ctx.secrets.push(added.callbackSecret as string)
      return { uuid: added.account.uuid, secret: added.callbackSecret as string }
    }
    before(async () => {
      account = await addAcquirer('acquirer')
      /** The account's current secret: the rotations below change it. */
      secret = account.secret
      other = await addAcquirer('acquirer-two')
    })

    const post = (
      uuid: string,
      body: string | Buffer,
      headers: Record<string, string> = {},
      contentType: string | null = 'application/json',
    ) =>
      ctx.app.inject({
        method: 'POST',
        url: `/providers/${uuid}/callbacks`,
        headers: { ...(contentType ? { 'content-type': contentType } : {}), ...headers },
        payload: body,
      })
    const signed = (body: string, secrets = [secret], at = new Date()) =>
      signCallback(secrets, `msg_${Math.floor(at.getTime())}`, at, body)
    const logged = (uuid: string) =>
      ctx.db.selectFrom('connector_callbacks').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow()
    /** What a callback could change: nothing may move while no verified outcome is applied. */
    const state = () => rowCounts(ctx.db, ['transactions', 'refunds', 'payouts', 'events', 'journal_entries'])

    it('acknowledges a verified callback about a reference it never handed over, and keeps it as unmatched', async () => {
      const body = callback('acq_unknown_1')
      const headers = signed(body)
      const res = await post(account.uuid, body, { ...headers, authorization: 'Bearer provider-token' })
      assert.equal(res.statusCode, 200, res.body)
      const answer = res.json()
      assert.equal(answer.result, 'unmatched')
      const row = await logged(answer.callback_id)
      assert.equal(row.account_uuid, account.uuid)
      assert.equal(row.verification, 'verified')
      assert.equal(row.result, 'unmatched')
      assert.equal(row.event_type, 'payment.succeeded')
      assert.equal(row.provider_reference, 'acq_unknown_1')
      assert.equal(row.body, body)
      assert.equal(row.headers['webhook-signature'], headers['webhook-signature'])
      // Credentials a proxy or provider adds are never kept.
      assert.equal(row.headers.authorization, undefined)
    })

    it('refuses, and keeps, a callback signed with another account’s secret, a stale one, and an unsigned one', async () => {
      const before = await state()
      const body = callback('acq_2')
      const cases: [string, Record<string, string>, string, string][] = [
        ['another account’s secret', signed(body, [other.secret]), 'signature_invalid', 'mismatch'],
        ['a secret nobody has', signed(body, [newCallbackSecret()]), 'signature_invalid', 'mismatch'],
        [
          'ten minutes old',
          signed(body, [secret], new Date(Date.now() - 600_000)),
          'signature_expired',
          'stale',
        ],
        ['no signature', {}, 'signature_invalid', 'unsigned'],
      ]
      for (const [what, headers, code, verification] of cases) {
        const res = await post(account.uuid, body, headers)
        assert.equal(res.statusCode, 401, what)
        assert.equal(res.json().error.code, code, what)
        const row = await logged(res.json().error.details.callback_id)
        assert.deepEqual([row.verification, row.result], [verification, 'refused'], what)
      }
      const refusedCount = async () =>
        (await registry.getSingleMetric('provider_callbacks_total')?.get())?.values.find(
          (v) => v.labels.account === 'acquirer' && v.labels.result === 'refused',
        )?.value ?? 0
      assert.ok((await refusedCount()) >= cases.length)
      // The other account verifies its own.
      assert.equal((await post(other.uuid, body, signed(body, [other.secret]))).statusCode, 200)
      assert.deepEqual(await state(), before)
    })

    it('accepts the previous secret through a rotation’s overlap, and not after one without', async () => {
      const body = callback('acq_3')
      const previous = secret
      const rotated = await ctx.services.providers.accounts.rotateCallbackSecret('acquirer', {
        overlapSeconds: 600,
      })
      ctx.secrets.push(rotated.secret)
      assert.equal((await post(account.uuid, body, signed(body, [previous]))).statusCode, 200)
      assert.equal((await post(account.uuid, body, signed(body, [rotated.secret]))).statusCode, 200)
      const again = await ctx.services.providers.accounts.rotateCallbackSecret('acquirer', {
        overlapSeconds: 0,
      })
      ctx.secrets.push(again.secret)
      secret = again.secret
      assert.equal((await post(account.uuid, body, signed(body, [rotated.secret]))).statusCode, 401)
      assert.equal((await post(account.uuid, body, signed(body, [secret]))).statusCode, 200)
    })

    it('answers 400 to a verified body it cannot read, and keeps it with why', async () => {
      const bodies: [string, string][] = [
        ['not JSON', 'status=paid'],
        ['no type', JSON.stringify({ id: 'evt', data: { reference: 'acq' } })],
        ['an unknown type', callback('acq_4', 'payment.refunded_twice')],
        ['no reference', JSON.stringify({ id: 'evt', type: 'payment.failed', data: {} })],
        [
          'a negative amount',
          JSON.stringify({ id: 'e', type: 'payment.failed', data: { reference: 'a', amount: -1 } }),
        ],
      ]
      for (const [what, body] of bodies) {
        const res = await post(account.uuid, body, signed(body))
        assert.equal(res.statusCode, 400, `${what}: ${res.body}`)
        assert.equal(res.json().error.code, 'malformed_request', `${what}: ${res.body}`)
        assert.ok(res.json().error.details, `${what}: ${res.body}`)
        const row = await logged(res.json().error.details.callback_id)
        assert.deepEqual([row.verification, row.result], ['verified', 'malformed'], what)
        assert.ok(row.detail.length > 0)
      }
    })

    it('answers 404 for an account that does not exist or takes no callbacks', async () => {
      const body = callback('acq_5')
      const simulator = await ctx.services.providers.accounts.add({
        name: 'sandbox',
        kind: 'simulator',
        mode: 'test',
        settings: {},
        secrets: {},
      })
      for (const uuid of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', simulator.account.uuid]) {
        const res = await post(uuid, body, signed(body))
        assert.equal(res.statusCode, 404, uuid)
        assert.equal(res.json().error.code, 'not_found')
      }
    })

    it('meets hostile input with a 4xx or a 2xx and never a 5xx or a change', async () => {
      const before = await state()
      const random = seededRandom(44)
      const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)))
      const statuses = new Set<number>()
      const sent: [string, string | Buffer, Record<string, string>, string | null][] = [
        ['a huge body', 'x'.repeat(70_000), {}, 'application/json'],
        ['form-encoded', 'type=payment.succeeded&reference=acq_6', {}, 'application/x-www-form-urlencoded'],
        ['plain text', 'paid', {}, 'text/plain'],
        ['no content type', callback('acq_7'), signed(callback('acq_7')), null],
        ['a NUL inside', callback('acq_\u00008'), signed(callback('acq_\u00008')), 'application/json'],
        ['not UTF-8', Buffer.from([0xff, 0xfe, 0x7b, 0x7d]), {}, 'application/json'],
        ['an empty body', '', signed(''), 'application/json'],
        [
          'a replay with another body',
          callback('acq_9', 'payment.failed'),
          signed(callback('acq_9')),
          'application/json',
        ],
        [
          'a signature header of garbage',
          callback('acq_10'),
          { ...signed(callback('acq_10')), 'webhook-signature': 'v1,,,, v2' },
          'application/json',
        ],
        [
          'a timestamp far in the future',
          callback('acq_11'),
          signed(callback('acq_11'), [secret], new Date(Date.now() + 3_600_000)),
          'application/json',
        ],
      ]
      for (let i = 0; i < 40; i++) {
        const body = bytes(Math.floor(random() * 2048))
        sent.push([
          `random bytes ${i}`,
          body,
          i % 2 ? signed(body.toString('utf8')) : {},
          i % 3 ? 'application/json' : 'application/octet-stream',
        ])
      }
      for (const [what, body, headers, contentType] of sent) {
        const res = await post(account.uuid, body, headers, contentType)
        statuses.add(res.statusCode)
        assert.ok(res.statusCode < 500, `${what}: ${res.statusCode} ${res.body}`)
        assert.ok(!res.body.includes(secret), what)
      }
      assert.ok(statuses.has(413) && statuses.has(401) && statuses.has(400), [...statuses].join(','))
      assert.deepEqual(await state(), before)
    })

    it('forgets callbacks past their retention at housekeeping, and only those', async () => {
      const all = await ctx.db.selectFrom('connector_callbacks').select(['uuid', 'received_at']).execute()
      assert.ok(all.length > 2)
      const [old, edge] = all
      const DAY = 86_400_000
      const now = new Date()
      await ctx.db
        .updateTable('connector_callbacks')
        .set({ received_at: new Date(now.getTime() - 91 * DAY) })
        .where('uuid', '=', old?.uuid as string)
        .execute()
      await ctx.db
        .updateTable('connector_callbacks')
        .set({ received_at: new Date(now.getTime() - 89 * DAY) })
        .where('uuid', '=', edge?.uuid as string)
        .execute()
      await runMaintenance(ctx.db, ctx.app.log, ctx.services)
      const left = new Set(
        (await ctx.db.selectFrom('connector_callbacks').select('uuid').execute()).map((row) => row.uuid),
      )
      assert.equal(left.has(old?.uuid as string), false)
      assert.equal(left.has(edge?.uuid as string), true)
      assert.equal(left.size, all.length - 1)
    })
  })
}

import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { backends, call, extId, newTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const CREATE = '/integration/transactions'
const N = 50

for (const backend of backends()) {
  describe(`concurrent transaction creation (${backend})`, () => {
    const ctx = suiteContext(backend)

    const rowsWithExternalId = (externalId: string) =>
      ctx.db.selectFrom('transactions').select('uuid').where('external_id', '=', externalId).execute()
    /** How many times the p2p_card requisites were handed out: a rolled-back create must not count. */
    const assignments = async () => {
      const rows = await ctx.db
        .selectFrom('requisites')
        .select('assigned_count')
        .where('payment_method', '=', 'p2p_card')
        .execute()
      return rows.reduce((sum, r) => sum + Number(r.assigned_count), 0)
    }

    it(`${N} simultaneous creates with one Idempotency-Key make one transaction; the rest replay or wait`, async () => {
      const key = `burst-${randomBytes(8).toString('hex')}`
      const body = newTransaction({ payment_method: 'p2p_card' })
      const assignedBefore = await assignments()
      const responses = await Promise.all(
        Array.from({ length: N }, () => call(ctx, 'POST', CREATE, body, { idempotencyKey: key })),
      )

      const originals = responses.filter(
        (r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined,
      )
      assert.equal(
        originals.length,
        1,
        responses.map((r) => `${r.statusCode} ${r.body.slice(0, 80)}`).join('\n'),
      )
      const original = originals[0] as (typeof responses)[number]
      const created = original.json()
      assert.equal(original.headers.location, `/integration/transactions/${created.uuid}`)

      let replays = 0
      let inProgress = 0
      for (const res of responses) {
        if (res === original) continue
        if (res.statusCode === 201) {
          assert.equal(res.headers['idempotent-replayed'], 'true')
          assert.equal(res.body, original.body)
          assert.equal(res.headers.location, original.headers.location)
          replays++
        } else {
          assert.equal(res.statusCode, 409, res.body)
          assert.equal(res.json().error.code, 'idempotency_request_in_progress')
          assert.equal(res.headers['retry-after'], '1')
          inProgress++
        }
      }
      assert.equal(replays + inProgress, N - 1)

      const rows = await rowsWithExternalId(body.external_id)
      assert.deepEqual(
        rows.map((r) => r.uuid),
        [created.uuid],
      )
      assert.ok(created.requisites)
      assert.equal(await assignments(), assignedBefore + 1)

      // Afterwards every retry is a replay.
      const later = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(later.statusCode, 201)
      assert.equal(later.headers['idempotent-replayed'], 'true')
      assert.equal(later.body, original.body)
    })

    it(`${N} simultaneous creates with one external_id and no key make one transaction and ${N - 1} × 409 conflict`, async () => {
      const body = newTransaction({ payment_method: 'p2p_card' })
      const assignedBefore = await assignments()
      const responses = await Promise.all(Array.from({ length: N }, () => call(ctx, 'POST', CREATE, body)))

      const created = responses.filter((r) => r.statusCode === 201)
      assert.equal(
        created.length,
        1,
        responses.map((r) => `${r.statusCode} ${r.body.slice(0, 80)}`).join('\n'),
      )
      const conflicts = responses.filter((r) => r.statusCode === 409)
      assert.equal(
        conflicts.length,
        N - 1,
        responses
          .filter((r) => r.statusCode !== 409)
          .map((r) => `${r.statusCode} ${r.body.slice(0, 300)}`)
          .join('\n'),
      )
      for (const res of conflicts) {
        const error = res.json().error
        assert.equal(error.code, 'conflict')
        assert.equal(error.details?.external_id, body.external_id)
        assert.equal(res.headers['idempotent-replayed'], undefined)
      }
      const rows = await rowsWithExternalId(body.external_id)
      assert.deepEqual(
        rows.map((r) => r.uuid),
        [created[0]?.json().uuid],
      )
      // The losers' requisite assignments rolled back with their inserts: at most the winner's is counted (a
      // create that finds every requisite being assigned shares the least recently used one without marking it).
      const assignedAfter = await assignments()
      assert.ok(
        assignedAfter === assignedBefore || assignedAfter === assignedBefore + 1,
        `${assignedBefore} → ${assignedAfter}`,
      )
    })

    it(`${N} simultaneous distinct creates all succeed: keys and external_ids do not block each other`, async () => {
      const prefix = extId('many')
      const responses = await Promise.all(
        Array.from({ length: N }, (_, i) =>
          call(ctx, 'POST', CREATE, newTransaction({ external_id: `${prefix}-${i}` }), {
            idempotencyKey: `${prefix}-key-${i}`,
          }),
        ),
      )
      for (const res of responses) {
        assert.equal(res.statusCode, 201, res.body)
        assert.equal(res.headers['idempotent-replayed'], undefined)
      }
      assert.equal(new Set(responses.map((r) => r.json().uuid)).size, N)
      const rows = await ctx.db
        .selectFrom('transactions')
        .select('uuid')
        .where('external_id', 'like', `${prefix}-%`)
        .execute()
      assert.equal(rows.length, N)
    })
  })
}

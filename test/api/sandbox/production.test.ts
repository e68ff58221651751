import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Mode } from '../../../src/db/types.ts'
import { suiteAcquirer } from '../../helpers/acquirer.ts'
import { backends, call, newTransaction } from '../../helpers/harness.ts'
import { providerCallbacks } from '../../helpers/rows.ts'
import { suiteContext } from '../../helpers/suite.ts'
import { eventRows } from '../webhooks/helpers.ts'

const SIMULATIONS = [
  ['paid', 'paid'],
  ['failed', 'failed'],
  ['expired', 'expired'],
  ['failed-then-paid', 'paid'],
] as const

for (const backend of backends()) {
  describe(`sandbox with APP_ENV=production (${backend})`, () => {
    const ctx = suiteContext(backend, { config: { appEnv: 'production' } })
    // Production has no default provider for live payments: they go to an acquirer (the emulator).
    suiteAcquirer(ctx)

    const create = async (mode: Mode) => {
      const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(), { as: { mode } })
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }
    const simulate = (uuid: string, simulation: string, mode: Mode) =>
      call(ctx, 'POST', `/integration/sandbox/transactions/${uuid}/${simulation}`, undefined, {
        as: { mode },
      })

    it('a live key gets 403 sandbox_unavailable, and nothing changes', async () => {
      for (const [simulation] of SIMULATIONS) {
        const tx = await create('live')
        for (const auth of ['apiKey', 'signature'] as const) {
          const res = await call(
            ctx,
            'POST',
            `/integration/sandbox/transactions/${tx.uuid}/${simulation}`,
            undefined,
            {
              as: { mode: 'live' },
              auth,
            },
          )
          assert.equal(res.statusCode, 403, `${simulation}: ${res.body}`)
          assert.equal(res.json().error.code, 'sandbox_unavailable')
          assert.equal(res.json().error.request_id, res.headers['x-request-id'])
        }
        const after = (
          await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`, undefined, { as: { mode: 'live' } })
        ).json()
        assert.equal(after.status, 'pending')
        assert.equal(after.aggregate_version, 1)
        assert.deepEqual(await eventRows(ctx, tx.uuid), [])
        const callbacks = await providerCallbacks(ctx.db, tx.uuid)
        assert.deepEqual(callbacks, [])
      }
    })

    it('a test key works', async () => {
      for (const [simulation, status] of SIMULATIONS) {
        const tx = await create('test')
        const res = await simulate(tx.uuid, simulation, 'test')
        assert.equal(res.statusCode, 200, `${simulation}: ${res.body}`)
        assert.equal(res.json().uuid, tx.uuid)
        assert.equal(res.json().status, status)
        const versions = simulation === 'failed-then-paid' ? 3 : 2
        assert.equal(res.json().aggregate_version, versions)
        const events = await ctx.db
          .selectFrom('events')
          .select('event')
          .where('aggregate_uuid', '=', tx.uuid)
          .execute()
        assert.equal(events.length, versions - 1)
      }
    })

    it('a test key: 404 for an unknown or malformed uuid, a live transaction, another merchant', async () => {
      const live = await create('live')
      const theirs = await call(ctx, 'POST', '/integration/transactions', newTransaction(), {
        as: { merchant: ctx.other, mode: 'test' },
      })
      assert.equal(theirs.statusCode, 201)
      for (const uuid of [
        '01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10',
        'not-a-uuid',
        live.uuid,
        theirs.json().uuid,
      ]) {
        const res = await simulate(uuid, 'paid', 'test')
        assert.equal(res.statusCode, 404, `${uuid}: ${res.body}`)
        assert.equal(res.json().error.code, 'not_found')
      }
      const again = await call(ctx, 'GET', `/integration/transactions/${theirs.json().uuid}`, undefined, {
        as: { merchant: ctx.other },
      })
      assert.equal(again.json().status, 'pending')
    })
  })
}

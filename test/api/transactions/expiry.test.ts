import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { makeOverdue } from '../../helpers/expiry.ts'
import { backends, call, newTransaction } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

for (const backend of backends()) {
  describe(`expiry job (${backend})`, () => {
    const ctx = suiteContext(backend)

    const create = async () => {
      const res = await call(ctx, 'POST', '/integration/transactions', newTransaction())
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }
    const eventsOf = (uuid: string) =>
      ctx.db.selectFrom('events').selectAll().where('aggregate_uuid', '=', uuid).execute()

    it('expires overdue pending transactions with one transaction.expired event each, and leaves the rest', async () => {
      const overdue = [await create(), await create(), await create()]
      const fresh = await create()
      const paid = await create()
      await call(ctx, 'POST', `/integration/sandbox/transactions/${paid.uuid}/paid`)
      for (const tx of [...overdue, paid]) await makeOverdue(ctx.db, tx.uuid)

      // Two workers at once: every overdue row is expired exactly once.
      const counts = await Promise.all([
        ctx.services.transactions.expireOverdue(2),
        ctx.services.transactions.expireOverdue(2),
      ])
      let total = counts[0] + counts[1]
      while (total < overdue.length) {
        const n = await ctx.services.transactions.expireOverdue(2)
        if (n === 0) break
        total += n
      }
      assert.equal(total, overdue.length)
      for (const tx of overdue) {
        const now = (await call(ctx, 'GET', `/integration/transactions/${tx.uuid}`)).json()
        assert.equal(now.status, 'expired')
        assert.equal(now.aggregate_version, 2)
        const events = await eventsOf(tx.uuid)
        assert.deepEqual(
          events.map((e) => [e.event, e.aggregate_version]),
          [['transaction.expired', 2]],
        )
      }
      assert.equal(
        (await call(ctx, 'GET', `/integration/transactions/${fresh.uuid}`)).json().status,
        'pending',
      )
      assert.equal((await call(ctx, 'GET', `/integration/transactions/${paid.uuid}`)).json().status, 'paid')
      assert.equal(await ctx.services.transactions.expireOverdue(), 0)
    })

    it('a late paid callback after expiry is applied (money that arrived is never lost)', async () => {
      const tx = await create()
      await makeOverdue(ctx.db, tx.uuid)
      await ctx.services.transactions.expireOverdue()
      const res = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`)
      assert.equal(res.json().status, 'paid')
      assert.equal(res.json().aggregate_version, 3)
    })
  })
}

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { allPages, expectedCell, getCsv } from '../../helpers/csv.ts'
import { backends, call, paidTransaction, type TestMerchant } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

type EventJson = Record<string, unknown> & {
  transaction?: Record<string, unknown>
  payout?: Record<string, unknown>
}

/** The CSV row an event should be, computed from its JSON independently of the service's columns. */
function expectedRow(event: EventJson): string[] {
  const object = (event.transaction ?? event.payout) as Record<string, unknown>
  return [
    event.event_id,
    event.event,
    event.occurred_at,
    event.transaction ? 'transaction' : 'payout',
    object.uuid,
    object.status,
    event.aggregate_version,
    event.webhook_status,
    event.schema_version,
    object,
  ].map(expectedCell)
}

for (const backend of backends()) {
  describe(`events CSV export (${backend})`, () => {
    const ctx = suiteContext(backend)

    const pay = async (
      merchant: TestMerchant,
      overrides: Record<string, unknown>,
      outcome: 'paid' | 'failed' = 'paid',
    ) => (await paidTransaction(ctx, overrides, { merchant }, outcome)).uuid as string

    it('round-trips against the JSON list with its filters; hostile text escaped inside the object', async () => {
      const merchant = await ctx.newMerchant()
      const paid: string[] = []
      for (let i = 0; i < 6; i++)
        paid.push(
          await pay(merchant, {
            amount: 100_000 + i,
            description: i % 2 ? `=HYPERLINK("x${i}")` : `plain ${i}`,
          }),
        )
      await pay(merchant, { description: '@failed' }, 'failed')
      const refund = await call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: paid[0], amount_minor: 1000 },
        { as: { merchant }, auth: 'signature', idempotencyKey: `ev-csv-${Date.now()}` },
      )
      assert.equal(refund.statusCode, 201, refund.body)

      const json = await allPages<EventJson>(ctx, '/integration/events', { as: { merchant } })
      assert.ok(json.length >= 8, `${json.length} events`)
      const csv = await getCsv(ctx, '/integration/events', { as: { merchant } })
      assert.deepEqual(csv.header, [
        'event_id',
        'event',
        'occurred_at',
        'object_type',
        'object_uuid',
        'object_status',
        'aggregate_version',
        'webhook_status',
        'schema_version',
        'object',
      ])
      assert.deepEqual(csv.rows, json.map(expectedRow))
      // The object column is JSON text (starts with `{`), so a hostile description inside it cannot run.
      for (const row of csv.objects) assert.equal(row.object?.[0], '{')
      assert.ok(csv.objects.some((row) => JSON.parse(row.object ?? '{}').description === '=HYPERLINK("x1")'))

      for (const query of [
        'type=transaction.failed',
        `object_uuid=${paid[0]}`,
        'type=transaction.paid,transaction.partially_refunded',
      ]) {
        const filtered = await allPages<EventJson>(ctx, `/integration/events?${query}`, { as: { merchant } })
        assert.ok(filtered.length > 0 && filtered.length < json.length, query)
        const exported = await getCsv(ctx, `/integration/events?${query}`, { as: { merchant } })
        assert.deepEqual(exported.rows, filtered.map(expectedRow), query)
      }
    })

    it("never shows another merchant's or the other mode's events", async () => {
      const merchant = await ctx.newMerchant()
      const other = await ctx.newMerchant()
      const mine = await pay(merchant, {})
      await pay(other, {})
      const csv = await getCsv(ctx, '/integration/events', { as: { merchant } })
      assert.deepEqual([...new Set(csv.objects.map((row) => row.object_uuid))], [mine])
      const live = await getCsv(ctx, '/integration/events', { as: { merchant, mode: 'live' } })
      assert.equal(live.rows.length, 0)
    })
  })
}

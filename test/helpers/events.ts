import type { TestContext } from './context.ts'
import { rowsWhere } from './rows.ts'

/** One payment's, refund's or payout's events in the outbox, in the order of its versions, bodies parsed. */
export async function eventsOf(ctx: Pick<TestContext, 'db'>, aggregateUuid: string) {
  const rows = await rowsWhere(
    ctx.db,
    'events',
    { aggregate_uuid: aggregateUuid },
    { orderBy: ['aggregate_version'], select: ['event', 'aggregate_version', 'body'] },
  )
  return rows.map((row) => ({
    event: row.event,
    version: row.aggregate_version,
    body: JSON.parse(row.body),
  }))
}

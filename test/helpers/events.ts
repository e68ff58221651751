import type { TestContext } from './context.ts'

/** One payment's, refund's or payout's events in the outbox, in the order of its versions, bodies parsed. */
export async function eventsOf(ctx: Pick<TestContext, 'db'>, aggregateUuid: string) {
  const rows = await ctx.db
    .selectFrom('events')
    .select(['event', 'aggregate_version', 'body'])
    .where('aggregate_uuid', '=', aggregateUuid)
    .orderBy('aggregate_version')
    .execute()
  return rows.map((row) => ({
    event: row.event,
    version: row.aggregate_version,
    body: JSON.parse(row.body),
  }))
}

import type { Executor } from '../db/index.ts'
import type { CallbackLogColumns, Mode } from '../db/types.ts'
import { newId } from '../lib/ids.ts'
import type { WebhookService } from './webhooks/service.ts'

type EventInput = Parameters<WebhookService['recordEvent']>[1]

/** What a transaction and a payout row share: an owner, a version that events are ordered by, a callback URL. */
interface AggregateRow {
  uuid: string
  merchant_uuid: string
  mode: Mode
  aggregate_version: number
  callback_url: string | null
}

/** How one kind of aggregate writes a status change to its table and shows itself in the event. */
export interface StatusTable<Row extends AggregateRow, Status extends string, Fields> {
  aggregateType: EventInput['aggregateType']
  /** Writes the new status, the fields that go with it, the next version and the time; the row as it is now. */
  write(
    trx: Executor,
    uuid: string,
    change: { status: Status; fields: Fields; aggregate_version: number; updated_at: Date },
  ): Promise<Row>
  /** The resource as the API shows it, which is what the event carries. */
  toView(row: Row): unknown
}

export interface StatusChange<Row, Status extends string, Fields> {
  status: Status
  event: EventInput['event']
  at: Date
  /** The columns that change with this status (paid_at, failure_reason, …). */
  fields: Fields
  /** The money the change moves, posted after the row is written and its event recorded. */
  post?: (updated: Row) => Promise<unknown>
  /** The refund that caused the change, recorded with the event (GET /integration/events?object_uuid=…). */
  refundUuid?: string
}

/**
 * The one way a transaction's or a payout's status changes: under the row lock the caller holds, the row takes
 * its new status, its aggregate_version grows by one, the event goes to the outbox and the money moves, all in
 * the caller's database transaction, so they commit together or not at all.
 */
export async function changeStatus<Row extends AggregateRow, Status extends string, Fields>(
  deps: { webhooks: Pick<WebhookService, 'recordEvent'> },
  trx: Executor,
  table: StatusTable<Row, Status, Fields>,
  row: Row,
  change: StatusChange<Row, Status, Fields>,
): Promise<Row> {
  const updated = await table.write(trx, row.uuid, {
    status: change.status,
    fields: change.fields,
    aggregate_version: row.aggregate_version + 1,
    updated_at: change.at,
  })
  await deps.webhooks.recordEvent(trx, {
    merchantUuid: updated.merchant_uuid,
    mode: updated.mode,
    event: change.event,
    aggregateType: table.aggregateType,
    aggregateUuid: updated.uuid,
    aggregateVersion: updated.aggregate_version,
    resource: table.toView(updated),
    callbackUrl: updated.callback_url,
    occurredAt: change.at,
    refundUuid: change.refundUuid,
  })
  // The money last: a posting locks the merchant's accounts until the commit, so the statements before it do
  // not lengthen that lock, which every payment and refund of the merchant waits on.
  if (change.post) await change.post(updated)
  return updated
}

/** A provider's word about a transaction or payout, kept whether or not it changed anything. */
export interface ProviderWord extends Omit<CallbackLogColumns, 'received_at'> {
  received_at: Date
}

/** One status the state machine moves the aggregate to, with the event that announces it. */
export interface Step<Status extends string> {
  to: Status
  event: EventInput['event']
}

/** What the state machine made of a provider's word: the steps the aggregate passes through, in order. */
export type Applied<Status extends string> =
  | { kind: 'applied'; steps: readonly Step<Status>[] }
  | { kind: 'duplicate' }
  | { kind: 'stale' }

/**
 * Applies a provider's outcome to a row the caller holds locked: the word is recorded first (applied, a
 * duplicate or stale), then each step the state machine passes through is one `changeStatus`, with its own
 * version and event. `plan` gives what goes with a status: its fields and the money it moves.
 */
export async function applyProviderOutcome<
  Row extends AggregateRow & { status: string },
  Status extends string,
  Fields,
>(
  deps: { webhooks: Pick<WebhookService, 'recordEvent'> },
  trx: Executor,
  table: StatusTable<Row, Status, Fields>,
  row: Row,
  word: {
    outcome: string
    source: { connector: string; reference: string | null }
    result: Applied<Status>
    at: Date
    /** Keeps the word in the aggregate's callback table. */
    record: (word: ProviderWord) => Promise<unknown>
    plan: (current: Row, to: Status) => Promise<Pick<StatusChange<Row, Status, Fields>, 'fields' | 'post'>>
  },
): Promise<{ row: Row; applied: boolean }> {
  const { result, at } = word
  await word.record({
    uuid: newId(),
    connector: word.source.connector,
    outcome: word.outcome,
    provider_reference: word.source.reference,
    result: result.kind,
    from_status: row.status,
    to_status: result.kind === 'applied' ? (result.steps.at(-1) as Step<Status>).to : row.status,
    received_at: at,
  })
  if (result.kind !== 'applied') return { row, applied: false }
  let current = row
  for (const step of result.steps) {
    const planned = await word.plan(current, step.to)
    current = await changeStatus(deps, trx, table, current, {
      ...planned,
      status: step.to,
      event: step.event,
      at,
    })
  }
  return { row: current, applied: true }
}

import type { Executor } from '../../db/index.ts'
import type { Mode } from '../../db/types.ts'
import { newId } from '../../lib/ids.ts'
import * as eventRepo from './repository/events.ts'
import type { EventName } from './schemas.ts'

export interface RecordEventInput {
  merchantUuid: string
  mode: Mode
  event: EventName
  aggregateType: 'transaction' | 'payout'
  aggregateUuid: string
  aggregateVersion: number
  /** The resource as the API shows it. */
  resource: unknown
  /** The resource's own callback_url: it takes precedence over the configured URL. */
  callbackUrl: string | null
  occurredAt: Date
  /** The refund whose success this transaction event announces (kept beside the event, not in its body). */
  refundUuid?: string
}

/**
 * Writes the event to the outbox in the caller's transaction, with a delivery to its target if it has one:
 * the resource's callback_url, else the configured URL when enabled and subscribed. Announces it on commit.
 */
export async function recordEvent(trx: Executor, input: RecordEventInput): Promise<string> {
  const eventId = newId()
  const resourceKey = input.aggregateType
  const body = JSON.stringify({
    event: input.event,
    event_id: eventId,
    schema_version: '1',
    occurred_at: input.occurredAt.toISOString(),
    aggregate_version: input.aggregateVersion,
    [resourceKey]: input.resource,
  })
  const event = {
    uuid: eventId,
    merchant_uuid: input.merchantUuid,
    mode: input.mode,
    event: input.event,
    aggregate_type: input.aggregateType,
    aggregate_uuid: input.aggregateUuid,
    aggregate_version: input.aggregateVersion,
    body,
    occurred_at: input.occurredAt,
    refund_uuid: input.refundUuid ?? null,
  }
  const delivery = {
    uuid: newId(),
    eventId,
    merchantUuid: input.merchantUuid,
    mode: input.mode,
    event: input.event,
    at: input.occurredAt,
  }
  // The event, its delivery (if it has a target) and the dispatchers' wake-up together.
  const to = input.callbackUrl ? { url: input.callbackUrl, target: new URL(input.callbackUrl).host } : null
  await eventRepo.insertEventWithDelivery(trx, event, delivery, to)
  return eventId
}

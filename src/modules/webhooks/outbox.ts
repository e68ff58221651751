import type { Executor } from '../../db/index.ts'
import type { Mode } from '../../db/types.ts'
import { newId } from '../../lib/ids.ts'
import * as repo from './repository.ts'
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
  let url = input.callbackUrl
  if (!url) {
    const cfg = await repo.findConfig(trx, { merchantUuid: input.merchantUuid, mode: input.mode })
    if (cfg?.url && cfg.enabled && (cfg.events as string[]).includes(input.event)) url = cfg.url
  }
  if (!url) {
    await repo.insertEvent(trx, event)
    return eventId
  }
  // The event, its delivery and the dispatchers' wake-up together.
  await repo.insertEventWithDelivery(trx, event, {
    uuid: newId(),
    event_id: eventId,
    merchant_uuid: input.merchantUuid,
    mode: input.mode,
    event: input.event,
    url,
    target: new URL(url).host,
    body,
    status: 'pending',
    attempts: 0,
    next_attempt_at: input.occurredAt,
    is_test: false,
    created_at: input.occurredAt,
    updated_at: input.occurredAt,
  })
  return eventId
}

import { type Scope, scopeOf } from '../../db/scope.ts'
import type { WebhookDelivery } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError, notFound } from '../../http/errors.ts'
import { filterDigest, listAnswer } from '../../http/pagination.ts'
import { isUuid } from '../../lib/ids.ts'
import { iso } from '../../lib/time.ts'
import type { WebhookDeps } from './deps.ts'
import * as attemptRepo from './repository/attempts.ts'
import * as deliveryRepo from './repository/deliveries.ts'
import type { WebhookDeliveryView } from './schemas.ts'

export interface ListDeliveriesInput {
  cursor?: string
  per_page?: number
  status?: string
  event?: string
  event_id?: string
}

export function deliveryView(d: WebhookDelivery): WebhookDeliveryView {
  return {
    uuid: d.uuid,
    event_id: d.event_id,
    event: d.event,
    url: d.url,
    status: d.status,
    attempts: d.attempts,
    last_attempt_at: iso(d.last_attempt_at),
    next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
    response_status: d.response_status,
    response_body: d.response_body,
    duration_ms: d.duration_ms,
    error: d.error,
    is_test: d.is_test,
    created_at: d.created_at.toISOString(),
  }
}

export function listDeliveries(
  deps: Pick<WebhookDeps, 'db' | 'config'>,
  auth: AuthContext,
  query: ListDeliveriesInput,
) {
  const filters = { status: query.status, event: query.event, eventId: query.event_id }
  return listAnswer(
    query,
    { digest: filterDigest(filters), path: `${deps.config.publicBaseUrl}/integration/webhook/deliveries` },
    (cursor, limit) => deliveryRepo.listDeliveries(deps.db, scopeOf(auth), filters, cursor, limit),
    deliveryView,
  )
}

/** The merchant's delivery `uuid`, or 404 (a malformed uuid included). */
async function findOwnDelivery(deps: Pick<WebhookDeps, 'db'>, scope: Scope, uuid: string) {
  const row = isUuid(uuid) ? await deliveryRepo.findDelivery(deps.db, scope, uuid) : undefined
  if (!row) throw notFound('webhook delivery')
  return row
}

export async function getDelivery(deps: Pick<WebhookDeps, 'db'>, auth: AuthContext, uuid: string) {
  return deliveryView(await findOwnDelivery(deps, scopeOf(auth), uuid))
}

/** Queues a fresh attempt of a delivery, whatever its state; the dispatcher sends it at once. */
export async function redeliver(deps: Pick<WebhookDeps, 'db'>, auth: AuthContext, uuid: string) {
  const row = await findOwnDelivery(deps, scopeOf(auth), uuid)
  if (row.is_test)
    throw new AppError('invalid_state', 'Test deliveries are not redelivered: send a new test instead.')
  const now = new Date()
  const updated = await deps.db.transaction().execute(async (trx) => {
    const requeued = await deliveryRepo.requeueDelivery(trx, uuid, now)
    await deliveryRepo.notifyDispatchers(trx)
    return requeued
  })
  return deliveryView(updated)
}

/**
 * What a delivery sent and what its endpoint answered, attempt by attempt (the dashboard's delivery log). The
 * request is the same bytes every attempt; its headers differ only in `webhook-timestamp` (the attempt's start)
 * and the signature, which is not kept (it was made with the secret of the time).
 */
export async function deliveryAttempts(deps: Pick<WebhookDeps, 'db'>, auth: AuthContext, uuid: string) {
  const row = await findOwnDelivery(deps, scopeOf(auth), uuid)
  const attempts = await attemptRepo.listAttempts(deps.db, row.uuid)
  return {
    delivery: deliveryView(row),
    request: {
      method: 'POST',
      url: row.url,
      headers: {
        'content-type': 'application/json',
        'webhook-id': row.event_id,
        'webhook-timestamp': '<the attempt start, unix seconds>',
        'webhook-signature': 'v1,<HMAC-SHA256 of id.timestamp.body with the secret of the time>',
      },
      body: await deliveryRepo.deliveryBody(deps.db, row),
    },
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      started_at: a.started_at.toISOString(),
      webhook_timestamp: String(Math.floor(a.started_at.getTime() / 1000)),
      duration_ms: a.duration_ms,
      response_status: a.response_status,
      response_body: a.response_body,
      error: a.error,
    })),
  }
}

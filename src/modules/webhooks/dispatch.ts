import type { WebhookDelivery } from '../../db/types.ts'
import { newId } from '../../lib/ids.ts'
import { deliveryOutcomes } from '../../lib/metrics.ts'
import { type AttemptResult, nextAttemptDelayMs } from './delivery.ts'
import type { DispatchOptions, WebhookDeps } from './deps.ts'
import type { AttemptRecord } from './repository/attempts.ts'
import * as attemptRepo from './repository/attempts.ts'
import * as configRepo from './repository/configs.ts'
import type { ClaimedDelivery } from './repository/deliveries.ts'
import { ensureConfig, signingSecrets } from './secrets.ts'

/** A finished attempt, waiting to be recorded: what to write, and whether to switch the configuration off. */
export interface AttemptOutcome {
  delivery: WebhookDelivery
  record: AttemptRecord
  disable: boolean
}

/** What the dispatcher does with the outcome of one attempt: the next state of the delivery. */
export function afterAttempt(
  options: DispatchOptions,
  delivery: WebhookDelivery,
  attempt: number,
  result: AttemptResult,
  final: boolean,
): AttemptRecord['next'] {
  if (result.ok) return { status: 'succeeded' as const, nextAttemptAt: null }
  if (final || delivery.is_test || result.status === 410)
    return { status: 'failed' as const, nextAttemptAt: null }
  const delay = nextAttemptDelayMs(attempt, result.retryAfterSeconds, options.schedule, options.random)
  if (delay === null) return { status: 'failed' as const, nextAttemptAt: null }
  return { status: 'pending' as const, nextAttemptAt: new Date(Date.now() + delay) }
}

/** The secrets that sign a claimed delivery, from the configuration read with the claim. */
export async function secretsForClaim(
  deps: Pick<WebhookDeps, 'db' | 'config' | 'open'>,
  delivery: ClaimedDelivery,
): Promise<{ secrets: string[]; configUrl: string | null }> {
  if (delivery.secret_sealed === null) {
    // A delivery to a callback_url of a merchant whose configuration was never read: make it now.
    const cfg = await ensureConfig(deps, deps.db, {
      merchantUuid: delivery.merchant_uuid,
      mode: delivery.mode,
    })
    return { secrets: signingSecrets(deps, cfg), configUrl: cfg.url }
  }
  const secrets = signingSecrets(deps, {
    secret_sealed: delivery.secret_sealed,
    previous_secret_sealed: delivery.previous_secret_sealed,
    previous_secret_expires_at: delivery.previous_secret_expires_at,
  })
  return { secrets, configUrl: delivery.config_url }
}

/** One HTTP attempt of a claimed delivery; returns what to record, without recording it. */
export async function sendAttempt(
  deps: Pick<WebhookDeps, 'db' | 'config' | 'open' | 'sender' | 'dispatch'>,
  delivery: ClaimedDelivery,
  worker: string,
): Promise<{ record: AttemptRecord; disable: boolean }> {
  const { secrets, configUrl } = await secretsForClaim(deps, delivery)
  // Switched off (by the merchant, or by a 410) after this delivery was queued: it is not sent.
  const switchedOff =
    !delivery.is_test && delivery.config_url === delivery.url && delivery.config_enabled === false
  const body = delivery.body
  const result =
    switchedOff || body === null
      ? {
          ok: false,
          status: null,
          body: null,
          error: switchedOff
            ? 'not sent: the webhook configuration is disabled'
            : 'not sent: the event of this delivery no longer exists',
          durationMs: 0,
          retryAfterSeconds: null,
          startedAt: new Date(),
        }
      : await deps.sender.send({ url: delivery.url, eventId: delivery.event_id, body, secrets })
  const attempt = delivery.attempts + 1
  return {
    record: {
      uuid: newId(),
      deliveryUuid: delivery.uuid,
      attempt,
      worker,
      startedAt: result.startedAt,
      durationMs: result.durationMs,
      status: result.status,
      body: result.body,
      error: result.error,
      // A delivery not sent (its configuration switched off, its event gone) is not retried either.
      next: afterAttempt(deps.dispatch, delivery, attempt, result, switchedOff || body === null),
    },
    // 410 Gone: the configured endpoint says it is gone for good (a test delivery included); stop sending to it.
    disable: result.status === 410 && configUrl === delivery.url,
  }
}

/**
 * Records finished attempts (the dispatcher batches them): one statement, or, when an endpoint answered 410, one
 * database transaction that also switches its configuration off.
 */
export async function recordOutcomes(deps: Pick<WebhookDeps, 'db'>, outcomes: AttemptOutcome[]) {
  const records = outcomes.map((o) => o.record)
  const gone = outcomes.filter((o) => o.disable)
  if (gone.length === 0) await attemptRepo.recordAttempts(deps.db, records)
  else
    await deps.db.transaction().execute(async (trx) => {
      await attemptRepo.recordAttempts(trx, records)
      for (const o of gone) {
        await configRepo.updateConfig(
          trx,
          { merchantUuid: o.delivery.merchant_uuid, mode: o.delivery.mode },
          {
            enabled: false,
            disabled_reason: `The endpoint answered 410 Gone at ${o.record.startedAt.toISOString()}; deliveries were switched off. Update the webhook to switch them on again.`,
            updated_at: new Date(),
          },
        )
      }
    })
  for (const o of outcomes)
    deliveryOutcomes.inc({ outcome: o.record.next.status === 'pending' ? 'retry' : o.record.next.status })
}

/** Sends and records one attempt at once (test deliveries). */
export async function attemptNow(
  deps: Pick<WebhookDeps, 'db' | 'config' | 'open' | 'sender' | 'dispatch'>,
  delivery: ClaimedDelivery,
  worker: string,
): Promise<WebhookDelivery> {
  const outcome = await sendAttempt(deps, delivery, worker)
  await recordOutcomes(deps, [{ delivery, ...outcome }])
  const r = outcome.record
  return {
    ...delivery,
    attempts: r.attempt,
    status: r.next.status,
    next_attempt_at: r.next.nextAttemptAt,
    last_attempt_at: r.startedAt,
    response_status: r.status,
    response_body: r.body,
    duration_ms: r.durationMs,
    error: r.error,
  }
}

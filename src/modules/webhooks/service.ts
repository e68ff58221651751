import { randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { Config } from '../../config.ts'
import type { Db, Executor } from '../../db/index.ts'
import { type Scope, scopeOf } from '../../db/scope.ts'
import type { Mode, WebhookConfig, WebhookDelivery } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError, notFound, validationError } from '../../http/errors.ts'
import { type Cursor, cursorPage, decodeCursor, filterDigest } from '../../http/pagination.ts'
import { decryptSecret, encryptSecret } from '../../lib/crypto.ts'
import { isUuid, newId } from '../../lib/ids.ts'
import { deliveryOutcomes } from '../../lib/metrics.ts'
import { iso } from '../../lib/time.ts'
import { type AttemptResult, nextAttemptDelayMs, type Sender } from './delivery.ts'
import * as repo from './repository.ts'
import {
  EVENT_NAMES,
  type EventName,
  type UpdateWebhookConfigInput,
  type WebhookConfigView,
  type WebhookDeliveryView,
} from './schemas.ts'
import { assertSafeUrl, UnsafeTargetError } from './ssrf.ts'

export type { AttemptRecord, ClaimedDelivery } from './repository.ts'
export { WAKE_CHANNEL } from './repository.ts'

export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`

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
}

export interface DispatchOptions {
  schedule: readonly number[]
  random: () => number
}

export type WebhookService = ReturnType<typeof createWebhookService>

export function createWebhookService(deps: {
  db: Db
  config: Config
  sender: Sender
  dispatch?: Partial<DispatchOptions>
}) {
  const { db, config, sender } = deps
  const dispatch: DispatchOptions = {
    schedule: config.webhook.retrySchedule,
    random: Math.random,
    ...deps.dispatch,
  }
  const policy = {
    requireHttps: config.appEnv === 'production',
    allowPrivateNetworks: config.webhookAllowPrivateNetworks,
  }
  // Signing secrets opened once per sealed value: every delivery needs them, and a sealed value never changes.
  const opened = new LRUCache<string, string>({ max: 10_000 })
  const open = (sealed: string): string => {
    let plain = opened.get(sealed)
    if (plain === undefined) {
      plain = decryptSecret(config.masterKey, sealed)
      opened.set(sealed, plain)
    }
    return plain
  }

  const ensure = (db: Executor, scope: Scope) =>
    repo.ensureConfig(
      db,
      scope,
      encryptSecret(config.masterKey, newWebhookSecret()),
      [...EVENT_NAMES],
      new Date(),
    )

  /** The secrets that sign a delivery now: the current one, and the previous one inside its overlap. */
  function secretsOf(cfg: WebhookConfig, now = new Date()): string[] {
    const secrets = [open(cfg.secret_sealed)]
    if (
      cfg.previous_secret_sealed &&
      cfg.previous_secret_expires_at &&
      cfg.previous_secret_expires_at > now
    ) {
      secrets.push(open(cfg.previous_secret_sealed))
    }
    return secrets
  }

  function configView(cfg: WebhookConfig): WebhookConfigView {
    const now = new Date()
    const overlapping = cfg.previous_secret_expires_at && cfg.previous_secret_expires_at > now
    return {
      url: cfg.url,
      enabled: cfg.enabled,
      events: cfg.events as WebhookConfigView['events'],
      secret: open(cfg.secret_sealed),
      previous_secret_expires_at: overlapping ? iso(cfg.previous_secret_expires_at) : null,
      disabled_reason: cfg.disabled_reason,
      updated_at: (cfg.updated_at as Date).toISOString(),
    }
  }

  function deliveryView(d: WebhookDelivery): WebhookDeliveryView {
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

  async function checkUrl(field: string, url: string) {
    try {
      await assertSafeUrl(url, policy)
    } catch (error) {
      if (error instanceof UnsafeTargetError) throw validationError(field, error.message)
      throw error
    }
  }

  /** What the dispatcher does with the outcome of one attempt: the next state of the delivery. */
  function afterAttempt(delivery: WebhookDelivery, attempt: number, result: AttemptResult, final: boolean) {
    if (result.ok) return { status: 'succeeded' as const, nextAttemptAt: null }
    if (final || delivery.is_test || result.status === 410)
      return { status: 'failed' as const, nextAttemptAt: null }
    const delay = nextAttemptDelayMs(attempt, result.retryAfterSeconds, dispatch.schedule, dispatch.random)
    if (delay === null) return { status: 'failed' as const, nextAttemptAt: null }
    return { status: 'pending' as const, nextAttemptAt: new Date(Date.now() + delay) }
  }

  /** The secrets that sign a claimed delivery, from the configuration read with the claim. */
  async function secretsForClaim(
    delivery: repo.ClaimedDelivery,
  ): Promise<{ secrets: string[]; configUrl: string | null }> {
    if (delivery.secret_sealed === null) {
      // A delivery to a callback_url of a merchant whose configuration was never read: make it now.
      const cfg = await ensure(db, { merchantUuid: delivery.merchant_uuid, mode: delivery.mode })
      return { secrets: secretsOf(cfg), configUrl: cfg.url }
    }
    const now = new Date()
    const secrets = [open(delivery.secret_sealed)]
    if (
      delivery.previous_secret_sealed &&
      delivery.previous_secret_expires_at &&
      delivery.previous_secret_expires_at > now
    ) {
      secrets.push(open(delivery.previous_secret_sealed))
    }
    return { secrets, configUrl: delivery.config_url }
  }

  /** One HTTP attempt of a claimed delivery; returns what to record, without recording it. */
  async function send(
    delivery: repo.ClaimedDelivery,
    worker: string,
  ): Promise<{ record: repo.AttemptRecord; disable: boolean }> {
    const { secrets, configUrl } = await secretsForClaim(delivery)
    // Switched off (by the merchant, or by a 410) after this delivery was queued: it is not sent.
    const switchedOff =
      !delivery.is_test && delivery.config_url === delivery.url && delivery.config_enabled === false
    const result = switchedOff
      ? {
          ok: false,
          status: null,
          body: null,
          error: 'not sent: the webhook configuration is disabled',
          durationMs: 0,
          retryAfterSeconds: null,
          startedAt: new Date(),
        }
      : await sender.send({
          url: delivery.url,
          eventId: delivery.event_id,
          body: delivery.body,
          secrets,
        })
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
        // A delivery not sent because its configuration is switched off is not retried either.
        next: afterAttempt(delivery, attempt, result, switchedOff),
      },
      // 410 Gone: the configured endpoint says it is gone for good (a test delivery included); stop sending to it.
      disable: result.status === 410 && configUrl === delivery.url,
    }
  }

  /** Records finished attempts in one database transaction (the dispatcher batches them). */
  async function record(
    outcomes: { delivery: WebhookDelivery; record: repo.AttemptRecord; disable: boolean }[],
  ) {
    await db.transaction().execute(async (trx) => {
      await repo.recordAttempts(
        trx,
        outcomes.map((o) => o.record),
      )
      for (const o of outcomes)
        deliveryOutcomes.inc({ outcome: o.record.next.status === 'pending' ? 'retry' : o.record.next.status })
      for (const o of outcomes.filter((x) => x.disable)) {
        await repo.updateConfig(
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
  }

  /** Sends and records one attempt at once (test deliveries). */
  async function attempt(delivery: repo.ClaimedDelivery, worker: string): Promise<WebhookDelivery> {
    const outcome = await send(delivery, worker)
    await record([{ delivery, ...outcome }])
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

  return {
    configView,
    deliveryView,
    send,
    record,
    leaseMs: config.webhook.leaseMs,

    async getConfig(auth: AuthContext) {
      return configView(await ensure(db, scopeOf(auth)))
    },

    async updateConfig(auth: AuthContext, input: UpdateWebhookConfigInput) {
      if (input.url) await checkUrl('url', input.url)
      const scope = scopeOf(auth)
      await ensure(db, scope)
      const enabled = input.enabled ?? true
      const updated = await repo.updateConfig(db, scope, {
        url: input.url,
        enabled,
        events: JSON.stringify(input.events ?? [...EVENT_NAMES]),
        disabled_reason: null,
        updated_at: new Date(),
      })
      return configView(updated)
    },

    async rotateSecret(auth: AuthContext, overlapSeconds = 86400) {
      const scope = scopeOf(auth)
      await ensure(db, scope)
      const now = new Date()
      const updated = await repo.rotateSecret(
        db,
        scope,
        encryptSecret(config.masterKey, newWebhookSecret()),
        overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null,
        now,
      )
      return configView(updated)
    },

    /** Checks a resource's own callback_url the way the configured URL is checked. */
    checkCallbackUrl: (url: string) => checkUrl('callback_url', url),

    /**
     * Writes the event to the outbox in the caller's transaction, with a delivery to its target if it has one:
     * the resource's callback_url, else the configured URL when enabled and subscribed. Announces it on commit.
     */
    async recordEvent(trx: Executor, input: RecordEventInput): Promise<string> {
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
      await repo.insertEvent(trx, {
        uuid: eventId,
        merchant_uuid: input.merchantUuid,
        mode: input.mode,
        event: input.event,
        aggregate_type: input.aggregateType,
        aggregate_uuid: input.aggregateUuid,
        aggregate_version: input.aggregateVersion,
        body,
        occurred_at: input.occurredAt,
      })
      let url = input.callbackUrl
      if (!url) {
        const cfg = await repo.findConfig(trx, { merchantUuid: input.merchantUuid, mode: input.mode })
        if (cfg?.url && cfg.enabled && (cfg.events as string[]).includes(input.event)) url = cfg.url
      }
      if (url) {
        await repo.insertDelivery(trx, {
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
        await repo.notifyDispatchers(trx)
      }
      return eventId
    },

    async listDeliveries(
      auth: AuthContext,
      query: { cursor?: string; per_page?: number; status?: string; event?: string },
    ) {
      const perPage = query.per_page ?? 25
      const digest = filterDigest({ status: query.status, event: query.event })
      const cursor: Cursor | null = query.cursor ? decodeCursor(query.cursor, digest) : null
      const rows = await repo.listDeliveries(
        db,
        scopeOf(auth),
        { status: query.status, event: query.event },
        cursor,
        perPage + 1,
      )
      return cursorPage(
        rows,
        { perPage, cursor, digest, path: `${config.publicBaseUrl}/integration/webhook/deliveries` },
        deliveryView,
      )
    },

    async getDelivery(auth: AuthContext, uuid: string) {
      const row = isUuid(uuid) ? await repo.findDelivery(db, scopeOf(auth), uuid) : undefined
      if (!row) throw notFound('webhook delivery')
      return deliveryView(row)
    },

    /** Queues a fresh attempt of a delivery, whatever its state; the dispatcher sends it at once. */
    async redeliver(auth: AuthContext, uuid: string) {
      const scope = scopeOf(auth)
      const row = isUuid(uuid) ? await repo.findDelivery(db, scope, uuid) : undefined
      if (!row) throw notFound('webhook delivery')
      if (row.is_test)
        throw new AppError('invalid_state', 'Test deliveries are not redelivered: send a new test instead.')
      const now = new Date()
      const updated = await db.transaction().execute(async (trx) => {
        const requeued = await repo.requeueDelivery(trx, uuid, now)
        await repo.notifyDispatchers(trx)
        return requeued
      })
      return deliveryView(updated)
    },

    /** Sends a webhook.test event to the configured URL now and returns the delivery after its one attempt. */
    async sendTest(auth: AuthContext) {
      const scope = scopeOf(auth)
      const cfg = await ensure(db, scope)
      if (!cfg.url)
        throw new AppError('validation_failed', 'Set a webhook URL first.', null, {
          url: ['no webhook URL is configured'],
        })
      const now = new Date()
      const eventId = newId()
      const body = JSON.stringify({
        event: 'webhook.test',
        event_id: eventId,
        schema_version: '1',
        occurred_at: now.toISOString(),
        aggregate_version: 1,
        data: {
          message: 'This is a test delivery from merchant-gateway.',
          merchant_uuid: scope.merchantUuid,
          mode: scope.mode,
        },
      })
      const worker = `api-test-${newId()}`
      const delivery = await repo.insertDelivery(db, {
        uuid: newId(),
        event_id: eventId,
        merchant_uuid: scope.merchantUuid,
        mode: scope.mode,
        event: 'webhook.test',
        url: cfg.url,
        target: new URL(cfg.url).host,
        body,
        status: 'pending',
        attempts: 0,
        // Not due for the dispatcher: this request makes the one attempt itself.
        next_attempt_at: null,
        locked_by: worker,
        locked_until: new Date(now.getTime() + 60_000),
        is_test: true,
        created_at: now,
        updated_at: now,
      })
      const claimed = {
        ...delivery,
        secret_sealed: cfg.secret_sealed,
        previous_secret_sealed: cfg.previous_secret_sealed,
        previous_secret_expires_at: cfg.previous_secret_expires_at,
        config_url: cfg.url,
        config_enabled: cfg.enabled,
      }
      return deliveryView(await attempt(claimed, worker))
    },

    /** Deliveries waiting to be sent, and the age of the oldest (the outbox metrics). */
    outboxStats: () => repo.outboxStats(db),
    claimDue: repo.claimDue,
    releaseClaims: (worker: string, uuids?: string[]) => repo.releaseClaims(db, worker, uuids),
  }
}

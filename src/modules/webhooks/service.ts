import type { Config } from '../../config.ts'
import type { Db } from '../../db/index.ts'
import type { AuthContext } from '../../http/auth.ts'
import { checkCallbackUrl, getConfig, rotateSecret, sendTest, updateConfig } from './configuration.ts'
import type { Sender } from './delivery.ts'
import type { DispatchOptions, WebhookDeps } from './deps.ts'
import { type AttemptOutcome, recordOutcomes, sendAttempt } from './dispatch.ts'
import { exportEvents, findEventBrief, getEvent, listEvents } from './events.ts'
import {
  deliveryAttempts,
  deliveryView,
  getDelivery,
  type ListDeliveriesInput,
  listDeliveries,
  redeliver,
} from './log.ts'
import { recordEvent } from './outbox.ts'
import * as deliveryRepo from './repository/deliveries.ts'
import { purgeExpiredEvents } from './retention.ts'
import type { ListEventsInput, UpdateWebhookConfigInput } from './schemas.ts'
import { createSecretOpener } from './secrets.ts'
import { createEventStreams } from './stream.ts'

export type { DispatchOptions } from './deps.ts'
export type { RecordEventInput } from './outbox.ts'
export type { AttemptRecord } from './repository/attempts.ts'
export type { ClaimedDelivery } from './repository/deliveries.ts'
export { WAKE_CHANNEL } from './repository/deliveries.ts'
export { newWebhookSecret } from './secrets.ts'

export type WebhookService = ReturnType<typeof createWebhookService>

/**
 * The webhooks module as the other modules, the routes and the workers see it: each operation bound to this
 * instance's database, configuration, HTTP client and retry schedule. The operations live in outbox.ts (events
 * written in the caller's transaction), dispatch.ts (sending and recording attempts), configuration.ts (URL,
 * events, secrets, test sends), log.ts (the delivery log), events.ts (the events API) and retention.ts (old
 * events removed); their SQL in repository/, one file per table (configs.ts, events.ts, deliveries.ts,
 * attempts.ts).
 */
export function createWebhookService(deps: {
  db: Db
  config: Config
  sender: Sender
  dispatch?: Partial<DispatchOptions>
}) {
  const { db, config } = deps
  const bound: WebhookDeps = {
    db,
    config,
    sender: deps.sender,
    dispatch: { schedule: config.webhook.retrySchedule, random: Math.random, ...deps.dispatch },
    open: createSecretOpener(config.masterKey),
  }
  const streams = createEventStreams(bound)

  return {
    recordEvent,
    checkCallbackUrl: (url: string) => checkCallbackUrl(bound, url),

    getConfig: (auth: AuthContext) => getConfig(bound, auth),
    updateConfig: (auth: AuthContext, input: UpdateWebhookConfigInput) => updateConfig(bound, auth, input),
    rotateSecret: (auth: AuthContext, overlapSeconds?: number) => rotateSecret(bound, auth, overlapSeconds),
    sendTest: (auth: AuthContext) => sendTest(bound, auth),

    listDeliveries: (auth: AuthContext, query: ListDeliveriesInput) => listDeliveries(bound, auth, query),
    /** A delivery's request and each attempt's answer (the dashboard's delivery log). */
    attempts: (auth: AuthContext, uuid: string) => deliveryAttempts(bound, auth, uuid),
    getDelivery: (auth: AuthContext, uuid: string) => getDelivery(bound, auth, uuid),
    redeliver: (auth: AuthContext, uuid: string) => redeliver(bound, auth, uuid),
    deliveryView,

    listEvents: (auth: AuthContext, query: ListEventsInput) => listEvents(bound, auth, query),
    getEvent: (auth: AuthContext, eventId: string) => getEvent(bound, auth, eventId),
    /** An event in brief by its uuid, or null (a dashboard search). */
    findEventBrief: (auth: AuthContext, uuid: string) => findEventBrief(bound, auth, uuid),
    exportEvents: (auth: AuthContext, query: ListEventsInput) => exportEvents(bound, auth, query),
    /** The test mode's events as server-sent events (stream.ts). */
    streamEvents: streams.start,
    /** Ends the open event streams; their clients reconnect. */
    endStreams: streams.endAll,
    /** The server is shutting down: ends the open event streams and opens no more. */
    closeStreams: streams.close,
    /** Deletes the events past their retention, with their deliveries; how many events went. */
    purgeEvents: (now?: Date) => purgeExpiredEvents(bound, now),

    leaseMs: config.webhook.leaseMs,
    claimDue: deliveryRepo.claimDue,
    send: (delivery: deliveryRepo.ClaimedDelivery, worker: string) => sendAttempt(bound, delivery, worker),
    record: (outcomes: AttemptOutcome[]) => recordOutcomes(bound, outcomes),
    releaseClaims: (worker: string, uuids?: string[]) => deliveryRepo.releaseClaims(db, worker, uuids),
    /** Deliveries waiting to be sent, and the age of the oldest (the outbox metrics). */
    outboxStats: () => deliveryRepo.outboxStats(db),
  }
}

import assert from 'node:assert/strict'
import { Webhook } from 'standardwebhooks'
import type { Mode } from '../../../src/db/types.ts'
import { EVENT_NAMES } from '../../../src/modules/webhooks/schemas.ts'
import {
  call,
  newTransaction,
  type Received,
  type TestContext,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { rowsWhere } from '../../helpers/rows.ts'

/** The events a configuration subscribes to by default (docs/API.md, Webhooks), sorted. */
export const ALL_EVENTS = [...EVENT_NAMES].sort()

/** Retries within a fraction of a second, with the jitter pinned (serviceOptions for createTestContext). */
export const FAST_DISPATCH = { dispatch: { schedule: [0.05, 0.05, 0.05], random: () => 0.5 } }

export const WHSEC = /^whsec_[A-Za-z0-9+/]{43}=$/

export type Receiver = Awaited<ReturnType<typeof import('../../helpers/harness.ts').startReceiver>>

export interface As {
  merchant?: TestMerchant
  mode?: Mode
}

export async function getConfig(ctx: TestContext, as: As = {}) {
  const res = await call(ctx, 'GET', '/integration/webhook', undefined, { as })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

export async function putConfig(ctx: TestContext, body: Record<string, unknown>, as: As = {}) {
  const res = await call(ctx, 'PUT', '/integration/webhook', body, { as })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

export async function rotate(ctx: TestContext, body?: Record<string, unknown>, as: As = {}) {
  const res = await call(ctx, 'POST', '/integration/webhook/secret/rotate', body, { as })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

export async function createTx(ctx: TestContext, overrides: Record<string, unknown> = {}, as: As = {}) {
  const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(overrides), { as })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

export async function simulate(
  ctx: TestContext,
  uuid: string,
  simulation: 'paid' | 'failed' | 'expired' | 'failed-then-paid',
  as: As = {},
) {
  const res = await call(ctx, 'POST', `/integration/sandbox/transactions/${uuid}/${simulation}`, undefined, {
    as,
  })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

/** The outbox rows (`events`) of one transaction, oldest first. */
export const eventRows = (ctx: TestContext, aggregateUuid: string) =>
  rowsWhere(ctx.db, 'events', { aggregate_uuid: aggregateUuid }, { orderBy: ['aggregate_version'] })

/** The delivery rows of one transaction's events. */
export const deliveryRows = (ctx: TestContext, aggregateUuid: string) =>
  ctx.db
    .selectFrom('webhook_deliveries')
    .innerJoin('events', 'events.uuid', 'webhook_deliveries.event_id')
    .selectAll('webhook_deliveries')
    .where('events.aggregate_uuid', '=', aggregateUuid)
    .orderBy('webhook_deliveries.created_at')
    .execute()

/** The attempts of one delivery, first to last (the API shows a delivery's count and its last attempt only). */
export const attemptRows = (ctx: TestContext, deliveryUuid: string) =>
  rowsWhere(ctx.db, 'webhook_attempts', { delivery_uuid: deliveryUuid }, { orderBy: ['attempt'] })

/** What `receiver` got for `eventId` (the webhook-id header). */
export const receivedFor = (receiver: Receiver, eventId: string) =>
  receiver.received.filter((r) => r.headers['webhook-id'] === eventId)

/** What `receiver` got about one transaction. */
export const receivedAbout = (receiver: Receiver, txUuid: string) =>
  receiver.received.filter((r) => JSON.parse(r.body).transaction?.uuid === txUuid)

const headersOf = (received: Received) => received.headers as Record<string, string>

/** Verifies one received delivery with `secret` the way a merchant would (throws when it does not verify). */
export const verify = (secret: string, received: Received) =>
  new Webhook(secret).verify(received.body, headersOf(received))

export const verifies = (secret: string, received: Received): boolean => {
  try {
    verify(secret, received)
    return true
  } catch {
    return false
  }
}

/** The entries of the webhook-signature header. */
export const signaturesOf = (received: Received): string[] =>
  String(received.headers['webhook-signature']).split(' ')

/** A secret of the right shape that nobody configured. */
export const strangerSecret = () =>
  `whsec_${Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(32))).toString('base64')}`

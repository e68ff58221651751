import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { before } from 'node:test'
import { signCallback } from '../../../src/connectors/http-acquirer/signature.ts'
import type { Mode } from '../../../src/db/types.ts'
import type { SuiteAcquirer } from '../../helpers/acquirer.ts'
import {
  call,
  eventually,
  newTransaction,
  type TestContext,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { rowsWhere } from '../../helpers/rows.ts'

/**
 * What the hand-over suites share: live payments made through the API, what the gateway recorded of their
 * hand-over, and the emulator's admin API.
 */

/** The suite's app listening on a free local port; the returned function answers its root once it does. */
export function listeningGateway(ctx: TestContext): () => string {
  let root = ''
  before(async () => {
    await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    root = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
  })
  return () => root
}

/** A payment made by `merchant` in `mode`, answered 201: its JSON. */
export async function paymentMade(
  ctx: TestContext,
  overrides: Record<string, unknown>,
  as: { merchant: TestMerchant; mode: Mode },
) {
  const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(overrides), { as })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

/** A live payment made by `merchant` (default the context's), answered 201: its JSON. */
export const livePayment = (
  ctx: TestContext,
  overrides: Record<string, unknown> = {},
  merchant: TestMerchant = ctx.merchant,
) => paymentMade(ctx, overrides, { merchant, mode: 'live' })

/**
 * A card payment of the context's merchant in `mode` (live by default), handed to the account its route names:
 * the payment, the provider's reference, and when the account took it.
 */
export async function handedOver(
  ctx: TestContext,
  overrides: Record<string, unknown> = {},
  mode: Mode = 'live',
) {
  const payment = await paymentMade(ctx, overrides, { merchant: ctx.merchant, mode })
  const handover = await handoverOf(ctx, payment.uuid)
  assert.equal(handover?.state, 'handed_over')
  return { payment, reference: handover.provider_reference as string, takenAt: handover.updated_at }
}

/** The payment as its merchant reads it now (in `mode`, live by default). */
export async function paymentNow(
  ctx: TestContext,
  uuid: string,
  merchant: TestMerchant = ctx.merchant,
  mode: Mode = 'live',
) {
  const res = await call(ctx, 'GET', `/integration/transactions/${uuid}`, undefined, {
    as: { merchant, mode },
  })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

/** Waits until the payment's status is `status`; answers it as its merchant reads it then. */
export const paymentBecomes = (
  ctx: TestContext,
  uuid: string,
  status: string,
  merchant: TestMerchant = ctx.merchant,
  timeoutMs = 5000,
) =>
  eventually(async () => {
    const payment = await paymentNow(ctx, uuid, merchant)
    return payment.status === status ? payment : null
  }, timeoutMs)

export const handoverOf = (ctx: TestContext, uuid: string) =>
  ctx.db.selectFrom('payment_handovers').selectAll().where('transaction_uuid', '=', uuid).executeTakeFirst()

/** The payment's tries along its route, in order. */
export const attemptsOf = (ctx: TestContext, uuid: string) =>
  rowsWhere(
    ctx.db,
    'payment_attempts',
    { transaction_uuid: uuid },
    { orderBy: ['position'], select: ['position', 'account_uuid', 'result', 'provider_reference'] },
  )

/** The names of the payment's events in the outbox, oldest first. */
export const eventNames = async (ctx: TestContext, uuid: string) =>
  (await rowsWhere(ctx.db, 'events', { aggregate_uuid: uuid }, { orderBy: ['aggregate_version'] })).map(
    (row) => row.event,
  )

/** The reviews opened about the payment, oldest first. */
export const reviewsOf = (ctx: TestContext, uuid: string) =>
  rowsWhere(ctx.db, 'payment_reviews', { transaction_uuid: uuid }, { orderBy: ['created_at'] })

/** The callback log's entries about a provider's reference, oldest first. */
export const callbackLog = (ctx: TestContext, reference: string) =>
  rowsWhere(
    ctx.db,
    'connector_callbacks',
    { provider_reference: reference },
    { orderBy: ['received_at', 'uuid'], select: ['verification', 'result', 'event_type', 'detail'] },
  )

/** The merchant's live balance in `currency` (zeros when it has none yet). */
export async function liveBalance(ctx: TestContext, currency: string, merchant: TestMerchant = ctx.merchant) {
  const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant, mode: 'live' } })
  assert.equal(res.statusCode, 200, res.body)
  const balances = res.json().data as {
    currency: string
    available: number
    pending: number
    total: number
  }[]
  return balances.find((b) => b.currency === currency) ?? { currency, available: 0, pending: 0, total: 0 }
}

/**
 * The payment's money was credited once, to the pending balance for the live hold (`before` is the balance
 * read before the payment was made), and the ledger still verifies.
 */
export async function assertCreditedOnce(
  ctx: TestContext,
  payment: { settlement_amount: number },
  before: Awaited<ReturnType<typeof liveBalance>>,
) {
  const after = await liveBalance(ctx, before.currency)
  assert.equal(after.pending - before.pending, payment.settlement_amount)
  assert.equal(after.available, before.available)
  assert.equal((await ctx.services.ledger.verify()).ok, true)
}

/** The payment was paid once: its one event is transaction.paid, and its money was credited once. */
export async function assertPaidOnce(
  ctx: TestContext,
  payment: { uuid: string; settlement_amount: number },
  before: Awaited<ReturnType<typeof liveBalance>>,
) {
  assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])
  await assertCreditedOnce(ctx, payment, before)
}

/** What the emulator decides for the payment `reference` (its admin API, as the customer's page would). */
export async function decide(acquirer: SuiteAcquirer, reference: string, status: string) {
  const res = await fetch(`${acquirer.base}/admin/payments/${reference}/decide`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ status }),
  })
  assert.equal(res.status, 200, await res.text())
}

export interface SentCallback {
  type: string
  reference: string
  attempts: number[]
}

/** The callbacks the emulator sent about `reference`, once `count` of them have ended (2xx, or it gave up). */
export const sentAbout = (acquirer: SuiteAcquirer, reference: string, count: number, attempts = 1) =>
  eventually(async () => {
    const sent = ((await (await fetch(`${acquirer.base}/admin/callbacks`)).json()) as SentCallback[]).filter(
      (c) => c.reference === reference,
    )
    const ended = sent.filter(
      (c) => c.attempts.length >= attempts || c.attempts.some((s) => s >= 200 && s < 300),
    )
    return sent.length >= count && ended.length === sent.length ? sent : null
  })

/** Every callback the emulator has sent so far. */
export const allSent = async (acquirer: SuiteAcquirer) =>
  (await (await fetch(`${acquirer.base}/admin/callbacks`)).json()) as SentCallback[]

/** A callback about `reference` signed with the account's secret, posted to its callback URL at `gateway`. */
export function postSignedCallback(
  gateway: string,
  acquirer: SuiteAcquirer,
  type: string,
  data: { reference: string; amount?: number; currency?: string },
  id = `evt_${randomBytes(9).toString('base64url')}`,
) {
  const body = JSON.stringify({ id, type, data })
  return fetch(`${gateway}/providers/${acquirer.account.uuid}/callbacks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...signCallback([acquirer.secret], `msg_${Date.now()}`, new Date(), body),
    },
    body,
  })
}

/** The payments the emulator holds that were handed over for `transactionUuid` (its admin API). */
export async function emulatorPaymentsFor(acquirer: SuiteAcquirer, transactionUuid: string) {
  const res = await fetch(`${acquirer.base}/admin/payments?order_id=${transactionUuid}`)
  assert.equal(res.status, 200)
  return (await res.json()) as { reference: string; order_id: string; status: string; amount: number }[]
}

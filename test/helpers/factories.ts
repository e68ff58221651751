import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { Simulation } from '../../src/modules/sandbox/service.ts'
import type { TestContext, TestMerchant } from './context.ts'
import { type CallOptions, call } from './http.ts'

let counter = 0
/** A unique external_id for a test. */
export const extId = (prefix = 'ord') => `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`

export const newTransaction = (overrides: Record<string, unknown> = {}) => ({
  amount: 150000,
  currency: 'RUB',
  payment_method: 'card',
  external_id: extId(),
  description: 'Order',
  ...overrides,
})

/** POST /integration/transactions with `newTransaction(overrides)`, with `options`' credentials; the answer as is. */
export const postTransaction = (
  ctx: TestContext,
  overrides: Record<string, unknown> = {},
  options: CallOptions = {},
) => call(ctx, 'POST', '/integration/transactions', newTransaction(overrides), options)

/** What the sandbox can report of a pending transaction (POST /integration/sandbox/transactions/{uuid}/…). */
export type SandboxOutcome = Simulation

/**
 * A transaction created through the API and reported paid through the sandbox (or given another `outcome`), as
 * `as` (default: the context's merchant, test mode): its JSON as the sandbox answered it. In test mode its money
 * is available at once.
 */
export async function paidTransaction(
  ctx: TestContext,
  overrides: Record<string, unknown> = {},
  as?: CallOptions['as'],
  outcome: SandboxOutcome = 'paid',
) {
  const created = await postTransaction(ctx, overrides, { as })
  assert.equal(created.statusCode, 201, created.body)
  const done = await call(
    ctx,
    'POST',
    `/integration/sandbox/transactions/${created.json().uuid}/${outcome}`,
    undefined,
    {
      as,
    },
  )
  assert.equal(done.statusCode, 200, done.body)
  return done.json()
}

/** A merchant with a chosen settlement currency, shaped like the harness's merchants. */
export async function merchantSettledIn(ctx: TestContext, settlementCurrency: string): Promise<TestMerchant> {
  const { merchant, keys } = await ctx.services.merchants.createMerchant({
    name: `${settlementCurrency} Shop`,
    settlementCurrency,
  })
  ctx.secrets.push(keys.test.secret, keys.live.secret)
  return { uuid: merchant.uuid, keys }
}

type NewTransactionRow = import('../../src/db/types.ts').NewTransaction

let rowCounter = 0
/**
 * A complete `transactions` row for direct inserts through `ctx.db`, when a test needs to control columns the
 * API sets itself (created_at, status, uuid). Defaults: a pending 1000.00 RUB card payment in test mode.
 */
export function transactionRow(
  merchantUuid: string,
  overrides: Partial<NewTransactionRow> = {},
): NewTransactionRow {
  const n = rowCounter++
  const createdAt = overrides.created_at ?? new Date()
  return {
    uuid: globalThis.crypto.randomUUID(),
    merchant_uuid: merchantUuid,
    mode: 'test',
    type: 'payment',
    external_id: `row-${n}-${randomBytes(4).toString('hex')}`,
    amount: 100000,
    gross_amount: 100000,
    net_amount: 100000,
    fee_amount: 0,
    fee_bps: 0,
    fee_payer: 'merchant',
    merchant_fee_share_bps: 10000,
    merchant_fee_merchant_amount: 0,
    merchant_fee_customer_amount: 0,
    currency: 'RUB',
    settlement_currency: 'USDT',
    settlement_amount: 10851871,
    fx_rate: '92.15',
    fx_rate_updated_at: createdAt,
    payment_method: 'card',
    status: 'pending',
    description: null,
    metadata: null,
    callback_url: null,
    success_url: null,
    fail_url: null,
    payment_token: randomBytes(16).toString('base64url'),
    requisites: null,
    requisite_uuid: null,
    expires_at: new Date(new Date(createdAt).getTime() + 30 * 60 * 1000),
    paid_at: null,
    settle_available_at: null,
    aggregate_version: 1,
    created_at: createdAt,
    updated_at: createdAt,
    ...overrides,
  }
}

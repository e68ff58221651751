import assert from 'node:assert/strict'
import type { InjectOptions } from 'fastify'
import { openApiDocument } from '../../../scripts/openapi.ts'
import type { Mode } from '../../../src/db/types.ts'
import { call, newTransaction, type TestContext, type TestMerchant } from '../../helpers/harness.ts'
import { deliveryRows } from '../webhooks/helpers.ts'

/**
 * How to call each authenticated operation, for the shared security suite (auth.security.test.ts), in the
 * spirit of unkey's runCommonRouteTests. Which operations are tested comes from the served OpenAPI document
 * (DOCUMENTED_OPERATIONS): a new authenticated route gets one entry here and inherits every case (no, wrong,
 * revoked, malformed, expired and tampered credentials, and merchant and mode isolation); a route the
 * document has and this table lacks fails the suite.
 */
export interface SecurityRoute<R = unknown> {
  /** Shown in test names, e.g. `GET /integration/transactions/{uuid}`. */
  name: string
  method: NonNullable<InjectOptions['method']>
  /** `key`: X-Api-Key or X-Signature; `signature`: X-Signature only (money-moving operations). */
  auth: 'key' | 'signature'
  /** `required`: every request carries a fresh Idempotency-Key; `optional`: the route accepts one. */
  idempotency?: 'optional' | 'required'
  /**
   * Creates what the route needs, owned by `merchant` in `mode` (a transaction to read, to refund…).
   * Called once per test, so a route that consumes its resource gets a fresh one every time.
   */
  setup(ctx: TestContext, merchant: TestMerchant, mode: Mode): Promise<R>
  /** Path and query as sent. */
  url(resource: R): string
  /** The JSON body of a valid request; called once per request, so unique fields stay unique. */
  body?(resource: R): unknown
  /** The status of a successful request. */
  status: number
  /** Test keys only: a valid live key is 403 `forbidden`. */
  testOnly?: boolean
  /**
   * How the route keeps merchants and modes apart:
   * - `resource`: another merchant's resource, or one of the other mode, answers 404 `not_found`;
   * - `list`: the listing shows the caller's own resource and never another merchant's or mode's;
   * - `none`: nothing to read across (e.g. a create with no reference to an existing resource).
   */
  isolation:
    | { kind: 'resource' }
    | { kind: 'list'; includes(json: unknown, resource: R): boolean }
    | { kind: 'none' }
}

/** What a route's setup is: it makes the resource its test calls the route on. */
type Setup<R> = SecurityRoute<R>['setup']

/** Keeps each entry's resource type checked while the table holds them side by side. */
export const defineRoute = <R>(route: SecurityRoute<R>): SecurityRoute => route as unknown as SecurityRoute

export interface CreatedTransaction {
  uuid: string
  external_id: string
}

/** A pending transaction of `merchant` in `mode`, created over HTTP (p2p_card, so it has requisites). */
export async function createTransaction(
  ctx: TestContext,
  merchant: TestMerchant,
  mode: Mode,
  overrides: Record<string, unknown> = {},
): Promise<CreatedTransaction> {
  const res = await call(
    ctx,
    'POST',
    '/integration/transactions',
    newTransaction({ payment_method: 'p2p_card', ...overrides }),
    { as: { merchant, mode } },
  )
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

/** A transaction of `merchant` in `mode` (`overrides`), paid through the sandbox. */
async function sandboxPaid(
  ctx: TestContext,
  merchant: TestMerchant,
  mode: Mode,
  overrides: Record<string, unknown> = {},
): Promise<CreatedTransaction> {
  const tx = await createTransaction(ctx, merchant, mode, overrides)
  const paid = await call(ctx, 'POST', `/integration/sandbox/transactions/${tx.uuid}/paid`, undefined, {
    as: { merchant, mode },
  })
  assert.equal(paid.statusCode, 200, paid.body)
  return tx
}

/**
 * A paid transaction of `merchant` in `mode` whose money is available at once (hold 0), plus a larger one
 * before it so a full refund's ceiled debit is always covered.
 */
const paidTransaction: Setup<CreatedTransaction> = async (ctx, merchant, mode) => {
  await ctx.services.merchants.updateMerchant(merchant.uuid, { settlementHoldSeconds: 0 })
  const pay = (amount: number) => sandboxPaid(ctx, merchant, mode, { payment_method: 'card', amount })
  await pay(1_000_000)
  return pay(10_000)
}

const listIncludes = (json: unknown, uuid: string): boolean =>
  ((json as { data?: { uuid: string }[] }).data ?? []).some((item) => item.uuid === uuid)

/** A refund of a paid transaction of `merchant` in `mode`. */
const createRefund: Setup<{ uuid: string }> = async (ctx, merchant, mode) => {
  const tx = await paidTransaction(ctx, merchant, mode)
  const res = await call(
    ctx,
    'POST',
    '/integration/refunds',
    { transaction_uuid: tx.uuid, amount_minor: 100 },
    { as: { merchant, mode }, auth: 'signature', idempotencyKey: `setup-${tx.uuid}` },
  )
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

/** Points `merchant`'s `mode` webhook at `url` (a closed port by default: attempts fail at once, no server needed). */
async function configureWebhook(ctx: TestContext, merchant: TestMerchant, mode: Mode, url = UNREACHABLE) {
  const res = await call(ctx, 'PUT', '/integration/webhook', { url }, { as: { merchant, mode } })
  assert.equal(res.statusCode, 200, res.body)
}

/** Port 9 (discard) on loopback: nothing listens there, so a delivery attempt is refused at once. */
const UNREACHABLE = 'http://127.0.0.1:9/hooks'

export interface CreatedDelivery {
  uuid: string
}

/** A webhook.test delivery of `merchant` in `mode`, made over HTTP. */
const createTestDelivery: Setup<CreatedDelivery> = async (ctx, merchant, mode) => {
  await configureWebhook(ctx, merchant, mode)
  const res = await call(ctx, 'POST', '/integration/webhook/test', undefined, { as: { merchant, mode } })
  assert.equal(res.statusCode, 200, res.body)
  return res.json()
}

/**
 * An event delivery (redeliver refuses test deliveries) of `merchant` in `mode`: a transaction with a callback_url,
 * paid through the sandbox. No dispatcher runs in the security suite, so it stays pending.
 */
const createEventDelivery: Setup<CreatedDelivery> = async (ctx, merchant, mode) => {
  const tx = await sandboxPaid(ctx, merchant, mode, { callback_url: UNREACHABLE })
  const [row] = await deliveryRows(ctx, tx.uuid)
  assert.ok(row, 'the paid event has a delivery')
  return { uuid: row.uuid }
}

export interface CreatedEvent {
  event_id: string
}

/** The transaction.paid event of a transaction of `merchant` in `mode`, paid through the sandbox. */
const createEvent: Setup<CreatedEvent> = async (ctx, merchant, mode) => {
  const tx = await sandboxPaid(ctx, merchant, mode)
  const row = await ctx.db
    .selectFrom('events')
    .select('uuid')
    .where('aggregate_uuid', '=', tx.uuid)
    .executeTakeFirstOrThrow()
  return { event_id: row.uuid }
}

export interface CreatedPayout {
  uuid: string
}

/** A TRC20 wallet: payouts to it go through the sandbox provider, which takes them (status processing). */
const PAYOUT_WALLET = { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' }

let payoutCounter = 0
/** The body of a 1.00 USD (1 USDT at USD 1, no fee by default) payout to a wallet, with a fresh external_id. */
const newPayout = () => ({
  external_id: `po-sec-${Date.now().toString(36)}-${(payoutCounter++).toString(36)}`,
  amount: 100,
  currency: 'USD',
  method: 'usdt_wallet',
  destination: PAYOUT_WALLET,
})

/**
 * 100 USDT available to `merchant` in `mode`: a paid 100.00 USD payment. Test mode has no hold; live mode
 * holds paid money 24 h by default, so the merchant's hold is set to 0 first.
 */
const fundPayouts: Setup<null> = async (ctx, merchant, mode) => {
  if (mode === 'live')
    await ctx.services.merchants.updateMerchant(merchant.uuid, { settlementHoldSeconds: 0 })
  await sandboxPaid(ctx, merchant, mode, { payment_method: 'card', currency: 'USD', amount: 10_000 })
  return null
}

/** A processing payout of `merchant` in `mode`, created over HTTP on a funded balance. */
const createPayout: Setup<CreatedPayout> = async (ctx, merchant, mode) => {
  await fundPayouts(ctx, merchant, mode)
  const body = newPayout()
  const res = await call(ctx, 'POST', '/integration/payouts', body, {
    as: { merchant, mode },
    auth: 'signature',
    idempotencyKey: `setup-${body.external_id}`,
  })
  assert.equal(res.statusCode, 201, res.body)
  assert.equal(res.json().status, 'processing')
  return res.json()
}

export interface CreatedBalanceTransaction {
  uuid: string
}

/** The newest balance transaction of `merchant` in `mode`: the credit of a payment paid over HTTP. */
const paidBalanceTransaction: Setup<CreatedBalanceTransaction> = async (ctx, merchant, mode) => {
  const tx = await sandboxPaid(ctx, merchant, mode, { payment_method: 'card' })
  const res = await call(
    ctx,
    'GET',
    `/integration/balance-transactions?source_uuid=${tx.uuid}&type=payment`,
    undefined,
    { as: { merchant, mode } },
  )
  assert.equal(res.statusCode, 200, res.body)
  const [line] = res.json().data
  assert.ok(line, 'the payment was credited')
  return line
}

/** One authenticated operation as the document declares it. */
export interface DocumentedOperation {
  /** `METHOD path`, as SecurityRoute names it. */
  name: string
  /** `signature` when X-Signature is the only scheme, `key` when X-Api-Key is accepted too. */
  auth: SecurityRoute['auth']
  /** From its Idempotency-Key header parameter: `required` when its description says so. */
  idempotency: SecurityRoute['idempotency']
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const

/** Every operation of the served document that asks for credentials. */
export const DOCUMENTED_OPERATIONS: DocumentedOperation[] = Object.entries(
  (await openApiDocument()).paths as Record<string, Record<string, OperationJson>>,
).flatMap(([path, item]) =>
  METHODS.flatMap((method) => {
    const operation = item[method]
    if (!operation?.security?.length) return []
    const schemes = operation.security.flatMap((requirement) => Object.keys(requirement))
    const key = (operation.parameters ?? []).find(
      (p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key',
    )
    return [
      {
        name: `${method.toUpperCase()} ${path}`,
        auth: schemes.includes('ApiKey') ? 'key' : 'signature',
        idempotency: key ? (/^Required/.test(key.description ?? '') ? 'required' : 'optional') : undefined,
      },
    ]
  }),
)

interface OperationJson {
  security?: Record<string, string[]>[]
  parameters?: { in: string; name: string; description?: string }[]
}

const nothing = async () => null

/** A listing's isolation: it shows the caller's own resource (by uuid), never another merchant's or mode's. */
const listed = <R extends { uuid: string }>(): SecurityRoute<R>['isolation'] => ({
  kind: 'list',
  includes: (json, resource) => listIncludes(json, resource.uuid),
})

/** The shape of the reading routes: a GET with X-Api-Key (or X-Signature) answering 200. */
const keyGet = <R>(
  name: string,
  setup: Setup<R>,
  url: SecurityRoute<R>['url'],
  isolation: SecurityRoute<R>['isolation'] = { kind: 'resource' },
) => defineRoute<R>({ name, method: 'GET', auth: 'key', setup, url, status: 200, isolation })

/** The shape of the creating routes: a POST of `body` to a fixed path, answering 201. */
const create = <R>(
  path: string,
  auth: SecurityRoute<R>['auth'],
  idempotency: SecurityRoute<R>['idempotency'],
  setup: Setup<R>,
  body: NonNullable<SecurityRoute<R>['body']>,
  isolation: SecurityRoute<R>['isolation'] = { kind: 'none' },
) =>
  defineRoute<R>({
    name: `POST ${path}`,
    method: 'POST',
    auth,
    idempotency,
    setup,
    url: () => path,
    body,
    status: 201,
    isolation,
  })

/** The sandbox's simulations `names` of a `kind` of resource `setup` makes: POSTs on its uuid, answering 200. */
const simulations = <R extends { uuid: string }>(
  kind: 'transactions' | 'payouts',
  names: readonly string[],
  setup: Setup<R>,
) =>
  names.map((simulation) =>
    defineRoute<R>({
      name: `POST /integration/sandbox/${kind}/{uuid}/${simulation}`,
      method: 'POST',
      auth: 'key',
      idempotency: 'optional',
      setup,
      url: (resource) => `/integration/sandbox/${kind}/${resource.uuid}/${simulation}`,
      status: 200,
      isolation: { kind: 'resource' },
    }),
  )

export const ROUTE_TABLE: SecurityRoute[] = [
  create<null>('/integration/transactions', 'key', 'optional', nothing, () => newTransaction()),
  // per_page=100 so the resource under test is on the page however many the suite created before it.
  keyGet<CreatedTransaction>(
    'GET /integration/transactions',
    createTransaction,
    () => '/integration/transactions?per_page=100',
    listed(),
  ),
  keyGet<CreatedTransaction>(
    'GET /integration/transactions/{uuid}',
    createTransaction,
    (tx) => `/integration/transactions/${tx.uuid}`,
  ),
  keyGet<CreatedTransaction>(
    'GET /integration/transactions/{uuid}/h2h',
    createTransaction,
    (tx) => `/integration/transactions/${tx.uuid}/h2h`,
  ),
  keyGet<CreatedTransaction>(
    'GET /integration/transactions/by-external-id/{externalId}',
    createTransaction,
    (tx) => `/integration/transactions/by-external-id/${encodeURIComponent(tx.external_id)}`,
  ),
  create<CreatedTransaction>(
    '/integration/refunds',
    'signature',
    'required',
    paidTransaction,
    (tx) => ({ transaction_uuid: tx.uuid, amount_minor: 100 }),
    { kind: 'resource' },
  ),
  keyGet<{ uuid: string }>(
    'GET /integration/refunds',
    createRefund,
    () => '/integration/refunds?per_page=100',
    listed(),
  ),
  keyGet<{ uuid: string }>(
    'GET /integration/refunds/{uuid}',
    createRefund,
    (refund) => `/integration/refunds/${refund.uuid}`,
  ),
  keyGet<null>(
    'GET /integration/payouts/quote',
    nothing,
    () => '/integration/payouts/quote?amount=100000&currency=RUB&method=card',
    { kind: 'none' },
  ),
  create<null>('/integration/payouts', 'signature', 'required', fundPayouts, () => newPayout()),
  keyGet<CreatedPayout>(
    'GET /integration/payouts',
    createPayout,
    () => '/integration/payouts?per_page=100',
    listed(),
  ),
  keyGet<CreatedPayout>(
    'GET /integration/payouts/{uuid}',
    createPayout,
    (payout) => `/integration/payouts/${payout.uuid}`,
  ),
  ...simulations<CreatedPayout>('payouts', ['completed', 'failed'], createPayout),
  keyGet<null>('GET /integration/balances', nothing, () => '/integration/balances', { kind: 'none' }),
  keyGet<null>('GET /integration/balances/summary', nothing, () => '/integration/balances/summary', {
    kind: 'none',
  }),
  keyGet<CreatedBalanceTransaction>(
    'GET /integration/balance-transactions',
    paidBalanceTransaction,
    () => '/integration/balance-transactions?per_page=100',
    listed(),
  ),
  keyGet<CreatedBalanceTransaction>(
    'GET /integration/balance-transactions/{uuid}',
    paidBalanceTransaction,
    (line) => `/integration/balance-transactions/${line.uuid}`,
  ),
  keyGet<null>('GET /integration/rates', nothing, () => '/integration/rates', { kind: 'none' }),
  keyGet<null>('GET /integration/webhook', nothing, () => '/integration/webhook', { kind: 'none' }),
  defineRoute<null>({
    name: 'PUT /integration/webhook',
    method: 'PUT',
    auth: 'key',
    setup: nothing,
    url: () => '/integration/webhook',
    body: () => ({ url: 'https://shop.example/hooks', events: ['transaction.paid', 'transaction.failed'] }),
    status: 200,
    isolation: { kind: 'none' },
  }),
  defineRoute<null>({
    name: 'POST /integration/webhook/secret/rotate',
    method: 'POST',
    auth: 'key',
    idempotency: 'optional',
    setup: nothing,
    url: () => '/integration/webhook/secret/rotate',
    body: () => ({ overlap_seconds: 3600 }),
    status: 200,
    isolation: { kind: 'none' },
  }),
  defineRoute<null>({
    name: 'POST /integration/webhook/test',
    method: 'POST',
    auth: 'key',
    idempotency: 'optional',
    setup: async (ctx, merchant, mode) => {
      await configureWebhook(ctx, merchant, mode)
      return null
    },
    url: () => '/integration/webhook/test',
    status: 200,
    isolation: { kind: 'none' },
  }),
  keyGet<CreatedDelivery>(
    'GET /integration/webhook/deliveries',
    createTestDelivery,
    () => '/integration/webhook/deliveries?per_page=100',
    listed(),
  ),
  keyGet<CreatedDelivery>(
    'GET /integration/webhook/deliveries/{uuid}',
    createTestDelivery,
    (delivery) => `/integration/webhook/deliveries/${delivery.uuid}`,
  ),
  defineRoute<CreatedDelivery>({
    name: 'POST /integration/webhook/deliveries/{uuid}/redeliver',
    method: 'POST',
    auth: 'key',
    idempotency: 'optional',
    setup: createEventDelivery,
    url: (delivery) => `/integration/webhook/deliveries/${delivery.uuid}/redeliver`,
    status: 202,
    isolation: { kind: 'resource' },
  }),
  defineRoute<CreatedEvent>({
    name: 'GET /integration/events',
    method: 'GET',
    auth: 'key',
    setup: createEvent,
    url: () => '/integration/events?per_page=100',
    status: 200,
    isolation: {
      kind: 'list',
      includes: (json, event) =>
        ((json as { data?: { event_id: string }[] }).data ?? []).some((e) => e.event_id === event.event_id),
    },
  }),
  defineRoute<null>({
    name: 'GET /integration/events/stream',
    method: 'GET',
    auth: 'key',
    setup: nothing,
    url: () => '/integration/events/stream',
    status: 200,
    testOnly: true,
    // Other merchants' and the live mode's events never reach a stream: test/api/events/stream.test.ts.
    isolation: { kind: 'none' },
  }),
  keyGet<CreatedEvent>(
    'GET /integration/events/{event_id}',
    createEvent,
    (event) => `/integration/events/${event.event_id}`,
  ),
  ...simulations<CreatedTransaction>(
    'transactions',
    ['paid', 'failed', 'expired', 'failed-then-paid'],
    createTransaction,
  ),
]

/** The table, in the order the document lists its operations; an operation without an entry is left out here. */
export const SECURITY_ROUTES: SecurityRoute[] = DOCUMENTED_OPERATIONS.flatMap(
  (operation) => ROUTE_TABLE.find((route) => route.name === operation.name) ?? [],
)

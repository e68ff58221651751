/** Targets: every route of the app, with a valid request to start from, and what the mutations draw on. */

import assert from 'node:assert/strict'
import { createTransaction, SECURITY_ROUTES } from '../api/security/routes.ts'
import { call, type TestContext } from '../helpers/harness.ts'
import { QUERY_PARAMETERS } from '../helpers/query-parameters.ts'
import { isPlainObject } from './json.ts'

export interface Target {
  name: string
  method: string
  segments: string[]
  /** Indices of `segments` that are path parameters. */
  params: number[]
  query: string
  queryFields: string[]
  /** A valid body (fresh unique fields on every call). */
  body?: () => unknown
  bodyFields: string[]
  auth: 'none' | 'key' | 'signature'
  idempotency?: 'optional' | 'required'
}

const OPTIONAL_FIELDS: Record<string, string[]> = {
  'POST /integration/transactions': ['description', 'metadata', 'callback_url', 'success_url', 'fail_url'],
  'POST /integration/refunds': ['reason'],
  'POST /integration/payouts': ['quote_id', 'metadata', 'callback_url'],
  'PUT /integration/webhook': ['enabled'],
  'POST /integration/webhook/secret/rotate': ['overlap_seconds'],
}

export interface FuzzContext {
  ctx: TestContext
  targets: Target[]
  cursors: string[]
  existingExternalId: string
  pendingTxUuid: string
  revoked: { key_id: string; secret: string }
}

function targetOf(
  name: string,
  url: string,
  auth: Target['auth'],
  extra: Partial<Pick<Target, 'body' | 'idempotency'>> = {},
): Target {
  const [method = 'GET', template = '/'] = name.split(' ')
  const [path = '/', query = ''] = url.split('?')
  const segments = path.slice(1).split('/')
  const params = template
    .slice(1)
    .split('/')
    .flatMap((segment, i) => (segment.startsWith('{') ? [i] : []))
  const base = extra.body?.()
  return {
    name,
    method,
    segments,
    params,
    query,
    queryFields: QUERY_PARAMETERS[name] ?? [],
    bodyFields: [
      ...new Set([...Object.keys(isPlainObject(base) ? base : {}), ...(OPTIONAL_FIELDS[name] ?? [])]),
    ],
    auth,
    ...extra,
  }
}

export async function buildTargets(ctx: TestContext): Promise<FuzzContext> {
  const targets: Target[] = []
  for (const route of SECURITY_ROUTES) {
    const resource = await route.setup(ctx, ctx.merchant, 'test')
    targets.push(
      targetOf(route.name, route.url(resource), route.auth, {
        ...(route.body && { body: () => route.body?.(resource) }),
        ...(route.idempotency && { idempotency: route.idempotency }),
      }),
    )
  }
  const page = await createTransaction(ctx, ctx.merchant, 'test', { payment_method: 'card' })
  const paymentUrl: string = (
    await call(ctx, 'GET', `/integration/transactions/${page.uuid}`).then((res) => res.json())
  ).payment_url
  const token = new URL(paymentUrl).pathname.split('/').pop() as string
  targets.push(
    targetOf('GET /integration/health', '/integration/health', 'none'),
    targetOf('GET /integration/openapi.json', '/integration/openapi.json', 'none'),
    targetOf('GET /docs', '/docs', 'none'),
    targetOf('GET /docs/json', '/docs/json', 'none'),
    targetOf('GET /docs/static/{file}', '/docs/static/index.html', 'none'),
    targetOf('GET /pay/{token}', `/pay/${token}`, 'none'),
    targetOf('GET /pay/{token}/status', `/pay/${token}/status`, 'none'),
    targetOf('POST /pay/{token}/simulate/paid', `/pay/${token}/simulate/paid`, 'none'),
    targetOf('POST /pay/{token}/simulate/failed', `/pay/${token}/simulate/failed`, 'none'),
    targetOf('GET /pay/assets/{name}', '/pay/assets/checkout.css', 'none'),
  )

  // Real cursors, to truncate, tamper with and replay under other filters.
  for (let i = 0; i < 3; i++) await createTransaction(ctx, ctx.merchant, 'test')
  const cursors: string[] = []
  for (const list of [
    '/integration/transactions',
    '/integration/payouts',
    '/integration/webhook/deliveries',
  ]) {
    const first = (await call(ctx, 'GET', `${list}?per_page=1`)).json()
    if (!first.meta?.next_cursor) continue
    cursors.push(first.meta.next_cursor)
    const second = (await call(ctx, 'GET', `${list}?per_page=1&cursor=${first.meta.next_cursor}`)).json()
    if (second.meta?.prev_cursor) cursors.push(second.meta.prev_cursor)
  }
  assert.ok(cursors.length >= 2, 'the lists have cursors to fuzz with')

  const revoked = await ctx.services.merchants.createKey(ctx.merchant.uuid, 'test')
  assert.ok(revoked)
  ctx.secrets.push(revoked.secret)
  await ctx.services.merchants.revokeKey(revoked.key_id)
  const pending = await createTransaction(ctx, ctx.merchant, 'test')
  return {
    ctx,
    targets,
    cursors,
    existingExternalId: pending.external_id,
    pendingTxUuid: pending.uuid,
    revoked,
  }
}

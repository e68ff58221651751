import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { TestContext } from './context.ts'
import { eventually } from './eventually.ts'

/** The one error envelope (docs/API.md, Errors), its request_id the response's X-Request-Id. */
export function assertError(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body)
  const { error } = JSON.parse(res.body)
  assert.equal(error.code, code, res.body)
  assert.equal(typeof error.message, 'string')
  assert.ok(error.request_id)
  assert.equal(error.request_id, res.headers['x-request-id'])
  assert.ok('details' in error)
  return error
}

/** An expected 503: assert it, then take it off the list `ctx.close()` fails on. */
export async function acceptUnavailable(ctx: TestContext, res: LightMyRequestResponse, code: string) {
  const error = assertError(res, 503, code)
  await eventually(async () => ctx.serverErrors.some((e) => e.status === 503))
  for (let i = ctx.serverErrors.length - 1; i >= 0; i--)
    if (ctx.serverErrors[i]?.status === 503) ctx.serverErrors.splice(i, 1)
  return error
}

/** 422 validation_failed with at least one message for `field`; `what` (the request's query, say) names the case. */
export function assertFieldInvalid(res: LightMyRequestResponse, field: string, what: string) {
  assert.equal(res.statusCode, 422, `${what}: ${res.body}`)
  const { error } = JSON.parse(res.body)
  assert.equal(error.code, 'validation_failed')
  assert.ok(
    Array.isArray(error.errors?.[field]) && error.errors[field].length > 0,
    `${what}: expected errors.${field}, got ${res.body}`,
  )
}

/** What the suites that read an OpenAPI document (the merchant API's, the dashboard API's) walk it with. */

import assert from 'node:assert/strict'

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON of any shape.
export type Json = Record<string, any>

/** The operations a path item may hold (OpenAPI 3, "Path Item Object"). */
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace']

/** The two error envelopes every documented error response must reference. */
export const ERROR_SCHEMAS = [
  '#/components/schemas/ErrorResponse',
  '#/components/schemas/ValidationErrorResponse',
]

/** Every operation of a document, as [METHOD, path, operation]. */
export function operations(doc: Json): [string, string, Json][] {
  const out: [string, string, Json][] = []
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {}))
    for (const method of METHODS) if (item[method]) out.push([method.toUpperCase(), path, item[method]])
  return out
}

/**
 * What every operation of a served document must carry, checked as [name, operation] pairs: a camelCase
 * operationId used once, at least one tag and only declared ones, a summary, a 2xx response, and no response
 * left at Fastify's "Default Response". Returns the operations for the checks a suite adds of its own.
 */
export function assertOperationBasics(doc: Json): [string, Json][] {
  const declaredTags = new Set((doc.tags as Json[]).map((t) => t.name))
  const ids = new Set<string>()
  return operations(doc).map(([method, path, op]) => {
    const name = `${method} ${path}`
    assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${name}: operationId`)
    assert.ok(!ids.has(op.operationId), `${name}: operationId ${op.operationId} is used twice`)
    ids.add(op.operationId)
    assert.ok(Array.isArray(op.tags) && op.tags.length > 0, `${name}: tags`)
    for (const tag of op.tags) assert.ok(declaredTags.has(tag), `${name}: tag ${tag} is not declared`)
    assert.ok(typeof op.summary === 'string' && op.summary.length > 0, `${name}: summary`)
    assert.ok(
      Object.keys(op.responses).some((s) => /^2\d\d$/.test(s)),
      `${name}: no 2xx response`,
    )
    for (const [status, response] of Object.entries<Json>(op.responses))
      assert.notEqual(response.description, 'Default Response', `${name} ${status}: generic description`)
    return [name, op]
  })
}

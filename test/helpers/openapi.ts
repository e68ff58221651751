/** What the suites that read an OpenAPI document (the merchant API's, the dashboard API's) walk it with. */

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

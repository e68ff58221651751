import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON of any shape.
type Json = Record<string, any>

/** Response headers the service's shared machinery sends: each one sent must be declared for its status. */
const WATCHED_HEADERS = [
  'x-request-id',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
  'location',
  'idempotent-replayed',
]

/** One answer as the app sent it. */
export interface SentResponse {
  method: string
  /** The route's pattern as Fastify knows it (`/integration/transactions/:uuid`), or undefined when unmatched. */
  route: string | undefined
  url: string
  status: number
  headers: Record<string, unknown>
  body: string
  /** Made by a dashboard page with its session (X-Dashboard-Mode), not with an API key. */
  dashboard?: boolean
}

const pointer = (...tokens: string[]) =>
  tokens.map((t) => encodeURIComponent(t.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')

/**
 * Checks answers against the served OpenAPI document as a third-party client would: with an independent
 * JSON Schema 2020-12 validator (Ajv), resolving the document's own `$ref`s. An answer of an operation the
 * document has must have a declared status, a body valid against the declared schema, and every shared header
 * it carries declared (and every required one present). Answers of paths the document does not describe (the
 * hosted page, /docs, a 404 for an unknown path) are not checked.
 */
export function responseContract(doc: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
  addFormats.default(ajv)
  ajv.addSchema(doc, 'openapi.json')
  const validators = new Map<string, ValidateFunction>()

  return {
    /** Why `sent` does not match the document, or null when it does (or the document does not cover it). */
    check(sent: SentResponse): string | null {
      if (!sent.route) return null
      // The document describes calls made with API keys. A dashboard session's refusals (401, 403) are the
      // dashboard's own (docs/DASHBOARD.md); what it is answered otherwise is checked like any call.
      if (sent.dashboard && (sent.status === 401 || sent.status === 403)) return null
      const path = sent.route.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
      const method = sent.method.toLowerCase()
      const operation: Json | undefined = doc.paths?.[path]?.[method]
      if (!operation) return null
      const url = sent.url.length > 160 ? `${sent.url.slice(0, 160)}…` : sent.url
      const name = `${sent.method} ${url} → ${sent.status}`
      const statusKey = [String(sent.status), `${String(sent.status)[0]}XX`, 'default'].find(
        (key) => operation.responses?.[key],
      )
      if (!statusKey) return `${name}: status ${sent.status} is not declared for ${sent.method} ${path}`
      const response: Json = operation.responses[statusKey]

      const declared = new Map(
        Object.entries<Json>(response.headers ?? {}).map(([key, value]) => [key.toLowerCase(), value]),
      )
      for (const header of WATCHED_HEADERS)
        if (sent.headers[header] !== undefined && !declared.has(header))
          return `${name}: header ${header} is sent but not declared`
      for (const [header, value] of declared) {
        const resolved = value.$ref
          ? doc.components?.headers?.[String(value.$ref).replace('#/components/headers/', '')]
          : value
        if (resolved?.required && sent.headers[header] === undefined)
          return `${name}: required header ${header} is missing`
      }

      const mediaType = String(sent.headers['content-type'] ?? '')
        .split(';')[0]
        ?.trim()
      if (mediaType === 'text/csv') {
        // A CSV export: the operation must declare it; its rows are checked by the export suites.
        return response.content?.['text/csv']
          ? null
          : `${name}: answered text/csv, which is not declared for ${sent.method} ${path}`
      }
      const schema = response.content?.['application/json']?.schema
      if (!schema) return null
      const ref = `openapi.json#/${pointer('paths', path, method, 'responses', statusKey, 'content', 'application/json', 'schema')}`
      let validate = validators.get(ref)
      if (!validate) {
        validate = ajv.compile({ $ref: ref })
        validators.set(ref, validate)
      }
      let body: unknown
      try {
        body = JSON.parse(sent.body)
      } catch {
        return `${name}: the body is not JSON: ${sent.body.slice(0, 200)}`
      }
      if (!validate(body))
        return `${name}: the body does not match the declared schema: ${ajv.errorsText(validate.errors)}; body ${sent.body.slice(0, 500)}`
      return null
    },
  }
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static, TSchema, TUnsafe } from 'typebox'
import { type AuthContext, authOf } from './auth.ts'
import { type CsvColumn, jsonOrCsv, sendCsv, wantsCsv } from './csv.ts'
import { errorResponses } from './errors.ts'
import { Ref, UuidParams } from './schemas.ts'

/** The Fastify instance a module's routes plugin gets: TypeBox types each request from its route's schema. */
export type RoutesApp = Parameters<FastifyPluginAsyncTypebox>[0]

/** Who may call an operation that moves no money: an API key, or a signed request. */
export const KEY_OR_SIGNATURE: Record<string, string[]>[] = [{ ApiKey: [] }, { Signature: [] }]

/**
 * The options of a route that moves no money: an API key may call it, or a signed request, and its entry in
 * the document (`schema`) says so.
 */
export const keyOperation = <S extends object>(schema: S) => ({
  config: { auth: 'key' as const },
  schema: { ...schema, security: KEY_OR_SIGNATURE },
})

/**
 * An operation's responses: `status` with `schema` (a shared one, by reference), described, and the shared error
 * responses of `errors` (and 500). The handler's answer is checked against `schema`.
 */
export const answers = <C extends number, T extends TSchema>(
  status: C,
  schema: T,
  description: string,
  ...errors: number[]
) =>
  // Typed as the success alone, as the literal `{ 200: Ref(…), ...errorResponses(…) }` is.
  ({ [status]: Ref(schema, { description }), ...errorResponses(...errors) }) as {
    [K in C]: TUnsafe<Static<T>>
  }

/** An operation's own words in the document. */
export interface OperationDoc {
  operationId: string
  summary: string
  description?: string
  tags: string[]
}

/**
 * GET `path` (ending in `/:uuid`): one of the caller's resources, `answer` or the shared 401 and 404. `get` is
 * the service's: a malformed uuid names nothing, so it answers 404 rather than a validation error.
 */
export function getByUuid<S extends TSchema>(
  app: RoutesApp,
  path: string,
  operation: OperationDoc & {
    answer: S
    answered: string
    get: (auth: AuthContext, uuid: string) => Promise<Static<S>>
  },
): void {
  const { answer, answered, get, ...doc } = operation
  // `get` is typed by the schema; the route's own reply type would be the generic one's, which no value has.
  const ok: TSchema = Ref(answer, { description: answered })
  app.get(
    path,
    keyOperation({ ...doc, params: UuidParams, response: { 200: ok, ...errorResponses(401, 404) } }),
    (request) => get(authOf(request), request.params.uuid),
  )
}

/**
 * GET `path`: a list, newest first, that also exports. JSON answers one page (`list`); with `Accept: text/csv`
 * every row the same filters match is streamed, no pagination, as `<csv.name>.csv` in `csv.columns` (`export`,
 * see csv.ts). The document names the columns in their order.
 */
export function listWithCsv<Q extends TSchema, V>(
  app: RoutesApp,
  path: string,
  operation: OperationDoc & {
    querystring: Q
    page: TSchema
    paged: string
    csv: { name: string; columns: CsvColumn<V>[] }
    list: (auth: AuthContext, query: Static<Q>) => Promise<unknown>
    export: (auth: AuthContext, query: Static<Q>) => AsyncIterable<V[]>
  },
): void {
  const { page, paged, csv, list, export: rows, ...doc } = operation
  const headers = csv.columns.map((column) => column.header)
  app.get(
    path,
    keyOperation({ ...doc, response: { 200: jsonOrCsv(page, paged, headers), ...errorResponses(401, 422) } }),
    (request, reply) => {
      const query = request.query as Static<Q>
      return wantsCsv(request)
        ? sendCsv(reply, csv.name, csv.columns, rows(authOf(request), query))
        : list(authOf(request), query)
    },
  )
}

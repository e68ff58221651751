import type { Static, TSchema } from 'typebox'
import { Type } from 'typebox'
import type { Scope } from '../db/scope.ts'
import { type AuthContext, authOf } from './auth.ts'
import { AppError, errorResponse, errorResponses } from './errors.ts'
import type { OperationDoc, RoutesApp } from './routes.ts'
import { Ref } from './schemas.ts'

/** The request's Idempotency-Key and the lease owner's id, for the service to keep with the object it makes. */
export interface KeyClaim {
  idempotencyKey: string
  actionRequestId: string
}

/** What such a create answers: the object, and whether an earlier request with the key made it. */
export interface KeptKeyCreated<O> {
  made: O
  replayed: boolean
}

/**
 * POST `path`: a create that moves money (refunds, payouts). It is signed and takes a mandatory
 * Idempotency-Key, which the service keeps with the object it makes, in the same transaction, so a retry
 * whose first request died after that commit is answered from the object (`committedAnswer`, through
 * `find`). It answers 201 with the object and its Location (`path/<uuid>`), `Idempotent-Replayed: true` when
 * the key had made it before, or the 503 of an object made whose answer could not be stored. `noun` names
 * the object in the document.
 */
export function keptKeyCreate<B extends TSchema, O extends { uuid: string }>(
  app: RoutesApp,
  path: string,
  operation: OperationDoc & {
    noun: string
    body: B
    errors: number[]
    answer: TSchema
    answered: string
    find: (scope: Scope, key: string) => Promise<O | null>
    create: (auth: AuthContext, body: Static<B>, claim: KeyClaim) => Promise<KeptKeyCreated<O>>
  },
): void {
  const { noun, body, errors, answer, answered, find, create, ...doc } = operation
  const locationOf = (uuid: string) => `${path}/${uuid}`
  app.post(
    path,
    {
      config: {
        auth: 'signature',
        idempotency: 'required',
        committedAnswer: async (scope, key) => {
          const made = await find(scope, key)
          return made && { status: 201, headers: { location: locationOf(made.uuid) }, body: made }
        },
      },
      schema: {
        ...doc,
        security: [{ Signature: [] }],
        // Declared optional so that a missing key gets its own 400 idempotency_key_required, not a 422.
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({ description: 'Required: 1-255 printable ASCII characters.' }),
          ),
        }),
        body,
        response: {
          ...errorResponses(...errors),
          201: Ref(answer, {
            description: answered,
            headers: { location: { type: 'string', description: `The ${noun}: ${path}/{uuid}.` } },
          }),
          // The database went away after the commit: Location names what was made.
          503: errorResponse(503, {
            location: {
              type: 'string',
              description: `When present, the ${noun} was made: ${path}/{uuid}. Retry with the same Idempotency-Key.`,
            },
          }),
        },
      },
    },
    async (request, reply) => {
      const claim = request.idempotency
      if (!claim)
        throw new AppError('idempotency_key_required', 'This operation needs an Idempotency-Key header.')
      const { made, replayed } = await create(authOf(request), request.body as Static<B>, {
        idempotencyKey: claim.key,
        actionRequestId: claim.owner,
      })
      if (replayed) reply.header('idempotent-replayed', 'true')
      return reply.code(201).header('location', locationOf(made.uuid)).send(made)
    },
  )
}

import type { FastifyReply, FastifyRequest } from 'fastify'
import { type TSchema, Type } from 'typebox'
import type { Scope } from '../db/scope.ts'
import { AppError, errorResponse } from './errors.ts'
import { Ref } from './schemas.ts'

/**
 * What the create routes that move money share (refunds, payouts): each keeps its Idempotency-Key with the
 * object it makes, in the same transaction, so a retry whose first request died after that commit is answered
 * from the object (`committedAnswer`). `noun` names the object in the document, `path` is where it is read.
 */
export function keptKeyCreate<O extends { uuid: string }>(
  noun: string,
  path: string,
  find: (scope: Scope, key: string) => Promise<O | null>,
) {
  const locationOf = (uuid: string) => `${path}/${uuid}`
  return {
    config: {
      auth: 'signature' as const,
      idempotency: 'required' as const,
      committedAnswer: async (scope: Scope, key: string) => {
        const made = await find(scope, key)
        return made && { status: 201, headers: { location: locationOf(made.uuid) }, body: made }
      },
    },
    // Declared optional so that a missing key gets its own 400 idempotency_key_required, not a 422.
    headers: Type.Object({
      'idempotency-key': Type.Optional(
        Type.String({ description: 'Required: 1-255 printable ASCII characters.' }),
      ),
    }),
    /** The 201 with the object, and the 503 of an object made whose answer could not be stored. */
    responses: <S extends TSchema>(schema: S, description: string) => ({
      201: Ref(schema, {
        description,
        headers: { location: { type: 'string', description: `The ${noun}: ${path}/{uuid}.` } },
      }),
      // The database went away after the commit: Location names what was made.
      503: errorResponse(503, {
        location: {
          type: 'string',
          description: `When present, the ${noun} was made: ${path}/{uuid}. Retry with the same Idempotency-Key.`,
        },
      }),
    }),
    /** The request's key and the lease owner's id, for the service to keep with the object. */
    claim(request: FastifyRequest) {
      const claim = request.idempotency
      if (!claim)
        throw new AppError('idempotency_key_required', 'This operation needs an Idempotency-Key header.')
      return { idempotencyKey: claim.key, actionRequestId: claim.owner }
    },
    /** 201 with the object and its Location, marked as a replay when the key had made it before. */
    send(reply: FastifyReply, made: O, replayed: boolean) {
      if (replayed) reply.header('idempotent-replayed', 'true')
      return reply.code(201).header('location', locationOf(made.uuid)).send(made)
    },
  }
}

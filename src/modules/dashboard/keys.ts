import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ModeSchema } from '../../db/enums.ts'
import { AppError } from '../../http/errors.ts'
import { Nullable } from '../../http/schemas.ts'
import { registerValidators } from '../../http/validation.ts'
import { iso } from '../../lib/time.ts'
import type { MerchantService } from '../merchants/service.ts'
import { requirePermission, selfOf, sessionGuards } from '../users/routes.ts'
import type { UserService } from '../users/service.ts'

const PREFIX = '/dashboard/api/keys'
const hide = { hide: true }

const ApiKeyView = Type.Object({
  key_id: Type.String(),
  mode: ModeSchema,
  created_at: Type.String(),
  revoked_at: Nullable(Type.String()),
  last_used_at: Nullable(Type.String()),
  secret_last4: Type.String(),
})
const ApiKeyList = Type.Object({ data: Type.Array(ApiKeyView) })
const CreateKeyRequest = Type.Object(
  { mode: Type.String({ enum: ['test', 'live'], description: 'The mode the key works in.' }) },
  { additionalProperties: false },
)
const CreatedKey = Type.Object({
  key_id: Type.String(),
  mode: ModeSchema,
  secret: Type.String(),
  created_at: Type.String(),
})
const KeyParams = Type.Object({ key_id: Type.String({ minLength: 1, maxLength: 100 }) })

export interface DashboardKeyOptions {
  users: Pick<UserService, 'authenticate' | 'audit'>
  merchants: Pick<MerchantService, 'listKeys' | 'createKey' | 'revokeMerchantKey'>
  publicBaseUrl: string
}

/**
 * Developers → API keys (`developer_tools`: owner, admin, developer): the merchant's keys of both modes, a new
 * key (its secret answered once and never again), and revoking one. Never a secret of an existing key, its hash
 * or its seal. Making and revoking are written to the audit log in the same transaction.
 */
export const dashboardKeyRoutes: FastifyPluginAsyncTypebox<DashboardKeyOptions> = async (app, options) => {
  const { users, merchants } = options
  // The app's strict validators in this plugin's context (see users/routes.ts).
  registerValidators(app)
  const { requireSession, requireChange } = sessionGuards(options.users, options.publicBaseUrl)
  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store')
  })

  app.get(PREFIX, { schema: { ...hide, response: { 200: ApiKeyList } } }, async (request) => {
    const session = await requireSession(request)
    requirePermission(session, 'developer_tools')
    const keys = await merchants.listKeys(session.user.merchant_uuid)
    return {
      data: keys.map((key) => ({
        key_id: key.key_id,
        mode: key.mode,
        created_at: iso(key.created_at),
        revoked_at: key.revoked_at ? iso(key.revoked_at) : null,
        last_used_at: key.last_used_at ? iso(key.last_used_at) : null,
        secret_last4: key.secret_last4,
      })),
    }
  })

  app.post(
    PREFIX,
    { schema: { ...hide, body: CreateKeyRequest, response: { 201: CreatedKey } } },
    async (request, reply) => {
      const session = await requireChange(request)
      requirePermission(session, 'developer_tools')
      const mode = request.body.mode as 'test' | 'live'
      const key = await merchants.createKey(session.user.merchant_uuid, mode, (trx, made) =>
        users.audit(
          selfOf(session, request),
          {
            action: 'api_key_created',
            target: { type: 'api_key', id: made.key_id },
            mode: made.mode,
            at: made.created_at,
          },
          trx,
        ),
      )
      if (!key) throw new AppError('unauthorized', 'Sign in to the dashboard: there is no live session.')
      return reply.code(201).send({
        key_id: key.key_id,
        mode: key.mode,
        secret: key.secret,
        created_at: iso(key.created_at),
      })
    },
  )

  app.delete(`${PREFIX}/:key_id`, { schema: { ...hide, params: KeyParams } }, async (request, reply) => {
    const session = await requireChange(request)
    requirePermission(session, 'developer_tools')
    const revoked = await merchants.revokeMerchantKey(
      session.user.merchant_uuid,
      request.params.key_id,
      (trx, key) =>
        users.audit(
          selfOf(session, request),
          {
            action: 'api_key_revoked',
            target: { type: 'api_key', id: key.key_id },
            mode: key.mode,
            at: key.revoked_at,
          },
          trx,
        ),
    )
    if (revoked === 'not_found') throw new AppError('not_found', 'No such API key.')
    if (revoked === 'already_revoked') throw new AppError('invalid_state', 'This API key is revoked already.')
    return reply.code(200).send({
      key_id: revoked.key_id,
      mode: revoked.mode,
      revoked_at: iso(revoked.revoked_at),
    })
  })
}

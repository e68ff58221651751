import { Type } from 'typebox'
import { UserRoleSchema } from '../../db/enums.ts'
import { LiteralUnion } from '../../lib/schema.ts'
import { PERMISSIONS } from './roles.ts'

/** The dashboard's own API (/dashboard/api): not part of the merchant's OpenAPI document. */

export const LoginRequest = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    // Bounded so that a request cannot make scrypt hash megabytes.
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
)

/** The least length of a new password (NIST SP 800-63B asks for at least 8; a dashboard that moves money, 12). */
export const MIN_PASSWORD_LENGTH = 12

export const AcceptInvitationRequest = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 200 }),
    password: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: 1024 }),
  },
  { additionalProperties: false },
)

export const SessionResponse = Type.Object({
  user: Type.Object({
    uuid: Type.String(),
    merchant_uuid: Type.String(),
    email: Type.String(),
    role: UserRoleSchema,
    permissions: Type.Array(LiteralUnion(PERMISSIONS)),
  }),
  csrf_token: Type.String(),
  idle_expires_at: Type.String(),
  expires_at: Type.String(),
})

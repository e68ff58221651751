import { type Static, Type } from 'typebox'
import { UserRoleSchema, UserStatusSchema } from '../../db/enums.ts'
import { LiteralUnion } from '../../lib/schema.ts'
import { PERMISSIONS } from './roles.ts'

/** The dashboard's own API (/dashboard/api): not part of the merchant's OpenAPI document. */

export const LoginRequest = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    // Bounded so that a request cannot make scrypt hash megabytes.
    password: Type.String({ minLength: 1, maxLength: 1024 }),
    /** The current code of the user's authenticator app, when they have a second factor. */
    totp_code: Type.Optional(Type.String({ maxLength: 16 })),
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
    totp_enabled: Type.Boolean(),
  }),
  csrf_token: Type.String(),
  idle_expires_at: Type.String(),
  expires_at: Type.String(),
  /** True: the merchant requires a second factor and this user must enrol before anything else. */
  totp_enrolment_required: Type.Boolean(),
})

/** A person of the merchant as the people page shows them: never a hash or a secret. */
export const MemberView = Type.Object({
  uuid: Type.String(),
  email: Type.String(),
  role: UserRoleSchema,
  status: UserStatusSchema,
  /** False while the invitation is open (no password set yet). */
  password_set: Type.Boolean(),
  totp_enabled: Type.Boolean(),
  created_at: Type.String(),
})

export type MemberView = Static<typeof MemberView>

export const MemberList = Type.Object({ data: Type.Array(MemberView) })

export const MemberParams = Type.Object({ uuid: Type.String({ maxLength: 64 }) })

export const InviteRequest = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }), role: UserRoleSchema },
  { additionalProperties: false },
)

export const InviteResponse = Type.Object({
  user: MemberView,
  /** The one-time set-password link: shown once, the only copy of its token. */
  invite_url: Type.String(),
  expires_at: Type.String(),
})

export const RoleChangeRequest = Type.Object({ role: UserRoleSchema }, { additionalProperties: false })

export const DisableResponse = Type.Object({ user: MemberView, sessions_revoked: Type.Integer() })

export const AuditQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    per_page: Type.Integer({ minimum: 1, maximum: 100, default: 25 }),
  },
  { additionalProperties: false },
)

export const AuditEntryView = Type.Object({
  uuid: Type.String(),
  at: Type.String(),
  action: Type.String(),
  via: Type.String(),
  actor_user_uuid: Type.Union([Type.String(), Type.Null()]),
  actor_email: Type.Union([Type.String(), Type.Null()]),
  target_type: Type.Union([Type.String(), Type.Null()]),
  target_id: Type.Union([Type.String(), Type.Null()]),
  mode: Type.Union([Type.String(), Type.Null()]),
  ip: Type.Union([Type.String(), Type.Null()]),
  user_agent: Type.Union([Type.String(), Type.Null()]),
  details: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
})

export const AuditPage = Type.Object({
  data: Type.Array(AuditEntryView),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
})

export const TotpEnrolment = Type.Object({
  /** The base32 secret, for typing into an app by hand. */
  secret: Type.String(),
  /** `otpauth://totp/…`, for a QR code. */
  otpauth_uri: Type.String(),
})

export const TotpCodeRequest = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 16 }) },
  { additionalProperties: false },
)

export const TotpState = Type.Object({ totp_enabled: Type.Boolean() })

export const SecuritySettings = Type.Object({ require_totp: Type.Boolean() }, { additionalProperties: false })

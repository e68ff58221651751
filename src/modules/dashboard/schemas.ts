import { type Static, Type } from 'typebox'
import { ModeSchema, UserRoleSchema, UserStatusSchema } from '../../db/enums.ts'
import { DateRangeQuery, OneOrSeveral } from '../../http/pagination.ts'
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts'
import { LiteralUnion } from '../../lib/schema.ts'
import { API_KEY_NAME_MAX_LENGTH, API_KEY_NAME_PATTERN } from '../merchants/service.ts'
import { PaymentMethod } from '../transactions/schemas.ts'
import { AUDIT_ACTIONS } from '../users/audit.ts'
import { PERMISSIONS } from '../users/roles.ts'

/**
 * The dashboard's own API (/dashboard/api/…): its own OpenAPI document (`npm run generate:client` makes the
 * dashboard's types from it), not part of the merchant's. A schema with an `$id` is a named component there.
 */

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

export const SessionResponse = Type.Object(
  {
    user: Type.Object({
      uuid: Uuid(),
      merchant_uuid: Uuid(),
      email: Type.String(),
      role: UserRoleSchema,
      /** What the user's role may do (modules/users/roles.ts): the pages show only what they may use. */
      permissions: Type.Array(LiteralUnion(PERMISSIONS)),
      totp_enabled: Type.Boolean(),
    }),
    /** Sent back in `X-CSRF-Token` with every change made while signed in. */
    csrf_token: Type.String(),
    idle_expires_at: Timestamp(),
    expires_at: Timestamp(),
    /** True: the merchant requires a second factor and this user must enrol before anything else. */
    totp_enrolment_required: Type.Boolean(),
  },
  { $id: 'Session', description: 'The signed-in user and their session.' },
)

/** A person of the merchant as the people page shows them: never a hash or a secret. */
export const MemberView = Type.Object(
  {
    uuid: Uuid(),
    email: Type.String(),
    role: UserRoleSchema,
    status: UserStatusSchema,
    /** False while the invitation is open (no password set yet). */
    password_set: Type.Boolean(),
    totp_enabled: Type.Boolean(),
    created_at: Timestamp(),
  },
  { $id: 'Member', description: 'A person of the merchant.' },
)

export type MemberView = Static<typeof MemberView>

export const MemberList = Type.Object({ data: Type.Array(Type.Ref('Member')) }, { $id: 'MemberList' })

export const MemberParams = Type.Object({ uuid: Type.String({ maxLength: 64 }) })

export const InviteRequest = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }), role: UserRoleSchema },
  { additionalProperties: false },
)

export const InviteResponse = Type.Object(
  {
    user: Type.Ref('Member'),
    /** The one-time set-password link: shown once, the only copy of its token. */
    invite_url: Type.String(),
    expires_at: Timestamp(),
  },
  { $id: 'Invitation', description: 'The person invited, and the link that lets them set a password.' },
)

export const RoleChangeRequest = Type.Object({ role: UserRoleSchema }, { additionalProperties: false })

export const DisableResponse = Type.Object(
  { user: Type.Ref('Member'), sessions_revoked: Type.Integer() },
  { $id: 'DisabledMember' },
)

export const AuditQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    per_page: Type.Integer({ minimum: 1, maximum: 100, default: 25 }),
    actor_user_uuid: Type.Optional(
      Uuid('Only what this person did (their uuid, as the people page lists it).'),
    ),
    action: OneOrSeveral(AUDIT_ACTIONS, {
      description: `One action, or several comma-separated: ${AUDIT_ACTIONS.join(', ')}.`,
      examples: ['api_key_created,api_key_revoked'],
    }),
    from: DateRangeQuery.date_from,
    to: DateRangeQuery.date_to,
  },
  { additionalProperties: false },
)

export type AuditQuery = Static<typeof AuditQuery>

/** What an audit row's target is, for the page to name it and link it. */
export const AUDIT_TARGET_KINDS = [
  'payment',
  'refund',
  'payout',
  'user',
  'api_key',
  'webhook',
  'session',
  'email',
  'merchant',
] as const

export const AuditEntryView = Type.Object(
  {
    uuid: Type.String(),
    at: Type.String(),
    action: Type.String(),
    via: Type.String(),
    actor_user_uuid: Type.Union([Type.String(), Type.Null()]),
    actor_email: Type.Union([Type.String(), Type.Null()]),
    target_type: Type.Union([Type.String(), Type.Null()]),
    target_id: Type.Union([Type.String(), Type.Null()]),
    target_kind: Nullable(LiteralUnion(AUDIT_TARGET_KINDS)),
    /**
     * The dashboard page that shows the target, relative to the root of a mode (`/payments/…`): the row's
     * `mode`, or any mode when it has none. Null when no page shows it.
     */
    target_path: Nullable(Type.String({ examples: ['/payments/01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10'] })),
    mode: Type.Union([Type.String(), Type.Null()]),
    ip: Type.Union([Type.String(), Type.Null()]),
    user_agent: Type.Union([Type.String(), Type.Null()]),
    details: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  },
  { $id: 'AuditEntry', description: 'One row of the audit log: who did what, on what, when, from where.' },
)

export type AuditEntryView = Static<typeof AuditEntryView>

export const AuditPage = Type.Object(
  {
    data: Type.Array(Type.Ref('AuditEntry')),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: 'AuditPage' },
)

export const TotpEnrolment = Type.Object(
  {
    /** The base32 secret, for typing into an app by hand. */
    secret: Type.String(),
    /** `otpauth://totp/…`, for a QR code. */
    otpauth_uri: Type.String(),
  },
  { $id: 'TotpEnrolment' },
)

export const TotpCodeRequest = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 16 }) },
  { additionalProperties: false },
)

export const TotpState = Type.Object({ totp_enabled: Type.Boolean() }, { $id: 'TotpState' })

export const SecuritySettings = Type.Object(
  { require_totp: Type.Boolean() },
  { $id: 'SecuritySettings', additionalProperties: false },
)

// API keys (Developers → API keys).

/** A key's name as given: some text, surrounding spaces dropped, no control characters. */
const KeyName = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: API_KEY_NAME_MAX_LENGTH,
    pattern: API_KEY_NAME_PATTERN,
    description,
    examples: ['Checkout server'],
  })

export const ApiKeyView = Type.Object(
  {
    key_id: Type.String(),
    /** What the merchant calls the key; null when it was made without a name. */
    name: Nullable(Type.String()),
    mode: ModeSchema,
    created_at: Timestamp(),
    revoked_at: Nullable(Timestamp()),
    last_used_at: Nullable(Timestamp()),
    secret_last4: Type.String(),
  },
  { $id: 'ApiKey', description: 'An API key of the merchant: never its secret.' },
)

export type ApiKeyView = Static<typeof ApiKeyView>

export const ApiKeyList = Type.Object({ data: Type.Array(Type.Ref('ApiKey')) }, { $id: 'ApiKeyList' })

export const CreateKeyRequest = Type.Object(
  {
    mode: Type.String({ enum: ['test', 'live'], description: 'The mode the key works in.' }),
    name: Type.Optional(KeyName('What the key is for, shown in the list (surrounding spaces are dropped).')),
  },
  { additionalProperties: false },
)

export const RenameKeyRequest = Type.Object(
  { name: Nullable(KeyName('The new name; null takes the name away.')) },
  { additionalProperties: false },
)

export const CreatedKey = Type.Object(
  {
    key_id: Type.String(),
    name: Nullable(Type.String()),
    mode: ModeSchema,
    /** The key's secret: in this answer only, never again. */
    secret: Type.String(),
    created_at: Timestamp(),
  },
  { $id: 'CreatedApiKey' },
)

export const RevokedKey = Type.Object(
  { key_id: Type.String(), mode: ModeSchema, revoked_at: Timestamp() },
  { $id: 'RevokedApiKey' },
)

export const KeyParams = Type.Object({ key_id: Type.String({ minLength: 1, maxLength: 100 }) })

// The merchant's own views: the home page's figures, the profile, a delivery's attempts.

export const StatsQuery = Type.Object(
  { days: Type.Union([Type.Literal(7), Type.Literal(30)], { default: 7 }) },
  { additionalProperties: false },
)

export const DailyPayments = Type.Object(
  {
    /** The UTC day, YYYY-MM-DD. */
    day: Type.String(),
    currency: Type.String(),
    created: Type.Integer(),
    succeeded: Type.Integer(),
    /** Failed or expired. */
    failed: Type.Integer(),
    /** The sum of the succeeded payments' amounts, in minor units. */
    volume: Type.Integer(),
  },
  { $id: 'DailyPayments', description: "One day's payments in one currency." },
)

export const PaymentStats = Type.Object(
  { data: Type.Array(Type.Ref('DailyPayments')) },
  { $id: 'PaymentStats', description: 'Payments per UTC day and currency, oldest day first.' },
)

export const MerchantProfile = Type.Object(
  {
    uuid: Uuid(),
    name: Type.String(),
    settlement_currency: Type.String(),
    settlement_hold_seconds: Type.Integer(),
    transaction_ttl_seconds: Type.Integer(),
    fx_markup_bps: Type.Integer(),
    payout_fee_bps: Type.Integer(),
    payout_fixed_fee_micro: Type.Integer(),
    fees: Type.Array(
      Type.Object({
        payment_method: PaymentMethod(),
        fee_bps: Type.Integer(),
        merchant_fee_share_bps: Type.Integer(),
      }),
    ),
  },
  { $id: 'MerchantProfile', description: "The merchant's settings as the operator set them." },
)

// Search: one box that finds a payment, a refund, a payout or an event by any of its keys.

/** The most results a search answers. */
export const SEARCH_LIMIT = 20

export const SearchQuery = Type.Object(
  {
    q: Type.String({
      minLength: 1,
      maxLength: 200,
      pattern: '\\S',
      description:
        'An id (ours, the external one, a provider’s reference), an amount (`1500.00`, read in each object’s currency), an e-mail, or the last four digits of a card; surrounding spaces are ignored.',
      examples: ['order-1042'],
    }),
    limit: Type.Integer({ minimum: 1, maximum: SEARCH_LIMIT, default: SEARCH_LIMIT }),
  },
  { additionalProperties: false },
)

export const SEARCH_KINDS = ['payment', 'refund', 'payout', 'event'] as const
export const SEARCH_MATCHES = [
  'id',
  'external_id',
  'provider_reference',
  'amount',
  'email',
  'card_last4',
] as const

export const SearchResult = Type.Object(
  {
    kind: LiteralUnion(SEARCH_KINDS),
    /** The object's uuid (an event's id). */
    id: Uuid(),
    /** Which of the object's keys the search matched. */
    matched: LiteralUnion(SEARCH_MATCHES),
    /** What a person calls it: a payment's or payout's external id, a refund's payment's, an event's name. */
    reference: Type.String(),
    /** In minor units of `currency`; null for an event. */
    amount: Nullable(Type.Integer()),
    currency: Nullable(Type.String()),
    /** Null for an event. */
    status: Nullable(Type.String()),
    created_at: Timestamp(),
    /** The dashboard page that shows it, relative to the root of the mode searched (`/payments/…`). */
    path: Type.String({ examples: ['/payments/01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10'] }),
  },
  { $id: 'SearchResult', description: 'A payment, refund, payout or event a search found.' },
)

export type SearchResult = Static<typeof SearchResult>

export const SearchResults = Type.Object(
  {
    data: Type.Array(Type.Ref('SearchResult')),
    /** True when more objects matched than the answer holds. */
    truncated: Type.Boolean(),
  },
  { $id: 'DashboardSearchResults', description: 'What a search found: ids first, then newest first.' },
)

export const WebhookSecret = Type.Object(
  {
    /** The signing secret of the mode's webhook, whsec_…: shown on request, and the showing audited. */
    secret: Type.String(),
    previous_secret_expires_at: Nullable(
      Timestamp('Until then deliveries also carry a signature with the previous secret.'),
    ),
    revealed_at: Timestamp(),
  },
  { $id: 'WebhookSecret', description: "The webhook's current signing secret." },
)

export const DeliveryAttempts = Type.Object(
  {
    delivery: Type.Ref('WebhookDelivery'),
    /** The request every attempt sent, its signature described rather than shown. */
    request: Type.Object({
      method: Type.String(),
      url: Type.String(),
      headers: Type.Record(Type.String(), Type.String()),
      /** Null once the event's body is no longer kept. */
      body: Nullable(Type.String()),
    }),
    attempts: Type.Array(
      Type.Object({
        attempt: Type.Integer(),
        started_at: Timestamp(),
        /** The `webhook-timestamp` this attempt signed, unix seconds. */
        webhook_timestamp: Type.String(),
        duration_ms: Type.Integer(),
        response_status: Nullable(Type.Integer()),
        response_body: Nullable(Type.String()),
        error: Nullable(Type.String()),
      }),
    ),
  },
  { $id: 'DeliveryAttempts', description: "A delivery's request and every attempt's answer." },
)

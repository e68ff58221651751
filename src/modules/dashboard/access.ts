import type { FastifyInstance } from 'fastify'
import { isMode } from '../../db/enums.ts'
import { type AuthContext, DASHBOARD_MODE_HEADER, type SessionAccess } from '../../http/auth.ts'
import { AppError } from '../../http/errors.ts'
import type { MerchantService } from '../merchants/service.ts'
import type { DashboardAction } from '../users/audit.ts'
import type { Permission } from '../users/roles.ts'
import type { UserService } from '../users/service.ts'
import { type DashboardSessions, requirePermission, selfOf } from './guard.ts'

/**
 * The merchant API's operations the dashboard may call, and the permission (src/modules/users/roles.ts) each
 * needs. An operation not named here answers 403 to a dashboard session: fail closed, so an operation added to
 * the API later is not reachable from a browser until someone decides who may call it.
 */
export const DASHBOARD_OPERATIONS: Readonly<Record<string, Permission>> = {
  listTransactions: 'read',
  getTransaction: 'read',
  getTransactionByExternalId: 'read',
  listRefunds: 'read',
  getRefund: 'read',
  createRefund: 'refund',
  listBalances: 'read',
  getBalanceSummary: 'read',
  listBalanceTransactions: 'read',
  getBalanceTransaction: 'read',
  listRates: 'read',
  listEvents: 'read',
  getEvent: 'read',
  listPayouts: 'read',
  getPayout: 'read',
  quotePayout: 'payout',
  createPayout: 'payout',
  listWebhookDeliveries: 'read',
  getWebhookDelivery: 'read',
  // The webhook configuration carries its signing secret: reading it is a developer tool too.
  getWebhookConfig: 'developer_tools',
  updateWebhookConfig: 'developer_tools',
  rotateWebhookSecret: 'developer_tools',
  sendTestWebhook: 'developer_tools',
  redeliverWebhook: 'developer_tools',
  // The sandbox's simulated provider callbacks: test mode only (TEST_MODE_OPERATIONS).
  simulateTransactionPaid: 'developer_tools',
  simulateTransactionFailed: 'developer_tools',
  simulateTransactionExpired: 'developer_tools',
  simulateTransactionFailedThenPaid: 'developer_tools',
  simulatePayoutCompleted: 'developer_tools',
  simulatePayoutFailed: 'developer_tools',
  // The dashboard's own views (routes.ts, dashboardViews).
  dashboardStats: 'read',
  dashboardMerchantProfile: 'read',
  dashboardDeliveryAttempts: 'developer_tools',
  dashboardSearch: 'read',
  // Shows the webhook signing secret, which the configuration's answers to a page leave masked.
  revealWebhookSecret: 'developer_tools',
}

/**
 * The operations a dashboard session may call in test mode only: the sandbox's simulations. (The API lets a
 * live key simulate outside production; a page in live mode never does, whatever the deployment.)
 */
export const TEST_MODE_OPERATIONS: ReadonlySet<string> = new Set(
  Object.keys(DASHBOARD_OPERATIONS).filter((operation) => operation.startsWith('simulate')),
)

/**
 * The operations that, when the merchant requires a second factor, also need a current code of the user's
 * authenticator app in `X-Dashboard-Totp` (a step-up: a stolen session alone cannot move money out). The code is
 * used up like a sign-in code.
 */
export const STEP_UP_OPERATIONS: ReadonlySet<string> = new Set(['createPayout'])

/**
 * The operations that need that code from every user who has a second factor, whether or not the merchant
 * requires one: what they show would let its holder forge the merchant's webhooks.
 */
export const STEP_UP_WITH_SECOND_FACTOR: ReadonlySet<string> = new Set(['revealWebhookSecret'])

/** Whether `operation` needs a step-up code from this user of this merchant. */
const needsStepUp = (operation: string, userHasTotp: boolean, merchantRequiresTotp: boolean) =>
  (STEP_UP_OPERATIONS.has(operation) && merchantRequiresTotp) ||
  (STEP_UP_WITH_SECOND_FACTOR.has(operation) && (merchantRequiresTotp || userHasTotp))

/**
 * The merchant API's answers that carry the webhook signing secret: a page's call gets it masked (MASKED_SECRET);
 * the secret itself only through revealWebhookSecret, with its step-up and its audit row. A rotation's answer
 * keeps the new secret: it is shown once, as a new API key's is.
 */
const MASKED_SECRET_OPERATIONS: ReadonlySet<string> = new Set(['getWebhookConfig', 'updateWebhookConfig'])

/** A secret as a page shows it unrevealed: its kind and its last four characters. */
export const maskSecret = (secret: string) =>
  `${secret.slice(0, secret.indexOf('_') + 1)}••••${secret.slice(-4)}`

/** The header a page sends the step-up code in. */
export const STEP_UP_HEADER = 'x-dashboard-totp'

declare module 'fastify' {
  interface FastifyRequest {
    /** The operation was confirmed with a second-factor code (STEP_UP_OPERATIONS), for the audit log. */
    dashboardStepUp?: boolean
    /** The operation wrote its own audit row (with its own action): the generic one is not written. */
    dashboardAudited?: boolean
  }
}

/** The change methods: the ones the audit log records. */
const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * A dashboard page calling the merchant API (`/integration/…`) with its session cookie, `X-Dashboard-Mode`,
 * and for a change the page's Origin and the `X-CSRF-Token` of the session. The caller is the signed-in user: their
 * merchant, the mode the page names, and only the operations their role may do.
 *
 * A page of another site cannot make such a call: `X-Dashboard-Mode` is not a header a form or a link can
 * send, and a script of another origin that tries gets no CORS permission, so its browser never sends it.
 */
export function dashboardAccess(deps: {
  users: Pick<UserService, 'verifyStepUp'>
  merchants: Pick<MerchantService, 'getMerchant'>
  sessions: Pick<DashboardSessions, 'requireSession'>
}): SessionAccess {
  return {
    async authenticate(request, operationId): Promise<AuthContext> {
      const mode = request.headers[DASHBOARD_MODE_HEADER]
      if (typeof mode !== 'string' || !isMode(mode))
        throw new AppError('unauthorized', 'X-Dashboard-Mode must be test or live.')
      // The session checks every dashboard request passes (guard.ts): a change also needs the dashboard's
      // Origin and the CSRF token of the session.
      const session = await deps.sessions.requireSession(request)
      const permission = operationId ? DASHBOARD_OPERATIONS[operationId] : undefined
      if (!operationId || !permission)
        throw new AppError('forbidden', 'This operation is not available in the dashboard.')
      requirePermission(session, permission)
      if (mode !== 'test' && TEST_MODE_OPERATIONS.has(operationId))
        throw new AppError(
          'forbidden',
          'The sandbox works in test mode only: switch the dashboard to test.',
          {
            mode_required: 'test',
          },
        )
      const merchant = await deps.merchants.getMerchant(session.user.merchant_uuid)
      if (!merchant) throw new AppError('unauthorized', 'Sign in to the dashboard: there is no live session.')
      // Last, once everything else holds: a code is used up by this check, so it is not spent on a refusal.
      if (needsStepUp(operationId, session.user.totp_enabled, merchant.dashboard_require_totp)) {
        const code = request.headers[STEP_UP_HEADER]
        await deps.users.verifyStepUp(
          selfOf(session, request),
          typeof code === 'string' ? code : undefined,
          operationId,
        )
        request.dashboardStepUp = true
      }
      request.dashboardSession = session
      return { keyId: `dashboard:${session.user.uuid}`, mode, merchant }
    },
  }
}

/**
 * The object an answer names (its `uuid`), for the audit log, and the payment it belongs to (a refund's
 * `transaction_uuid`), so that the log can link the page that shows it.
 */
function targetOf(payload: unknown): Pick<DashboardAction, 'target' | 'details'> {
  if (typeof payload !== 'string') return {}
  try {
    const { uuid, transaction_uuid } = JSON.parse(payload) as { uuid?: unknown; transaction_uuid?: unknown }
    return {
      ...(typeof uuid === 'string' && { target: { type: 'object', id: uuid } }),
      ...(typeof transaction_uuid === 'string' && { details: { transaction_uuid } }),
    }
  } catch {
    return {}
  }
}

/** A JSON answer whose `secret` is masked (maskSecret); anything else as it is. */
function maskedSecretOf(payload: unknown): unknown {
  if (typeof payload !== 'string') return payload
  try {
    const answer = JSON.parse(payload) as { secret?: unknown }
    if (typeof answer.secret !== 'string') return payload
    return JSON.stringify({ ...answer, secret: maskSecret(answer.secret) })
  } catch {
    return payload
  }
}

/**
 * What the answers of a page's calls of the merchant API add: `Cache-Control: no-store` (a shared computer's
 * browser keeps no copy), the webhook signing secret masked (MASKED_SECRET_OPERATIONS), and for every change the audit log row, written before the answer leaves: who, which
 * operation, on what, in which mode, from where. A replayed answer (the same Idempotency-Key) changed nothing
 * and is not written again. (The dashboard's own routes, whose session the guard keeps without a caller of the
 * merchant API, write their own rows.)
 */
export function registerDashboardAnswers(app: FastifyInstance, users: Pick<UserService, 'audit'>): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const session = request.dashboardSession
    if (!session || !request.auth) return payload
    reply.header('cache-control', 'no-store')
    const operation = (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId
    if (reply.statusCode >= 300) return payload
    const answer = MASKED_SECRET_OPERATIONS.has(operation ?? '') ? maskedSecretOf(payload) : payload
    if (!CHANGES.has(request.method) || request.dashboardAudited) return answer
    if (reply.getHeader('idempotent-replayed')) return answer
    const { target, details } = targetOf(payload)
    await users.audit(selfOf(session, request), {
      action: 'api_operation',
      target,
      mode: request.auth?.mode ?? null,
      details: {
        operation,
        ...details,
        ...(request.dashboardStepUp && { totp_step_up: true }),
      },
      at: new Date(),
    })
    return answer
  })
}

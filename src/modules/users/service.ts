import type { Config } from '../../config.ts'
import type { UserRole } from '../../db/enums.ts'
import type { Db, Executor } from '../../db/index.ts'
import { deriveKey } from '../../lib/crypto.ts'
import type { MerchantService } from '../merchants/service.ts'
import { type DashboardAction, type DashboardActor, recordDashboardAction } from './audit.ts'
import type { Actor, From, UserDeps } from './deps.ts'
import { acceptInvitation, inviteUser } from './invitations.ts'
import {
  auditLog,
  changeRole,
  disableMember,
  disableUser,
  listUsers,
  type Manager,
  resetPassword,
} from './people.ts'
import { type AuditFilters, auditBatches } from './repository.ts'

export type { AuditFilters, AuditLogRow } from './repository.ts'

import {
  authenticate,
  type DashboardSession,
  login,
  logout,
  logoutEverywhere,
  purgeEndedSessions,
} from './sessions.ts'
import {
  confirmTotp,
  removeTotp,
  type Self,
  securitySettings,
  setRequireTotp,
  startTotpEnrolment,
  verifyStepUp,
} from './totp.ts'

export type UserService = ReturnType<typeof createUserService>

/**
 * The dashboard's people, their sessions and second factor, and the audit log of what they do: every operation
 * of the module, bound to its dependencies. Its HTTP face is modules/dashboard/.
 */
export function createUserService(input: {
  db: Db
  config: Config
  merchants: Pick<MerchantService, 'getMerchant'>
}) {
  const deps: UserDeps = { ...input, csrfKey: deriveKey(input.config.masterKey, 'dashboard-csrf') }
  return {
    invite: (
      invitation: { merchantUuid: string; email: string; role: UserRole },
      actor: Actor,
      byRole?: UserRole,
    ) => inviteUser(deps, invitation, actor, byRole),
    acceptInvitation: (accept: { token: string; password: string }, from: From) =>
      acceptInvitation(deps, accept, from),
    list: (merchantUuid: string) => listUsers(deps, merchantUuid),
    disable: (userUuid: string, actor: Actor) => disableUser(deps, userUuid, actor),
    resetPassword: (user: string, actor: Actor) => resetPassword(deps, user, actor),
    disableMember: (manager: Manager, userUuid: string) => disableMember(deps, manager, userUuid),
    changeRole: (manager: Manager, userUuid: string, role: UserRole) =>
      changeRole(deps, manager, userUuid, role),
    auditLog: (merchantUuid: string, page: { cursor?: string; perPage: number; filters: AuditFilters }) =>
      auditLog(deps, merchantUuid, page),
    /** Every row of the merchant's audit log the filters match, newest first, in batches (an export). */
    auditExport: (merchantUuid: string, filters: AuditFilters) =>
      auditBatches(deps.db, merchantUuid, filters),
    /**
     * Writes what a dashboard user did to the audit log: in `trx`, with the change it records, when the change
     * has one (an API key made or revoked); else on its own.
     */
    audit: (by: DashboardActor, action: DashboardAction, trx: Executor = deps.db) =>
      recordDashboardAction(trx, by, action),
    login: (
      credentials: { email: string; password: string; totp_code?: string },
      from: From,
      presentedToken: string | null,
    ) => login(deps, credentials, from, presentedToken),
    authenticate: (token: string) => authenticate(deps, token),
    logout: (session: DashboardSession, from: From) => logout(deps, session, from),
    logoutEverywhere: (session: DashboardSession, from: From) => logoutEverywhere(deps, session, from),
    purgeSessions: (now?: Date) => purgeEndedSessions(deps, now),
    startTotp: (self: Self) => startTotpEnrolment(deps, self),
    confirmTotp: (self: Self, code: string) => confirmTotp(deps, self, code),
    removeTotp: (self: Self, code: string) => removeTotp(deps, self, code),
    verifyStepUp: (self: Self, code: string | undefined, operation: string) =>
      verifyStepUp(deps, self, code, operation),
    security: (merchantUuid: string) => securitySettings(deps, merchantUuid),
    setRequireTotp: (self: Self, requireTotp: boolean) => setRequireTotp(deps, self, requireTotp),
  }
}

import type { Config } from '../../config.ts'
import type { UserRole } from '../../db/enums.ts'
import type { Db } from '../../db/index.ts'
import { deriveKey } from '../../lib/crypto.ts'
import type { MerchantService } from '../merchants/service.ts'
import type { Actor, From, UserDeps } from './deps.ts'
import { acceptInvitation, inviteUser } from './invitations.ts'
import { disableUser, listUsers } from './people.ts'
import { authenticate, type DashboardSession, login, logout, logoutEverywhere } from './sessions.ts'

export type UserService = ReturnType<typeof createUserService>

/** The dashboard's people and sessions: every operation of the module, bound to its dependencies. */
export function createUserService(input: {
  db: Db
  config: Config
  merchants: Pick<MerchantService, 'getMerchant'>
}) {
  const deps: UserDeps = { ...input, csrfKey: deriveKey(input.config.masterKey, 'dashboard-csrf') }
  return {
    invite: (invitation: { merchantUuid: string; email: string; role: UserRole }, actor: Actor) =>
      inviteUser(deps, invitation, actor),
    acceptInvitation: (accept: { token: string; password: string }, from: From) =>
      acceptInvitation(deps, accept, from),
    list: (merchantUuid: string) => listUsers(deps, merchantUuid),
    disable: (userUuid: string, actor: Actor) => disableUser(deps, userUuid, actor),
    login: (credentials: { email: string; password: string }, from: From, presentedToken: string | null) =>
      login(deps, credentials, from, presentedToken),
    authenticate: (token: string) => authenticate(deps, token),
    logout: (session: DashboardSession, from: From) => logout(deps, session, from),
    logoutEverywhere: (session: DashboardSession, from: From) => logoutEverywhere(deps, session, from),
  }
}

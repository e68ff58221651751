import type { Config } from '../../config.ts'
import type { Db } from '../../db/index.ts'
import type { MerchantService } from '../merchants/service.ts'

/** What the users module's operations need. */
export interface UserDeps {
  db: Db
  config: Config
  merchants: Pick<MerchantService, 'getMerchant'>
  /** The key that binds a CSRF token to its session (derived from the master key). */
  csrfKey: Buffer
}

/** Where a request came from, as the audit log records it. */
export interface From {
  ip: string | null
  userAgent: string | null
}

/** Who acts: a signed-in dashboard user, or the operator's command line. */
export type Actor =
  | ({ via: 'dashboard'; userUuid: string } & From)
  | { via: 'cli'; userUuid?: undefined; ip?: undefined; userAgent?: undefined }

export const CLI: Actor = { via: 'cli' }

/** A dashboard user as the actor of what they do, from where they are. */
export const dashboardActor = (userUuid: string, from: From): Actor => ({
  via: 'dashboard',
  userUuid,
  ...from,
})

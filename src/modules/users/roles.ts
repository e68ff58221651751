import type { UserRole } from '../../db/enums.ts'

/**
 * What a dashboard user may do, by role: the one table the dashboard's routes and pages ask (docs/DASHBOARD.md
 * shows it to people). Every role reads; `support` also refunds; only `owner` and `admin` pay out, manage people
 * and read the audit log; the developer tools (webhooks, API keys, the sandbox) are for `owner`, `admin` and
 * `developer`; only an `owner` sets the merchant's sign-in security (requiring a second factor).
 */
export const PERMISSIONS = [
  'read',
  'refund',
  'payout',
  'manage_users',
  'read_audit_log',
  'developer_tools',
  'manage_security',
] as const
export type Permission = (typeof PERMISSIONS)[number]

export const ROLE_PERMISSIONS: Record<UserRole, readonly Permission[]> = {
  owner: ['read', 'refund', 'payout', 'manage_users', 'read_audit_log', 'developer_tools', 'manage_security'],
  admin: ['read', 'refund', 'payout', 'manage_users', 'read_audit_log', 'developer_tools'],
  developer: ['read', 'developer_tools'],
  support: ['read', 'refund'],
  viewer: ['read'],
}

export const can = (role: UserRole, permission: Permission): boolean =>
  ROLE_PERMISSIONS[role].includes(permission)

/**
 * Whether a user with `manage_users` and role `actor` may give someone the role `role`, or change or disable
 * someone who has it: an owner may do anything; an admin everything but make, change or disable an owner.
 */
export const mayManageRole = (actor: UserRole, role: UserRole): boolean =>
  can(actor, 'manage_users') && (actor === 'owner' || role !== 'owner')

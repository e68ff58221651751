import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { USER_ROLES } from '../../src/db/enums.ts'
import { can, mayManageRole, PERMISSIONS, ROLE_PERMISSIONS } from '../../src/modules/users/roles.ts'

const NONE = {
  read: false,
  refund: false,
  payout: false,
  manage_users: false,
  read_audit_log: false,
  developer_tools: false,
  manage_security: false,
}

const ALL = Object.fromEntries(Object.keys(NONE).map((permission) => [permission, true]))

/** The table of docs/DASHBOARD.md, as the code must hold it. */
const EXPECTED: Record<string, Record<string, boolean>> = {
  owner: ALL,
  admin: { ...ALL, manage_security: false },
  developer: { ...NONE, read: true, developer_tools: true },
  support: { ...NONE, read: true, refund: true },
  viewer: { ...NONE, read: true },
}

describe('dashboard roles', () => {
  it('gives every role exactly the permissions of the documented table', () => {
    assert.deepEqual(Object.keys(ROLE_PERMISSIONS).sort(), [...USER_ROLES].sort())
    for (const role of USER_ROLES)
      for (const permission of PERMISSIONS)
        assert.equal(can(role, permission), EXPECTED[role]?.[permission], `${role} ${permission}`)
  })

  it('lets support refund, viewer only read, and only owner and admin manage users', () => {
    assert.equal(can('support', 'refund'), true)
    assert.deepEqual(ROLE_PERMISSIONS.viewer, ['read'])
    assert.deepEqual(
      USER_ROLES.filter((role) => can(role, 'manage_users')),
      ['owner', 'admin'],
    )
    assert.deepEqual(
      USER_ROLES.filter((role) => can(role, 'payout')),
      ['owner', 'admin'],
    )
  })

  it('lets an admin manage every role but owner, and an owner every role', () => {
    for (const role of USER_ROLES) {
      assert.equal(mayManageRole('owner', role), true, role)
      assert.equal(mayManageRole('admin', role), role !== 'owner', role)
      for (const actor of ['developer', 'support', 'viewer'] as const)
        assert.equal(mayManageRole(actor, role), false, `${actor} ${role}`)
    }
  })
})

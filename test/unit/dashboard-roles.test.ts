import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { USER_ROLES } from '../../src/db/enums.ts'
import { can, PERMISSIONS, ROLE_PERMISSIONS } from '../../src/modules/users/roles.ts'

/** The table of docs/DASHBOARD.md, as the code must hold it. */
const EXPECTED: Record<string, Record<string, boolean>> = {
  owner: { read: true, refund: true, manage_users: true, read_audit_log: true, developer_tools: true },
  admin: { read: true, refund: true, manage_users: true, read_audit_log: true, developer_tools: true },
  developer: { read: true, refund: false, manage_users: false, read_audit_log: false, developer_tools: true },
  support: { read: true, refund: true, manage_users: false, read_audit_log: false, developer_tools: false },
  viewer: { read: true, refund: false, manage_users: false, read_audit_log: false, developer_tools: false },
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
  })
})

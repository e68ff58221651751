import { type Kysely, sql } from 'kysely'
import { createChildTable, createIndex, withTimestamps } from './tables.ts'

/**
 * The dashboard's people and sessions (modules/users): merchant users, their one-time invitations, their
 * sessions, and the audit log of what was done in the dashboard and with the `users` commands.
 *
 * An email is unique across all merchants, compared without case: signing in asks for the email and the
 * password only, so the email alone must name one user.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await createChildTable(db, 'merchant_users', 'merchant_uuid', 'merchants.uuid')
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) =>
      c.notNull().check(sql`role IN ('owner', 'admin', 'developer', 'support', 'viewer')`),
    )
    // Null until the user accepts the invitation and sets a password.
    .addColumn('password_hash', 'text')
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status IN ('active', 'disabled')`))
    .$call(withTimestamps)
    .execute()
  await sql`CREATE UNIQUE INDEX merchant_users_email_idx ON merchant_users (lower(email))`.execute(db)
  await createIndex(db, 'merchant_users_merchant_idx', 'merchant_users', ['merchant_uuid', 'created_at'])

  await createChildTable(db, 'merchant_user_invitations', 'user_uuid', 'merchant_users.uuid')
    // sha256 of the token: the link is the only copy of the token itself.
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('used_at', sql`timestamptz(3)`)
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    .execute()
  await createIndex(db, 'merchant_user_invitations_user_idx', 'merchant_user_invitations', ['user_uuid'])

  await db.schema
    .createTable('dashboard_sessions')
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    // sha256 of the cookie's value: a copy of the table signs nobody in.
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_uuid', 'uuid', (c) => c.notNull().references('merchant_users.uuid'))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('last_seen_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('idle_expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('revoked_at', sql`timestamptz(3)`)
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .execute()
  await createIndex(db, 'dashboard_sessions_user_idx', 'dashboard_sessions', ['user_uuid'])

  await db.schema
    .createTable('dashboard_audit_log')
    .addColumn('uuid', 'uuid', (c) => c.primaryKey())
    .addColumn('merchant_uuid', 'uuid', (c) => c.references('merchants.uuid'))
    // Who: the signed-in user; null for the operator's command line and for a failed sign-in.
    .addColumn('actor_user_uuid', 'uuid', (c) => c.references('merchant_users.uuid'))
    .addColumn('via', 'text', (c) => c.notNull().check(sql`via IN ('dashboard', 'cli')`))
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text')
    .addColumn('target_id', 'text')
    .addColumn('mode', 'text', (c) => c.check(sql`mode IN ('test', 'live')`))
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('details', 'jsonb')
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    .execute()
  await createIndex(db, 'dashboard_audit_log_merchant_idx', 'dashboard_audit_log', [
    'merchant_uuid',
    'created_at',
  ])
  // Sign-in throttling counts recent failures per account and per address.
  await createIndex(db, 'dashboard_audit_log_target_idx', 'dashboard_audit_log', [
    'action',
    'target_id',
    'created_at',
  ])
  await createIndex(db, 'dashboard_audit_log_ip_idx', 'dashboard_audit_log', ['action', 'ip', 'created_at'])
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('dashboard_audit_log').ifExists().execute()
  await db.schema.dropTable('dashboard_sessions').ifExists().execute()
  await db.schema.dropTable('merchant_user_invitations').ifExists().execute()
  await db.schema.dropTable('merchant_users').ifExists().execute()
}

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sha256Hex } from '../../../src/lib/crypto.ts'
import { runMaintenance } from '../../../src/workers/maintenance.ts'
import { activeUser, auditRows, dashboard, signIn } from '../../helpers/dashboard.ts'
import { backends } from '../../helpers/harness.ts'
import { suiteContext } from '../../helpers/suite.ts'

const DAY_MS = 24 * 3600 * 1000

for (const backend of backends()) {
  describe(`dashboard session housekeeping (${backend})`, () => {
    const ctx = suiteContext(backend)

    it('deletes sessions that ended more than 7 days ago, revoked or expired, and keeps the rest', async () => {
      const user = await activeUser(ctx, 'viewer')
      const sessions = []
      for (let i = 0; i < 5; i++) sessions.push(await signIn(ctx, user))
      const [revokedLongAgo, idleLongAgo, revokedRecently, idleRecently, live] = sessions.map((s) =>
        sha256Hex(s.token),
      )
      const set = (hash: string | undefined, changes: { revoked_at?: Date; idle_expires_at?: Date }) =>
        ctx.db
          .updateTable('dashboard_sessions')
          .set(changes)
          .where('token_hash', '=', hash as string)
          .execute()
      const ago = (days: number) => new Date(Date.now() - days * DAY_MS)
      await set(revokedLongAgo, { revoked_at: ago(8) })
      await set(idleLongAgo, { idle_expires_at: ago(7.1) })
      await set(revokedRecently, { revoked_at: ago(6) })
      await set(idleRecently, { idle_expires_at: ago(6.9) })

      await runMaintenance(ctx.db, ctx.app.log, ctx.services)

      const left = await ctx.db
        .selectFrom('dashboard_sessions')
        .select('token_hash')
        .where('user_uuid', '=', user.uuid)
        .execute()
      assert.deepEqual(left.map((r) => r.token_hash).sort(), [revokedRecently, idleRecently, live].sort())
      const stillIn = await dashboard(ctx, 'GET', '/dashboard/api/me', { cookie: sessions[4]?.token })
      assert.equal(stillIn.statusCode, 200)
      // The audit log keeps its rows of the sessions deleted.
      const signIns = (await auditRows(ctx, 'login_succeeded')).filter((r) => r.actor_user_uuid === user.uuid)
      assert.equal(signIns.length, 5)
      assert.ok(ctx.logs.some((line) => line.includes('purged ended dashboard sessions')))

      // The 7 days are counted from the time given: 1.5 days on, the two that ended 6 and 6.9 days ago go too.
      assert.equal(await ctx.services.users.purgeSessions(new Date(Date.now() + 1.5 * DAY_MS)), 2)
      assert.equal(await ctx.services.users.purgeSessions(), 0)
    })
  })
}

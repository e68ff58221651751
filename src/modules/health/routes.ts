import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sql } from 'kysely'
import { Type } from 'typebox'
import type { Db } from '../../db/index.ts'
import { Ref, Timestamp } from '../../http/schemas.ts'

const HealthResponse = Type.Object(
  {
    status: Type.String({ enum: ['ok', 'degraded'] }),
    version: Type.String(),
    time: Timestamp(),
    database: Type.String({
      enum: ['ok', 'unreachable', 'read_only', 'no_sync_standby'],
      description:
        '`ok`: a primary takes writes. `unreachable`: no answer within 2 s. `read_only`: the server reached is a standby (a failover under way). `no_sync_standby`: the primary waits for a synchronous standby that none is, so a write would not be acknowledged.',
    }),
  },
  { $id: 'HealthResponse' },
)

export const healthRoutes: FastifyPluginAsyncTypebox<{ db: Db; version: string }> = async (
  app,
  { db, version },
) => {
  app.addSchema(HealthResponse)
  app.get(
    '/integration/health',
    {
      schema: {
        operationId: 'getHealth',
        summary: 'Is the API up?',
        description:
          'No authentication. 503 while no write could be acknowledged: the database is unreachable, the server reached is a standby, or the primary has no synchronous standby it waits for.',
        tags: ['Health'],
        security: [],
        response: {
          200: Ref(HealthResponse, { description: 'The API and its database are up.' }),
          503: Ref(HealthResponse, { description: 'No write could be acknowledged now.' }),
        },
      },
    },
    async (_request, reply) => {
      const database = await databaseState(db)
      return reply.code(database === 'ok' ? 200 : 503).send({
        status: database === 'ok' ? 'ok' : 'degraded',
        version,
        time: new Date().toISOString(),
        database,
      })
    },
  )
}

type DatabaseState = 'ok' | 'unreachable' | 'read_only' | 'no_sync_standby'

/**
 * Whether a write could be acknowledged now. On replicated PostgreSQL the server reached may be a standby (a
 * failover under way, behind a proxy that has not moved yet), or a primary that waits for a synchronous standby
 * that is not there (synchronous_standby_names set, none streaming as sync): every COMMIT would wait. Which
 * standbys stream is read from pg_stat_replication; a role without pg_monitor sees its rows but not their
 * sync_state, and is then given the benefit of the doubt.
 */
async function databaseState(db: Db): Promise<DatabaseState> {
  try {
    const { rows } = await Promise.race([
      sql<{ standby: boolean; waits: boolean; sync: number; hidden: number }>`
        SELECT pg_is_in_recovery() AS standby,
               current_setting('synchronous_standby_names') <> '' AS waits,
               (SELECT count(*)::int FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')) AS sync,
               (SELECT count(*)::int FROM pg_stat_replication WHERE sync_state IS NULL) AS hidden`.execute(
        db,
      ),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('database health check timed out')), 2000).unref(),
      ),
    ])
    const state = rows[0]
    if (!state) return 'unreachable'
    if (state.standby) return 'read_only'
    if (state.waits && state.sync === 0 && state.hidden === 0) return 'no_sync_standby'
    return 'ok'
  } catch {
    return 'unreachable'
  }
}

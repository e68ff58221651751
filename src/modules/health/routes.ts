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
    database: Type.String({ enum: ['ok', 'unreachable'] }),
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
        description: 'No authentication. 503 when the database is unreachable.',
        tags: ['Health'],
        security: [],
        response: {
          200: Ref(HealthResponse, { description: 'The API and its database are up.' }),
          503: Ref(HealthResponse, { description: 'The database is unreachable.' }),
        },
      },
    },
    async (_request, reply) => {
      let database: 'ok' | 'unreachable' = 'ok'
      try {
        await Promise.race([
          sql`SELECT 1`.execute(db),
          new Promise((_, reject) =>
            setTimeout(() => reject(new Error('database health check timed out')), 2000).unref(),
          ),
        ])
      } catch {
        database = 'unreachable'
      }
      return reply.code(database === 'ok' ? 200 : 503).send({
        status: database === 'ok' ? 'ok' : 'degraded',
        version,
        time: new Date().toISOString(),
        database,
      })
    },
  )
}

import { sql } from 'kysely'
import type { Executor } from '../../../db/index.ts'

export interface AttemptRecord {
  uuid: string
  deliveryUuid: string
  attempt: number
  worker: string
  startedAt: Date
  durationMs: number
  status: number | null
  body: string | null
  error: string | null
  next: { status: 'pending' | 'succeeded' | 'failed'; nextAttemptAt: Date | null }
}

/**
 * Records finished attempts, many at once, in one statement (atomic by itself): the attempts' INSERT and their
 * deliveries' UPDATE. A delivery whose claim this worker no longer holds (its lease ran out and another worker
 * took it) is left to that worker; its attempt is still logged.
 */
export async function recordAttempts(db: Executor, records: AttemptRecord[]): Promise<void> {
  if (records.length === 0) return
  const attempts = records.map(
    (r) =>
      sql`(${r.uuid}::uuid, ${r.deliveryUuid}::uuid, ${r.attempt}::int, ${r.worker}::text, ${r.startedAt}::timestamptz,
        ${r.durationMs}::int, ${r.status}::int, ${r.body}::text, ${r.error}::text)`,
  )
  const outcomes = records.map(
    (r) =>
      sql`(${r.deliveryUuid}::uuid, ${r.worker}::text, ${r.attempt}::int, ${r.next.status}::text, ${r.next.nextAttemptAt}::timestamptz,
        ${r.startedAt}::timestamptz, ${r.status}::int, ${r.body}::text, ${r.durationMs}::int, ${r.error}::text)`,
  )
  await sql`
    WITH logged AS (
      INSERT INTO webhook_attempts (uuid, delivery_uuid, attempt, worker, started_at, duration_ms, response_status, response_body, error)
      VALUES ${sql.join(attempts)}
    )
    UPDATE webhook_deliveries d SET
      attempts = v.attempt, status = v.status, next_attempt_at = v.next_attempt_at, last_attempt_at = v.started_at,
      response_status = v.response_status, response_body = v.response_body, duration_ms = v.duration_ms, error = v.error,
      locked_until = NULL, locked_by = NULL, updated_at = now()
    FROM (VALUES ${sql.join(outcomes)}) AS v(uuid, worker, attempt, status, next_attempt_at, started_at, response_status, response_body, duration_ms, error)
    WHERE d.uuid = v.uuid AND d.locked_by = v.worker`.execute(db)
}

/** A delivery's attempts, first first. */
export const listAttempts = (db: Executor, deliveryUuid: string) =>
  db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_uuid', '=', deliveryUuid)
    .orderBy('attempt')
    .orderBy('started_at')
    .execute()

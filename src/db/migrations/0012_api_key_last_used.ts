import { type Kysely, sql } from 'kysely'

/**
 * When an API key last authenticated a request, for the dashboard's API keys page. Written at most once a
 * minute per key and process, so it is a minute's precision, not a log of uses; null for a key never used
 * since this column exists.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('last_used_at', sql`timestamptz(3)`).execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('last_used_at').execute()
}

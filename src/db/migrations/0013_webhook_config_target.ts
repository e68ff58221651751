import { type Kysely, sql } from 'kysely'

/**
 * The configured webhook URL's host (`new URL(url).host`), kept beside it: an event's delivery to the configured
 * URL is then written in the statement that reads the configuration, without the configuration being read
 * first. A delivery's target groups it for the per-host concurrency cap only; a URL changed by a process of an
 * earlier version during a rolling upgrade keeps its previous host for that grouping until it is set again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_configs').addColumn('target', 'text').execute()
  const configured = await sql<{ merchant_uuid: string; mode: string; url: string }>`
    SELECT merchant_uuid, mode, url FROM webhook_configs WHERE url IS NOT NULL`.execute(db)
  for (const { merchant_uuid, mode, url } of configured.rows) {
    let host: string
    try {
      host = new URL(url).host
    } catch {
      continue
    }
    await sql`UPDATE webhook_configs SET target = ${host} WHERE merchant_uuid = ${merchant_uuid} AND mode = ${mode}`.execute(
      db,
    )
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_configs').dropColumn('target').execute()
}

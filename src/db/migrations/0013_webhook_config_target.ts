import { type Kysely, sql } from 'kysely'

/**
 * The configured webhook URL's host (`new URL(url).host`), kept beside it: an event's delivery to the configured
 * URL is then written by the statement that reads the configuration, without reading it first. A delivery's
 * target groups it for the per-host concurrency cap only.
 *
 * Existing configurations get theirs here, in one statement. A process of an earlier version still running
 * during a rolling upgrade changes the URL without the target: a trigger then takes the host from the URL in
 * SQL (after the scheme and any user info, up to the path; lower-cased, without the scheme's default port): the
 * host `URL.host` gives for the URLs the API accepts, except an internationalised name (only the grouping differs).
 * The trigger also fires when this version keeps the host of a changed URL: it gives the same host.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_configs').addColumn('target', 'text').execute()
  const configured = await sql<{ merchant_uuid: string; mode: string; url: string }>`
    SELECT merchant_uuid, mode, url FROM webhook_configs WHERE url IS NOT NULL`.execute(db)
  const hosts = configured.rows.flatMap((row) => {
    try {
      return [{ ...row, host: new URL(row.url).host }]
    } catch {
      return []
    }
  })
  if (hosts.length > 0)
    await sql`
      UPDATE webhook_configs AS c SET target = h.host
      FROM unnest(${hosts.map((h) => h.merchant_uuid)}::uuid[], ${hosts.map((h) => h.mode)}::text[],
        ${hosts.map((h) => h.host)}::text[]) AS h(merchant_uuid, mode, host)
      WHERE c.merchant_uuid = h.merchant_uuid AND c.mode = h.mode`.execute(db)
  await sql`
    CREATE FUNCTION webhook_configs_target_of_url() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE host text := lower(substring(NEW.url from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/?#]+)'));
    BEGIN
      IF (lower(NEW.url) LIKE 'https:%' AND host LIKE '%:443') OR (lower(NEW.url) LIKE 'http:%' AND host LIKE '%:80') THEN
        host := regexp_replace(host, ':[0-9]+$', '');
      END IF;
      NEW.target := host;
      RETURN NEW;
    END $$`.execute(db)
  await sql`
    CREATE TRIGGER webhook_configs_target_of_url BEFORE UPDATE OF url ON webhook_configs
    FOR EACH ROW WHEN (NEW.url IS DISTINCT FROM OLD.url AND NEW.target IS NOT DISTINCT FROM OLD.target)
    EXECUTE FUNCTION webhook_configs_target_of_url()`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS webhook_configs_target_of_url ON webhook_configs`.execute(db)
  await sql`DROP FUNCTION IF EXISTS webhook_configs_target_of_url()`.execute(db)
  await db.schema.alterTable('webhook_configs').dropColumn('target').execute()
}

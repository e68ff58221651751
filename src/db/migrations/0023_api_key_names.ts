import type { Kysely } from 'kysely'

/**
 * A name an API key is given where it is made (the dashboard, the command line), so that the API keys page
 * says which key is the checkout server's and which the reconciliation job's; null for a key made without one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('name', 'text').execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('name').execute()
}

import type { Kysely } from 'kysely'

/** The refund list, newest first per merchant and mode: an index range scan at any depth of the list. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('refunds_list_idx')
    .on('refunds')
    .columns(['merchant_uuid', 'mode', 'created_at', 'uuid'])
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('refunds_list_idx').ifExists().execute()
}

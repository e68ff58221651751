import type { Executor } from '../../../db/index.ts'
import type { Scope } from '../../../db/scope.ts'
import type { WebhookConfigsTable } from '../../../db/types.ts'

export const findConfig = (db: Executor, scope: Scope) =>
  db
    .selectFrom('webhook_configs')
    .selectAll()
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .executeTakeFirst()

/** Creates the configuration with its first secret unless it exists; returns the stored one either way. */
export async function ensureConfig(
  db: Executor,
  scope: Scope,
  secretSealed: string,
  events: string[],
  at: Date,
) {
  await db
    .insertInto('webhook_configs')
    .values({
      merchant_uuid: scope.merchantUuid,
      mode: scope.mode,
      url: null,
      enabled: true,
      events: JSON.stringify(events),
      secret_sealed: secretSealed,
      updated_at: at,
    })
    .onConflict((oc) => oc.columns(['merchant_uuid', 'mode']).doNothing())
    .execute()
  return (await findConfig(db, scope)) as NonNullable<Awaited<ReturnType<typeof findConfig>>>
}

export const updateConfig = (
  db: Executor,
  scope: Scope,
  changes: Partial<Record<keyof WebhookConfigsTable, unknown>>,
) =>
  db
    .updateTable('webhook_configs')
    .set(changes as never)
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .returningAll()
    .executeTakeFirstOrThrow()

/**
 * Makes a new sealed secret the current one. One statement: the current secret becomes the previous one until
 * `previousUntil` (whatever was previous is dropped, so at most two are valid; none when `previousUntil` is
 * null), and concurrent rotations cannot hand out a secret that never signs.
 */
export const rotateSecret = (
  db: Executor,
  scope: Scope,
  secretSealed: string,
  previousUntil: Date | null,
  at: Date,
) =>
  db
    .updateTable('webhook_configs')
    .set((eb) => ({
      secret_sealed: secretSealed,
      previous_secret_sealed: previousUntil ? eb.ref('secret_sealed') : null,
      previous_secret_expires_at: previousUntil,
      updated_at: at,
    }))
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .returningAll()
    .executeTakeFirstOrThrow()

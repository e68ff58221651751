import { compiledOnce } from './driver/statement.ts'
import type { Db } from './index.ts'
import { selectScoped } from './queries.ts'
import type { Scope as KeyScope } from './scope.ts'

/** How long a key and its answer are kept (docs/API.md, Idempotency). */
export const RETENTION_MS = 7 * 24 * 3600 * 1000

/**
 * Claims `key` for `owner` until `leaseMs` from `now`, or takes over one whose retention has run out. Returns
 * whether the claim was made.
 */
export async function claimKey(
  db: Db,
  scope: KeyScope,
  key: string,
  claim: { fingerprint: string; owner: string; now: Date; leaseMs: number },
): Promise<boolean> {
  const { now } = claim
  const values = [
    scope.merchantUuid,
    scope.mode,
    key,
    claim.fingerprint,
    claim.owner,
    new Date(now.getTime() + claim.leaseMs),
    now,
    new Date(now.getTime() + RETENTION_MS),
  ] as const
  const statement = compiledOnce(
    db,
    'idempotency_keys.claim',
    values,
    (merchantUuid, mode, key, fingerprint, owner, lockedUntil, createdAt, expiresAt) =>
      db
        .insertInto('idempotency_keys')
        .values({
          merchant_uuid: merchantUuid,
          mode,
          key,
          fingerprint,
          state: 'running',
          owner,
          locked_until: lockedUntil,
          created_at: createdAt,
          expires_at: expiresAt,
        })
        .onConflict((oc) =>
          oc
            .columns(['merchant_uuid', 'mode', 'key'])
            .doUpdateSet((eb) => ({
              fingerprint: eb.ref('excluded.fingerprint'),
              state: 'running',
              owner: eb.ref('excluded.owner'),
              locked_until: eb.ref('excluded.locked_until'),
              response_status: null,
              response_headers: null,
              response_body: null,
              created_at: eb.ref('excluded.created_at'),
              expires_at: eb.ref('excluded.expires_at'),
            }))
            .where('idempotency_keys.expires_at', '<', createdAt),
        )
        .returning('key'),
  )
  return (await db.executeQuery(statement)).rows.length > 0
}

/** The key's record, whoever holds it. */
export const findKey = (db: Db, scope: KeyScope, key: string) =>
  selectScoped(db, 'idempotency_keys', scope).where('key', '=', key).executeTakeFirst()

/** Takes over a running key whose lease has run out (its process died); whether it was taken. */
export async function takeOverKey(
  db: Db,
  scope: KeyScope,
  key: string,
  claim: { owner: string; now: Date; leaseMs: number },
): Promise<boolean> {
  const taken = await db
    .updateTable('idempotency_keys')
    .set({ owner: claim.owner, locked_until: new Date(claim.now.getTime() + claim.leaseMs) })
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .where('key', '=', key)
    .where('state', '=', 'running')
    .where('locked_until', '<', claim.now)
    .returning('key')
    .executeTakeFirst()
  return taken !== undefined
}

/** Lets the key go, if `owner` still holds it: the request may be made again with it. */
export async function releaseKey(db: Db, scope: KeyScope, key: string, owner: string): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .where('key', '=', key)
    .where('owner', '=', owner)
    .execute()
}

/**
 * Stores the answer a repeat replays, if `owner` still holds the key: a request whose lease was taken over
 * must not overwrite its successor's.
 */
export async function storeAnswer(
  db: Db,
  scope: KeyScope,
  key: string,
  owner: string,
  answer: { status: number; headers: Record<string, string>; body: string },
): Promise<void> {
  const values = [
    answer.status,
    JSON.stringify(answer.headers),
    answer.body,
    scope.merchantUuid,
    scope.mode,
    key,
    owner,
  ] as const
  await db.executeQuery(
    compiledOnce(
      db,
      'idempotency_keys.storeAnswer',
      values,
      (status, headers, body, merchantUuid, mode, key, owner) =>
        db
          .updateTable('idempotency_keys')
          .set({ state: 'done', response_status: status, response_headers: headers, response_body: body })
          .where('merchant_uuid', '=', merchantUuid)
          .where('mode', '=', mode)
          .where('key', '=', key)
          .where('owner', '=', owner),
    ),
  )
}

/** Removes keys past their 7-day retention. */
export async function purgeExpiredIdempotencyKeys(db: Db, now = new Date()): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<', now).executeTakeFirst()
  return Number(result.numDeletedRows)
}

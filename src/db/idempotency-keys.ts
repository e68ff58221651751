import type { Db } from './index.ts'
import type { Scope as KeyScope } from './scope.ts'

/** How long a key and its answer are kept (contract §4). */
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
  const claimed = await db
    .insertInto('idempotency_keys')
    .values({
      merchant_uuid: scope.merchantUuid,
      mode: scope.mode,
      key,
      fingerprint: claim.fingerprint,
      state: 'running',
      owner: claim.owner,
      locked_until: new Date(now.getTime() + claim.leaseMs),
      created_at: now,
      expires_at: new Date(now.getTime() + RETENTION_MS),
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
        .where('idempotency_keys.expires_at', '<', now),
    )
    .returning('key')
    .executeTakeFirst()
  return claimed !== undefined
}

/** The key's record, whoever holds it. */
export const findKey = (db: Db, scope: KeyScope, key: string) =>
  db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .where('key', '=', key)
    .executeTakeFirst()

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
  await db
    .updateTable('idempotency_keys')
    .set({
      state: 'done',
      response_status: answer.status,
      response_headers: JSON.stringify(answer.headers),
      response_body: answer.body,
    })
    .where('merchant_uuid', '=', scope.merchantUuid)
    .where('mode', '=', scope.mode)
    .where('key', '=', key)
    .where('owner', '=', owner)
    .execute()
}

/** Removes keys past their 7-day retention. */
export async function purgeExpiredIdempotencyKeys(db: Db, now = new Date()): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<', now).executeTakeFirst()
  return Number(result.numDeletedRows)
}

import { randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { Executor } from '../../db/index.ts'
import type { Scope } from '../../db/scope.ts'
import type { WebhookConfig } from '../../db/types.ts'
import { decryptSecret, encryptSecret } from '../../lib/crypto.ts'
import type { WebhookDeps } from './deps.ts'
import * as configRepo from './repository/configs.ts'
import { EVENT_NAMES } from './schemas.ts'

export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`

export function createSecretOpener(masterKey: Buffer): (sealed: string) => string {
  // Signing secrets opened once per sealed value: every delivery needs them, and a sealed value never changes.
  const opened = new LRUCache<string, string>({ max: 10_000 })
  return (sealed) => {
    let plain = opened.get(sealed)
    if (plain === undefined) {
      plain = decryptSecret(masterKey, sealed)
      opened.set(sealed, plain)
    }
    return plain
  }
}

/** The sealed secrets of a configuration, as stored or as read with a claim. */
export type SealedSecrets = Pick<
  WebhookConfig,
  'secret_sealed' | 'previous_secret_sealed' | 'previous_secret_expires_at'
>

/** The secrets that sign a delivery now: the current one, and the previous one inside its overlap. */
export function signingSecrets(
  deps: Pick<WebhookDeps, 'open'>,
  sealed: SealedSecrets,
  now = new Date(),
): string[] {
  const secrets = [deps.open(sealed.secret_sealed)]
  if (
    sealed.previous_secret_sealed &&
    sealed.previous_secret_expires_at &&
    sealed.previous_secret_expires_at > now
  ) {
    secrets.push(deps.open(sealed.previous_secret_sealed))
  }
  return secrets
}

/**
 * The merchant's configuration in `scope`, made with its first secret (and every event) if it did not exist:
 * the secret exists from the start, before any URL is set.
 */
export const ensureConfig = async (deps: Pick<WebhookDeps, 'config'>, db: Executor, scope: Scope) =>
  // A first secret is made and sealed only when there is no configuration yet.
  (await configRepo.findConfig(db, scope)) ??
  configRepo.ensureConfig(
    db,
    scope,
    encryptSecret(deps.config.masterKey, newWebhookSecret()),
    [...EVENT_NAMES],
    new Date(),
  )

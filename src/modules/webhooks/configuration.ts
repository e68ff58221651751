import type { Config } from '../../config.ts'
import { scopeOf } from '../../db/scope.ts'
import type { WebhookConfig } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError, validationError } from '../../http/errors.ts'
import { encryptSecret } from '../../lib/crypto.ts'
import { newId } from '../../lib/ids.ts'
import { iso } from '../../lib/time.ts'
import type { WebhookDeps } from './deps.ts'
import { attemptNow } from './dispatch.ts'
import { deliveryView } from './log.ts'
import * as configRepo from './repository/configs.ts'
import * as deliveryRepo from './repository/deliveries.ts'
import { EVENT_NAMES, type UpdateWebhookConfigInput, type WebhookConfigView } from './schemas.ts'
import { ensureConfig, newWebhookSecret } from './secrets.ts'
import { assertSafeUrl, UnsafeTargetError } from './ssrf.ts'

export function configView(deps: Pick<WebhookDeps, 'open'>, cfg: WebhookConfig): WebhookConfigView {
  const now = new Date()
  const overlapping = cfg.previous_secret_expires_at && cfg.previous_secret_expires_at > now
  return {
    url: cfg.url,
    enabled: cfg.enabled,
    events: cfg.events as WebhookConfigView['events'],
    secret: deps.open(cfg.secret_sealed),
    previous_secret_expires_at: overlapping ? iso(cfg.previous_secret_expires_at) : null,
    disabled_reason: cfg.disabled_reason,
    updated_at: (cfg.updated_at as Date).toISOString(),
  }
}

async function checkUrl(config: Config, field: string, url: string) {
  const policy = {
    requireHttps: config.appEnv === 'production',
    allowPrivateNetworks: config.webhookAllowPrivateNetworks,
  }
  try {
    await assertSafeUrl(url, policy)
  } catch (error) {
    if (error instanceof UnsafeTargetError) throw validationError(field, error.message)
    throw error
  }
}

/** Checks a resource's own callback_url the way the configured URL is checked. */
export const checkCallbackUrl = (deps: Pick<WebhookDeps, 'config'>, url: string) =>
  checkUrl(deps.config, 'callback_url', url)

export async function getConfig(deps: Pick<WebhookDeps, 'db' | 'config' | 'open'>, auth: AuthContext) {
  return configView(deps, await ensureConfig(deps, deps.db, scopeOf(auth)))
}

export async function updateConfig(
  deps: Pick<WebhookDeps, 'db' | 'config' | 'open'>,
  auth: AuthContext,
  input: UpdateWebhookConfigInput,
) {
  if (input.url) await checkUrl(deps.config, 'url', input.url)
  const scope = scopeOf(auth)
  await ensureConfig(deps, deps.db, scope)
  const enabled = input.enabled ?? true
  const updated = await configRepo.updateConfig(deps.db, scope, {
    url: input.url,
    ...(input.url !== undefined && { target: input.url === null ? null : new URL(input.url).host }),
    enabled,
    events: JSON.stringify(input.events ?? [...EVENT_NAMES]),
    disabled_reason: null,
    updated_at: new Date(),
  })
  return configView(deps, updated)
}

export async function rotateSecret(
  deps: Pick<WebhookDeps, 'db' | 'config' | 'open'>,
  auth: AuthContext,
  overlapSeconds = 86400,
) {
  const scope = scopeOf(auth)
  await ensureConfig(deps, deps.db, scope)
  const now = new Date()
  const updated = await configRepo.rotateSecret(
    deps.db,
    scope,
    encryptSecret(deps.config.masterKey, newWebhookSecret()),
    overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null,
    now,
  )
  return configView(deps, updated)
}

/** Sends a webhook.test event to the configured URL now and returns the delivery after its one attempt. */
export async function sendTest(deps: WebhookDeps, auth: AuthContext) {
  const scope = scopeOf(auth)
  const cfg = await ensureConfig(deps, deps.db, scope)
  if (!cfg.url)
    throw new AppError('validation_failed', 'Set a webhook URL first.', null, {
      url: ['no webhook URL is configured'],
    })
  const now = new Date()
  const eventId = newId()
  const body = JSON.stringify({
    event: 'webhook.test',
    event_id: eventId,
    schema_version: '1',
    occurred_at: now.toISOString(),
    aggregate_version: 1,
    data: {
      message: 'This is a test delivery from merchant-gateway.',
      merchant_uuid: scope.merchantUuid,
      mode: scope.mode,
    },
  })
  const worker = `api-test-${newId()}`
  const delivery = await deliveryRepo.insertDelivery(deps.db, {
    uuid: newId(),
    event_id: eventId,
    merchant_uuid: scope.merchantUuid,
    mode: scope.mode,
    event: 'webhook.test',
    url: cfg.url,
    target: new URL(cfg.url).host,
    body,
    status: 'pending',
    attempts: 0,
    // Not due for the dispatcher: this request makes the one attempt itself.
    next_attempt_at: null,
    locked_by: worker,
    locked_until: new Date(now.getTime() + 60_000),
    is_test: true,
    created_at: now,
    updated_at: now,
  })
  const claimed = {
    ...delivery,
    secret_sealed: cfg.secret_sealed,
    previous_secret_sealed: cfg.previous_secret_sealed,
    previous_secret_expires_at: cfg.previous_secret_expires_at,
    config_url: cfg.url,
    config_enabled: cfg.enabled,
  }
  return deliveryView(await attemptNow(deps, claimed, worker))
}

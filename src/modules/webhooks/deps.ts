import type { Config } from '../../config.ts'
import type { Db } from '../../db/index.ts'
import type { Sender } from './delivery.ts'

/** When a failed delivery is tried again: the delays of the schedule (seconds) and the jitter's source. */
export interface DispatchOptions {
  schedule: readonly number[]
  random: () => number
}

/**
 * What the webhook operations work with, built once by createWebhookService; each operation names the part
 * it needs (`Pick<WebhookDeps, …>`).
 */
export interface WebhookDeps {
  db: Db
  config: Config
  sender: Sender
  dispatch: DispatchOptions
  /** Opens a sealed signing secret (see createSecretOpener). */
  open: (sealed: string) => string
}

import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config.ts'
import type { PaymentConnector } from '../../connectors/types.ts'
import type { Db } from '../../db/index.ts'
import type { LedgerService } from '../ledger/service.ts'
import type { ProviderService } from '../providers/service.ts'
import type { RateService } from '../rates/service.ts'
import type { WebhookService } from '../webhooks/service.ts'

/** Payouts are paid from the merchant's USDT balance. */
export const PAYOUT_CURRENCY = 'USDT'
/** How long a quote holds its figures (docs/API.md, Payouts). */
export const QUOTE_TTL_MS = 60_000

export interface PayoutTiming {
  /** How long a payout whose hand-over to the provider was interrupted waits before it is handed over again. */
  submitTimeoutMs: number
  /** How often a processing payout is checked with the provider. */
  pollIntervalMs: number
  /** How long a worker holds a payout it is checking. */
  leaseMs: number
}

export const DEFAULT_PAYOUT_TIMING: PayoutTiming = {
  submitTimeoutMs: 60_000,
  pollIntervalMs: 2000,
  leaseMs: 30_000,
}

/** What the payouts module's operations need; each takes the part it uses. */
export interface PayoutDeps {
  db: Db
  config: Config
  rates: RateService
  ledger: LedgerService
  webhooks: WebhookService
  /** The in-process simulator: the provider of every payout whose route names no connector account. */
  connector: PaymentConnector
  /** Payout routes and the connector accounts they name. */
  providers: Pick<ProviderService, 'accounts' | 'routes'>
  timing: PayoutTiming
  /** The key the destination is sealed with until the provider has taken the payout (see destination.ts). */
  sealKey: Buffer
  /** Where a hand-over that got no answer is told, with the provider's reason (a hot wallet short of funds). */
  log?: Pick<FastifyBaseLogger, 'warn'>
}

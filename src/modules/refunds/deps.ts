import type { Config } from '../../config.ts'
import type { PaymentConnector } from '../../connectors/types.ts'
import type { Db } from '../../db/index.ts'
import type { LedgerService } from '../ledger/service.ts'
import type { ProviderService } from '../providers/service.ts'
import type { TransactionService } from '../transactions/service.ts'

export interface RefundTiming {
  /** How long a refund may wait on its hand-over to the provider before a worker asks the provider again. */
  recheckMs: number
  /** How often a refund the provider still calls pending is asked about again. */
  pollIntervalMs: number
  /** How long a worker holds a refund it is asking about. */
  leaseMs: number
}

export const DEFAULT_REFUND_TIMING: RefundTiming = {
  recheckMs: 60_000,
  pollIntervalMs: 5_000,
  leaseMs: 30_000,
}

/** What the refunds module's operations need; each takes the part it uses. */
export interface RefundDeps {
  db: Db
  config: Pick<Config, 'publicBaseUrl'>
  transactions: TransactionService
  ledger: LedgerService
  /** The in-process simulator: the provider of every payment that no connector account has. */
  connector: PaymentConnector
  /** The connector accounts, and the record of which one has a payment under which reference. */
  providers: Pick<ProviderService, 'accounts' | 'handovers'>
  timing: RefundTiming
}

import type { Config } from '../../config.ts'
import type { PaymentConnector } from '../../connectors/types.ts'
import type { Db } from '../../db/index.ts'
import type { LedgerService } from '../ledger/service.ts'
import type { MerchantService } from '../merchants/service.ts'
import type { ProviderService } from '../providers/service.ts'
import type { RateService } from '../rates/service.ts'
import type { RequisiteService } from '../requisites/service.ts'
import type { WebhookService } from '../webhooks/service.ts'

/** What the transactions module's operations need; each takes the part it uses. */
export interface TransactionDeps {
  db: Db
  config: Config
  merchants: MerchantService
  rates: RateService
  requisites: RequisiteService
  webhooks: WebhookService
  ledger: LedgerService
  connectors: Record<string, PaymentConnector>
  /** Routes, connector accounts and the record of hand-overs. */
  providers: Pick<ProviderService, 'routes' | 'accounts' | 'handovers' | 'chainDeposits'>
}

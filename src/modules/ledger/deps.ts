import type { Config } from '../../config.ts'
import type { Db } from '../../db/index.ts'

/** What the ledger's operations need. */
export interface LedgerDeps {
  db: Db
  config: Pick<Config, 'publicBaseUrl'>
}

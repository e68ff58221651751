import { createAccountOperations, type ProviderDeps } from './accounts.ts'
import { createCallbackReceiver } from './callbacks.ts'
import { createChainDepositStore } from './chain-deposits.ts'
import { createHandoverRecords } from './handovers.ts'
import { createRouting } from './routing.ts'

export type { AccountView, CallbackSecretView, PaymentReports } from './accounts.ts'
export type { RoutedAccount, RouteKey, RouteView } from './routing.ts'

export type ProviderService = ReturnType<typeof createProviderService>

/** The provider side: connector accounts (and, as they come, routes, inbound callbacks and status sync). */
export function createProviderService(deps: ProviderDeps) {
  const accounts = createAccountOperations(deps)
  const handovers = createHandoverRecords(deps)
  return {
    accounts,
    callbacks: createCallbackReceiver(deps, accounts, handovers),
    routes: createRouting(deps),
    handovers,
    /** What the chain watchers keep of deposit addresses and the transfers to them. */
    chainDeposits: createChainDepositStore(deps.db),
  }
}

import { EvmErc20Connector } from './evm-erc20/index.ts'
import type { EvmErc20Settings } from './evm-erc20/settings.ts'
import type { ChainDepositStore, ChainTransactionStore } from './evm-erc20/store.ts'
import type { AcquirerSettings } from './http-acquirer/client.ts'
import { HttpAcquirerConnector } from './http-acquirer/index.ts'
import type { ConnectorKind } from './kinds.ts'
import { SimulatorAccountConnector } from './simulator/account.ts'
import type { AccountConnector } from './types.ts'

/**
 * How each connector kind is built from an account's settings and secrets (docs/CONNECTORS.md, Writing a
 * connector kind): a new kind adds its line here and its entry in kinds.ts.
 */
/**
 * What the gateway lends a connector that keeps state: which account it is, where an EVM account keeps what it
 * signs and the deposit addresses it gives.
 */
export interface ConnectorContext {
  accountUuid: string
  chainTransactions: ChainTransactionStore
  chainDeposits: ChainDepositStore
}

const BUILDERS: Record<
  ConnectorKind,
  (
    settings: Record<string, unknown>,
    secrets: Record<string, string>,
    context?: ConnectorContext,
  ) => AccountConnector
> = {
  simulator: () => new SimulatorAccountConnector(),
  'http-acquirer': (settings, secrets) =>
    new HttpAcquirerConnector(settings as unknown as AcquirerSettings, secrets),
  'evm-erc20': (settings, secrets, context) => {
    if (!context) throw new Error("an evm-erc20 account needs the gateway's store of signed transactions")
    return new EvmErc20Connector(settings as unknown as EvmErc20Settings, secrets, {
      accountUuid: context.accountUuid,
      transactions: context.chainTransactions,
      deposits: context.chainDeposits,
    })
  },
}

export const buildConnector = (
  kind: ConnectorKind,
  settings: Record<string, unknown>,
  secrets: Record<string, string>,
  context?: ConnectorContext,
): AccountConnector => BUILDERS[kind](settings, secrets, context)

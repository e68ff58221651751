import type { AcquirerSettings } from './http-acquirer/client.ts'
import { HttpAcquirerConnector } from './http-acquirer/index.ts'
import type { ConnectorKind } from './kinds.ts'
import { SimulatorAccountConnector } from './simulator/account.ts'
import type { AccountConnector } from './types.ts'

/**
 * How each connector kind is built from an account's settings and secrets (docs/CONNECTORS.md, Writing a
 * connector kind): a new kind adds its line here and its entry in kinds.ts.
 */
const BUILDERS: Record<
  ConnectorKind,
  (settings: Record<string, unknown>, secrets: Record<string, string>) => AccountConnector
> = {
  simulator: () => new SimulatorAccountConnector(),
  'http-acquirer': (settings, secrets) =>
    new HttpAcquirerConnector(settings as unknown as AcquirerSettings, secrets),
}

export const buildConnector = (
  kind: ConnectorKind,
  settings: Record<string, unknown>,
  secrets: Record<string, string>,
): AccountConnector => BUILDERS[kind](settings, secrets)

import { type TObject, Type } from 'typebox'
import { depositBranch } from '../chain/deposits.ts'
import { EVM_ERC20_SETTINGS } from './evm-erc20/settings.ts'

/**
 * What the operator configures for each connector kind (docs/OPERATIONS.md, Connector accounts): the settings
 * (shown back), the names of its secrets (sealed, never shown), and whether the provider signs its callbacks with
 * a shared secret the account keeps. A new kind adds its entry here with its folder under `src/connectors/`.
 */
export interface ConnectorKindSpec {
  description: string
  /** The settings object's schema: every property with a description, unknown properties refused. */
  settings: TObject
  /** The secrets an account of this kind must hold, by name. */
  secrets: readonly string[]
  /** The secrets it may hold besides, by name. */
  optionalSecrets?: readonly string[]
  /** Why a secret's value cannot serve, checked as the operator gives it; null when it can. */
  refuseSecret?: (name: string, value: string) => string | null
  /** The provider signs its callbacks with a secret shared with the account (rotated with an overlap). */
  signedCallbacks: boolean
}

const milliseconds = (description: string, defaultValue: number) =>
  Type.Integer({ minimum: 100, maximum: 120_000, default: defaultValue, description })

export const CONNECTOR_KINDS = {
  simulator: {
    description:
      'The in-process simulator: outcomes come from the sandbox API and the hosted page (test mode).',
    settings: Type.Object({}, { additionalProperties: false }),
    secrets: [],
    signedCallbacks: false,
  },
  'http-acquirer': {
    description:
      "The reference acquirer protocol over HTTPS/JSON (docs/CONNECTORS.md), e.g. the provider emulator's.",
    settings: Type.Object(
      {
        base_url: Type.String({
          pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
          description: "The provider's API root, e.g. https://acquirer.example/v1.",
        }),
        merchant_account: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 100,
            description: 'Our account at the provider, if it asks for one.',
          }),
        ),
        timeout_ms: milliseconds(
          'How long one call to the provider may take before it counts as not answered.',
          10_000,
        ),
      },
      { additionalProperties: false },
    ),
    secrets: ['api_key'],
    signedCallbacks: true,
  },
  'evm-erc20': {
    description:
      'ERC-20 token payouts (USDT) paid by the gateway from its hot wallet, and deposits to addresses derived from an xpub, on an EVM chain (docs/CONNECTORS.md).',
    settings: EVM_ERC20_SETTINGS,
    secrets: ['hot_wallet_key'],
    optionalSecrets: ['deposit_xpub'],
    refuseSecret: (name, value) => {
      if (name !== 'deposit_xpub') return null
      try {
        depositBranch(value)
        return null
      } catch (error) {
        return (error as Error).message
      }
    },
    signedCallbacks: false,
  },
} as const satisfies Record<string, ConnectorKindSpec>

export type ConnectorKind = keyof typeof CONNECTOR_KINDS
export const CONNECTOR_KIND_NAMES = Object.keys(CONNECTOR_KINDS) as ConnectorKind[]
export const isConnectorKind = (value: string): value is ConnectorKind =>
  Object.hasOwn(CONNECTOR_KINDS, value)

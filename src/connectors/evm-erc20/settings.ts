import { Type } from 'typebox'

const gwei = (description: string, defaultValue: number) =>
  Type.Number({ exclusiveMinimum: 0, maximum: 100_000, default: defaultValue, description })

/** An `evm-erc20` account's settings (docs/CONNECTORS.md, The evm-erc20 kind). */
export const EVM_ERC20_SETTINGS = Type.Object(
  {
    rpc_url: Type.String({
      pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
      description: "The chain's JSON-RPC endpoint, e.g. https://eth.example/v1/KEY.",
    }),
    chain_id: Type.Integer({ minimum: 1, description: 'The chain id the node must answer (1: Ethereum).' }),
    token_contract: Type.String({
      pattern: '^0x[0-9a-fA-F]{40}$',
      description:
        "The token's contract address (USDT on Ethereum: 0xdAC17F958D2ee523a2206206994597C13D831ec7).",
    }),
    decimals: Type.Integer({
      minimum: 0,
      maximum: 36,
      default: 6,
      description: "The token's decimals (USDT: 6).",
    }),
    confirmations: Type.Integer({
      minimum: 1,
      maximum: 10_000,
      default: 12,
      description: 'Blocks from the one a transfer is in to the head, that one included, before it counts.',
    }),
    replace_after_blocks: Type.Integer({
      minimum: 1,
      maximum: 10_000,
      default: 10,
      description: 'Blocks a payout transaction may wait unmined before it is replaced with higher fees.',
    }),
    max_fee_per_gas_gwei: gwei('The most a payout transaction may offer per gas, in gwei.', 300),
    max_priority_fee_per_gas_gwei: gwei(
      "The most a payout transaction may tip the block's proposer, in gwei.",
      3,
    ),
    gas_limit: Type.Integer({
      minimum: 21_000,
      maximum: 1_000_000,
      default: 100_000,
      description: "The gas a token transfer may use (Tether's uses about 63,000).",
    }),
    timeout_ms: Type.Integer({
      minimum: 100,
      maximum: 120_000,
      default: 10_000,
      description: 'How long one call to the node may take before it counts as not answered.',
    }),
  },
  { additionalProperties: false },
)

export interface EvmErc20Settings {
  rpc_url: string
  chain_id: number
  token_contract: string
  decimals: number
  confirmations: number
  replace_after_blocks: number
  max_fee_per_gas_gwei: number
  max_priority_fee_per_gas_gwei: number
  gas_limit: number
  timeout_ms: number
}

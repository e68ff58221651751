import { MerchantGateway } from '../../sdk/src/index.ts'
import type { Services } from '../../src/app.ts'
import type { RouteKey } from '../../src/modules/providers/routing.ts'
import type { DeployedToken, EvmNode } from '../../test/helpers/evm.ts'
import { benchMerchant, benchOptions, freePort, type Server, startService } from '../lib.ts'

/**
 * The command line of a chain benchmark: its `own` options, and those both take: `--confirmations` (how deep a
 * transfer must be), `--block-ms` (the pace of blocks), `--source` (serve the sources rather than the build) and
 * `--keep-database`.
 */
export function chainBenchOptions<const Own extends Record<string, string | boolean>>(own: Own) {
  const values = benchOptions({
    ...own,
    confirmations: '3',
    'block-ms': '1000',
    source: false,
    'keep-database': false,
  })
  return { values, confirmations: Number(values.confirmations), blockMs: Number(values['block-ms']) }
}

/**
 * What both chain benchmarks serve: a merchant, an `evm-erc20` test account on `node`'s TestUSDT (holding `secrets`)
 * routed as `route` says, `serve --role api` and one `serve --role worker` (with `workerEnv` besides), and the SDK
 * signed with the merchant's test key. The servers are pushed onto `servers`, for the caller to stop.
 */
export async function serveChainGateway(input: {
  env: Record<string, string>
  node: EvmNode
  usdt: DeployedToken
  merchant: string
  confirmations: number
  secrets: Record<string, string>
  route: Omit<RouteKey, 'merchantUuid' | 'mode'>
  source: boolean
  servers: Server[]
  workerEnv?: Record<string, string>
  more?: (services: Services) => Promise<unknown>
}): Promise<MerchantGateway> {
  const { env, node, usdt } = input
  const created = await benchMerchant(env, input.merchant, async (services) => {
    await input.more?.(services)
    await services.providers.accounts.add({
      name: 'usdt-chain',
      kind: 'evm-erc20',
      mode: 'test',
      settings: {
        rpc_url: node.url,
        chain_id: String(node.chain.id),
        token_contract: usdt.address,
        confirmations: String(input.confirmations),
      },
      secrets: input.secrets,
    })
    await services.providers.routes.set({ merchantUuid: null, mode: 'test', ...input.route }, ['usdt-chain'])
  })
  const api = await startService('api', env, { source: input.source })
  input.servers.push(api)
  const worker = { ...env, METRICS_PORT: String(await freePort()), ...input.workerEnv }
  input.servers.push(await startService('worker', worker, { source: input.source }))
  return new MerchantGateway({
    apiKey: created.keys.test.secret,
    keyId: created.keys.test.key_id,
    baseUrl: api.base,
  })
}

/** Stops what a chain benchmark started, the servers last first, then the node and its database (kept if asked). */
export async function stopChainBench(
  servers: Server[],
  node: EvmNode,
  database: { close(keep: boolean): Promise<void> },
  keep: boolean,
): Promise<void> {
  for (const server of servers.reverse()) await server.stop()
  await node.stop()
  await database.close(keep)
}

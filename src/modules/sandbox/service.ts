import type { Config } from '../../config.ts'
import type { SimulatorConnector } from '../../connectors/simulator/index.ts'
import type { ProviderOutcome } from '../../connectors/types.ts'
import type { TransactionRow } from '../../db/types.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError } from '../../http/errors.ts'
import type { PayoutService } from '../payouts/service.ts'
import type { TransactionService } from '../transactions/service.ts'

export const SIMULATIONS = ['paid', 'failed', 'expired', 'failed-then-paid'] as const
export type Simulation = (typeof SIMULATIONS)[number]

const CALLBACKS: Record<Simulation, ProviderOutcome[]> = {
  paid: ['paid'],
  failed: ['failed'],
  expired: ['expired'],
  'failed-then-paid': ['failed', 'paid'],
}

export const PAYOUT_SIMULATIONS = ['completed', 'failed'] as const
export type PayoutSimulation = (typeof PAYOUT_SIMULATIONS)[number]

export type SandboxService = ReturnType<typeof createSandboxService>

export interface SandboxDeps {
  config: Config
  simulator: SimulatorConnector
  transactions: TransactionService
  payouts: PayoutService
}

/**
 * The sandbox makes the simulated provider send its callbacks, and they enter through the same handler a
 * real provider's callbacks do: nothing here writes a status.
 */
export function createSandboxService(deps: SandboxDeps) {
  return {
    simulateTransaction: (auth: AuthContext, uuid: string, simulation: Simulation) =>
      simulateTransaction(deps, auth, uuid, simulation),
    simulateFromPage: (row: TransactionRow, simulation: 'paid' | 'failed') =>
      simulateFromPage(deps, row, simulation),
    simulatePayout: (auth: AuthContext, uuid: string, simulation: PayoutSimulation) =>
      simulatePayout(deps, auth, uuid, simulation),
  }
}

/** The sandbox rule (docs/API.md, Sandbox): a test key, or a server that is not in production. */
export function assertSandbox(deps: Pick<SandboxDeps, 'config'>, auth: AuthContext): void {
  if (auth.mode !== 'test' && deps.config.appEnv === 'production') {
    throw new AppError('sandbox_unavailable', 'Sandbox operations need a test key in production.')
  }
}

/** The caller's own resource to simulate for, once the sandbox rule allows the call (404 when it is not theirs). */
async function sandboxTarget<R>(
  deps: Pick<SandboxDeps, 'config'>,
  auth: AuthContext,
  getOwned: (auth: AuthContext, uuid: string) => Promise<R>,
  uuid: string,
): Promise<R> {
  assertSandbox(deps, auth)
  return getOwned(auth, uuid)
}

/** The simulated provider's callbacks for `simulation`, through the handler a real provider's go through. */
async function simulate(
  deps: Pick<SandboxDeps, 'simulator' | 'transactions'>,
  transactionUuid: string,
  simulation: Simulation,
): Promise<TransactionRow> {
  const { simulator, transactions } = deps
  let row: TransactionRow | undefined
  for (const outcome of CALLBACKS[simulation]) {
    row = await transactions.receiveProviderCallback(
      simulator.name,
      simulator.callbackFor(transactionUuid, outcome),
    )
  }
  return row as TransactionRow
}

export async function simulateTransaction(
  deps: Pick<SandboxDeps, 'config' | 'simulator' | 'transactions'>,
  auth: AuthContext,
  uuid: string,
  simulation: Simulation,
) {
  const owned = await sandboxTarget(deps, auth, deps.transactions.getOwned, uuid)
  return deps.transactions.toView(await simulate(deps, owned.uuid, simulation))
}

/** The hosted page's test-mode buttons: the same simulated callbacks, for a test-mode transaction only. */
export async function simulateFromPage(
  deps: Pick<SandboxDeps, 'simulator' | 'transactions'>,
  row: TransactionRow,
  simulation: 'paid' | 'failed',
) {
  if (row.mode !== 'test')
    throw new AppError('sandbox_unavailable', 'Only test-mode payments can be simulated from the page.')
  return simulate(deps, row.uuid, simulation)
}

/** The provider's callback that the payout was paid out or refused, through the one payout handler. */
export async function simulatePayout(
  deps: Pick<SandboxDeps, 'config' | 'simulator' | 'payouts'>,
  auth: AuthContext,
  uuid: string,
  simulation: PayoutSimulation,
) {
  const { payouts, simulator } = deps
  const owned = await sandboxTarget(deps, auth, payouts.getOwned, uuid)
  const row = await payouts.receiveProviderCallback(simulator.payoutCallbackFor(owned.uuid, simulation))
  return payouts.toView(row)
}

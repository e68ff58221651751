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

/**
 * The sandbox makes the simulated provider send its callbacks, and they enter through the same handler a
 * real provider's callbacks do: nothing here writes a status.
 */
export function createSandboxService(deps: {
  config: Config
  simulator: SimulatorConnector
  transactions: TransactionService
  payouts: PayoutService
}) {
  const { config, simulator, transactions, payouts } = deps

  /** Contract §2: a test key, or a server that is not in production. */
  function assertSandbox(auth: AuthContext): void {
    if (auth.mode !== 'test' && config.appEnv === 'production') {
      throw new AppError('sandbox_unavailable', 'Sandbox operations need a test key in production.')
    }
  }

  /** The simulated provider's callbacks for `simulation`, through the handler a real provider's go through. */
  async function simulate(transactionUuid: string, simulation: Simulation): Promise<TransactionRow> {
    let row: TransactionRow | undefined
    for (const outcome of CALLBACKS[simulation]) {
      row = await transactions.receiveProviderCallback(
        simulator.name,
        simulator.callbackFor(transactionUuid, outcome),
      )
    }
    return row as TransactionRow
  }

  return {
    assertSandbox,

    async simulateTransaction(auth: AuthContext, uuid: string, simulation: Simulation) {
      assertSandbox(auth)
      const owned = await transactions.getOwned(auth, uuid)
      return transactions.toView(await simulate(owned.uuid, simulation))
    },

    /** The hosted page's test-mode buttons: the same simulated callbacks, for a test-mode transaction only. */
    async simulateFromPage(row: TransactionRow, simulation: 'paid' | 'failed') {
      if (row.mode !== 'test')
        throw new AppError('sandbox_unavailable', 'Only test-mode payments can be simulated from the page.')
      return simulate(row.uuid, simulation)
    },

    /** The provider's callback that the payout was paid out or refused, through the one payout handler. */
    async simulatePayout(auth: AuthContext, uuid: string, simulation: PayoutSimulation) {
      assertSandbox(auth)
      const owned = await payouts.getOwned(auth, uuid)
      const row = await payouts.receiveProviderCallback(simulator.payoutCallbackFor(owned.uuid, simulation))
      return payouts.toView(row)
    },
  }
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { type TSchema, Type } from 'typebox'
import { type AuthContext, authOf } from '../../http/auth.ts'
import { errorResponses } from '../../http/errors.ts'
import { KEY_OR_SIGNATURE, type OperationDoc, type RoutesApp } from '../../http/routes.ts'
import { Ref } from '../../http/schemas.ts'
import { PayoutResponse } from '../payouts/schemas.ts'
import { TransactionResponse } from '../transactions/schemas.ts'
import {
  PAYOUT_SIMULATIONS,
  type PayoutSimulation,
  type SandboxService,
  SIMULATIONS,
  type Simulation,
} from './service.ts'

const DESCRIPTIONS: Record<Simulation, string> = {
  paid: 'The simulated provider reports the payment as paid.',
  failed: 'The simulated provider reports the payment as failed.',
  expired: 'The simulated provider reports a timeout: the payment expires.',
  'failed-then-paid':
    'Out of order: a failed callback, then a paid one. The transaction ends paid; both events are sent.',
}

const PAYOUT_DESCRIPTIONS: Record<PayoutSimulation, string> = {
  completed: 'The simulated provider reports the payout as paid out: the reservation leaves the balance.',
  failed: 'The simulated provider reports the payout as refused: the reservation returns to available.',
}

const pascal = (name: string) =>
  name
    .split('-')
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join('')

/**
 * POST a simulation of the provider's callback about one of the caller's `noun`s: a key may call it, with an
 * optional Idempotency-Key; the sandbox rule (docs/API.md, Sandbox) is the service's.
 */
function simulationRoute(
  app: RoutesApp,
  path: string,
  operation: OperationDoc & {
    noun: string
    answer: TSchema
    answered: string
    simulate: (auth: AuthContext, uuid: string) => Promise<unknown>
  },
): void {
  const { noun, answer, answered, simulate, ...doc } = operation
  const ok: TSchema = Ref(answer, { description: answered })
  app.post(
    path,
    {
      config: { auth: 'key', idempotency: 'optional' },
      schema: {
        ...doc,
        security: KEY_OR_SIGNATURE,
        params: Type.Object(
          { uuid: Type.String({ description: `The ${noun} uuid.` }) },
          { additionalProperties: false },
        ),
        response: { 200: ok, ...errorResponses(401, 403, 404) },
      },
    },
    (request) => simulate(authOf(request), request.params.uuid),
  )
}

export const sandboxRoutes: FastifyPluginAsyncTypebox<{ sandbox: SandboxService }> = async (
  app,
  { sandbox },
) => {
  const tags = ['Sandbox']
  for (const simulation of SIMULATIONS)
    simulationRoute(app, `/integration/sandbox/transactions/:uuid/${simulation}`, {
      operationId: `simulateTransaction${pascal(simulation)}`,
      summary: `Sandbox: simulate the provider callback '${simulation}'`,
      description: `${DESCRIPTIONS[simulation]} Goes through the same callback handling as a real provider. Test keys, or any key outside production.`,
      tags,
      noun: 'transaction',
      answer: TransactionResponse,
      answered: 'The transaction after the simulated callback(s).',
      simulate: (auth, uuid) => sandbox.simulateTransaction(auth, uuid, simulation),
    })
  for (const simulation of PAYOUT_SIMULATIONS)
    simulationRoute(app, `/integration/sandbox/payouts/:uuid/${simulation}`, {
      operationId: `simulatePayout${pascal(simulation)}`,
      summary: `Sandbox: simulate the provider's payout callback '${simulation}'`,
      description: `${PAYOUT_DESCRIPTIONS[simulation]} Goes through the same callback handling as a real provider; a payout already completed or failed stays as it is. Test keys, or any key outside production.`,
      tags,
      noun: 'payout',
      answer: PayoutResponse,
      answered: 'The payout after the simulated callback.',
      simulate: (auth, uuid) => sandbox.simulatePayout(auth, uuid, simulation),
    })
}

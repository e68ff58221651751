import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { authOf } from '../../http/auth.ts'
import { errorResponses } from '../../http/errors.ts'
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

const security: Record<string, string[]>[] = [{ ApiKey: [] }, { Signature: [] }]

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

export const sandboxRoutes: FastifyPluginAsyncTypebox<{ sandbox: SandboxService }> = async (
  app,
  { sandbox },
) => {
  for (const simulation of SIMULATIONS) {
    app.post(
      `/integration/sandbox/transactions/:uuid/${simulation}`,
      {
        config: { auth: 'key', idempotency: 'optional' },
        schema: {
          operationId: `simulateTransaction${pascal(simulation)}`,
          summary: `Sandbox: simulate the provider callback '${simulation}'`,
          description: `${DESCRIPTIONS[simulation]} Goes through the same callback handling as a real provider. Test keys, or any key outside production.`,
          tags: ['Sandbox'],
          security,
          params: Type.Object(
            { uuid: Type.String({ description: 'The transaction uuid.' }) },
            { additionalProperties: false },
          ),
          response: {
            200: Ref(TransactionResponse, {
              description: 'The transaction after the simulated callback(s).',
            }),
            ...errorResponses(401, 403, 404),
          },
        },
      },
      (request) => sandbox.simulateTransaction(authOf(request), request.params.uuid, simulation),
    )
  }
  for (const simulation of PAYOUT_SIMULATIONS) {
    app.post(
      `/integration/sandbox/payouts/:uuid/${simulation}`,
      {
        config: { auth: 'key', idempotency: 'optional' },
        schema: {
          operationId: `simulatePayout${pascal(simulation)}`,
          summary: `Sandbox: simulate the provider's payout callback '${simulation}'`,
          description: `${PAYOUT_DESCRIPTIONS[simulation]} Goes through the same callback handling as a real provider; a payout already completed or failed stays as it is. Test keys, or any key outside production.`,
          tags: ['Sandbox'],
          security,
          params: Type.Object(
            { uuid: Type.String({ description: 'The payout uuid.' }) },
            { additionalProperties: false },
          ),
          response: {
            200: Ref(PayoutResponse, { description: 'The payout after the simulated callback.' }),
            ...errorResponses(401, 403, 404),
          },
        },
      },
      (request) => sandbox.simulatePayout(authOf(request), request.params.uuid, simulation),
    )
  }
}

import { Type } from 'typebox'
import { Value } from 'typebox/value'
import { LiteralUnion } from '../../lib/schema.ts'

/** What the acquirer's callbacks say (docs/CONNECTORS.md, Callbacks). */
export const ACQUIRER_EVENT_TYPES = [
  'payment.succeeded',
  'payment.failed',
  'payment.expired',
  'refund.succeeded',
  'refund.failed',
  'payout.completed',
  'payout.failed',
] as const

const AcquirerCallbackBody = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 200 }),
  type: LiteralUnion(ACQUIRER_EVENT_TYPES),
  data: Type.Object({
    /** The acquirer's reference of the payment, refund or payout. */
    reference: Type.String({ minLength: 1, maxLength: 200 }),
    /** Minor units; what the provider took or paid. */
    amount: Type.Optional(Type.Integer({ minimum: 0 })),
    currency: Type.Optional(Type.String({ pattern: '^[A-Z]{3,5}$' })),
    reason: Type.Optional(Type.String({ maxLength: 500 })),
  }),
})
export type AcquirerCallback = Type.Static<typeof AcquirerCallbackBody>

/** The callback a raw body holds, or what is wrong with it (its first fault). */
export function parseAcquirerCallback(body: string): { callback: AcquirerCallback } | { fault: string } {
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return { fault: 'the body is not JSON' }
  }
  const fault = [...Value.Errors(AcquirerCallbackBody, value)][0]
  if (fault) return { fault: `${fault.instancePath || 'the body'} ${fault.message}` }
  return { callback: value as AcquirerCallback }
}

import type { ProviderOutcome } from '../../connectors/types.ts'

import type { TransactionStatus } from '../../db/enums.ts'

export type { TransactionStatus }

export type TransitionResult =
  | { kind: 'applied'; to: TransactionStatus; event: `transaction.${'paid' | 'failed' | 'expired'}` }
  /** The same outcome again: nothing changes and no event is sent. */
  | { kind: 'duplicate' }
  /** An outcome that arrives too late to matter (a failure after the money arrived): recorded, not applied. */
  | { kind: 'stale' }

const SETTLED: readonly TransactionStatus[] = ['paid', 'partially_refunded', 'refunded']

/**
 * The transitions of docs/API.md, The payment lifecycle. Money that arrived is never lost: a late `paid` after
 * `failed` or `expired` is applied; a `failed` or `expired` after the money arrived is not.
 */
export function transition(from: TransactionStatus, outcome: ProviderOutcome): TransitionResult {
  if (outcome === 'paid') {
    if (SETTLED.includes(from)) return { kind: 'duplicate' }
    return { kind: 'applied', to: 'paid', event: 'transaction.paid' }
  }
  if (from === 'pending') return { kind: 'applied', to: outcome, event: `transaction.${outcome}` }
  if (from === outcome) return { kind: 'duplicate' }
  return { kind: 'stale' }
}

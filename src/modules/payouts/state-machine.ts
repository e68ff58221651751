import type { PayoutOutcome } from '../../connectors/types.ts'
import type { PayoutStatus } from '../../db/types.ts'

export type PayoutTransition =
  /** The statuses the payout passes through, in order: each bumps aggregate_version and sends its event. */
  | { kind: 'applied'; steps: Exclude<PayoutStatus, 'pending'>[] }
  /** The same word again: nothing changes and no event is sent. */
  | { kind: 'duplicate' }
  /** A word that contradicts a final status: recorded, not applied (the money has already moved). */
  | { kind: 'stale' }

/**
 * The payout statuses (docs/API.md, Payouts): pending → processing → completed | failed. A provider may refuse
 * a payout it was just handed (pending → failed) or report it done without having said it took it (pending →
 * processing → completed). Completed and failed are final: money that left is not returned by a late failure,
 * and money returned is not paid out again by a late completion.
 */
export function payoutTransition(from: PayoutStatus, outcome: PayoutOutcome): PayoutTransition {
  if (from === 'pending') {
    return { kind: 'applied', steps: outcome === 'completed' ? ['processing', 'completed'] : [outcome] }
  }
  if (from === outcome) return { kind: 'duplicate' }
  if (from === 'processing') return { kind: 'applied', steps: [outcome] }
  return { kind: 'stale' }
}

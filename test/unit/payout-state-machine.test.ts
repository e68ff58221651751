import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { PayoutOutcome } from '../../src/connectors/types.ts'
import type { PayoutStatus } from '../../src/db/types.ts'
import { type PayoutTransition, payoutTransition } from '../../src/modules/payouts/state-machine.ts'

/**
 * The payout statuses (docs/API.md, Payouts): pending → processing → completed | failed; completed and failed are
 * final.
 * Every (status × provider outcome) pair, written out by hand.
 */
const TABLE: [PayoutStatus, PayoutOutcome, PayoutTransition][] = [
  ['pending', 'processing', { kind: 'applied', steps: ['processing'] }],
  // a completion the provider reports without having said it took the payout passes through processing
  ['pending', 'completed', { kind: 'applied', steps: ['processing', 'completed'] }],
  // the provider refused the payout it was just handed
  ['pending', 'failed', { kind: 'applied', steps: ['failed'] }],
  ['processing', 'processing', { kind: 'duplicate' }],
  ['processing', 'completed', { kind: 'applied', steps: ['completed'] }],
  ['processing', 'failed', { kind: 'applied', steps: ['failed'] }],
  // final statuses: the same word again is a duplicate, any other word is stale
  ['completed', 'processing', { kind: 'stale' }],
  ['completed', 'completed', { kind: 'duplicate' }],
  ['completed', 'failed', { kind: 'stale' }],
  ['failed', 'processing', { kind: 'stale' }],
  ['failed', 'completed', { kind: 'stale' }],
  ['failed', 'failed', { kind: 'duplicate' }],
]

describe('payoutTransition', () => {
  for (const [from, outcome, expected] of TABLE) {
    it(`${from} + ${outcome} → ${expected.kind}${expected.kind === 'applied' ? ` ${expected.steps.join(' → ')}` : ''}`, () => {
      assert.deepEqual(payoutTransition(from, outcome), expected)
    })
  }

  it('the table covers every status and outcome pair exactly once', () => {
    const statuses: PayoutStatus[] = ['pending', 'processing', 'completed', 'failed']
    const outcomes: PayoutOutcome[] = ['processing', 'completed', 'failed']
    const pairs = TABLE.map(([from, outcome]) => `${from}/${outcome}`)
    assert.equal(new Set(pairs).size, pairs.length)
    assert.equal(pairs.length, statuses.length * outcomes.length)
    for (const from of statuses)
      for (const outcome of outcomes) assert.ok(pairs.includes(`${from}/${outcome}`))
  })

  it('an applied change always ends on the outcome it was given', () => {
    for (const [from, outcome] of TABLE) {
      const result = payoutTransition(from, outcome)
      if (result.kind === 'applied') assert.equal(result.steps.at(-1), outcome)
    }
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { suiteCommand } from '../helpers/commands.ts'

// The commands over the embedded database; the service under them is tested on both backends
// (test/api/transactions/reviews.test.ts).
describe('payments commands', () => {
  const payments = suiteCommand('payments').run

  it('lists no reviews on a new database', async () => {
    const listed = await payments('reviews', '--open')
    assert.equal(listed.code, 0, listed.output)
    assert.equal(listed.output.trim(), '')
  })

  it('refuses to resolve the review of a payment that does not exist, with the reason and exit code 2', async () => {
    for (const [action, uuid] of [
      ['accept', '00000000-0000-4000-8000-000000000000'],
      ['refund', 'not-a-uuid'],
    ] as const) {
      const refused = await payments('review', action, uuid)
      assert.equal(refused.code, 2, refused.output)
      assert.match(refused.output, /merchant-gateway: No such payment\./)
    }
  })

  it('refuses a limit out of range', async () => {
    const refused = await payments('reviews', '--limit', '0')
    assert.notEqual(refused.code, 0)
    assert.match(refused.output, /--limit must be a whole number from 1 to 1000/)
  })
})

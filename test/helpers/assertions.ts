import assert from 'node:assert/strict'

/**
 * Asserts that `actual` has each field of `expected` with that value (strictly, deeply), and says nothing of
 * its other fields. A mismatch shows every listed field side by side.
 */
export function assertFields(
  actual: Record<string, unknown>,
  expected: Record<string, unknown>,
  message?: string,
) {
  const picked = Object.fromEntries(Object.keys(expected).map((key) => [key, actual[key]]))
  assert.deepEqual(picked, expected, message)
}

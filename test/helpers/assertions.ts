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

/** The `meta` of a list whose rows all fit on one page of the default size: no cursor either way. */
export const onePageMeta = (path: string) => ({
  per_page: 25,
  next_cursor: null,
  prev_cursor: null,
  path: `http://gateway.test${path}`,
})

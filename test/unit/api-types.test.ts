import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { apiTypes, DASHBOARD_TYPES, MERCHANT_TYPES } from '../../scripts/api-types.ts'

describe("the API clients' generated types", () => {
  it('are what openapi-typescript makes of the two documents today (else: npm run generate:client)', async () => {
    const fresh = await apiTypes()
    assert.deepEqual([...fresh.keys()].sort(), [DASHBOARD_TYPES, MERCHANT_TYPES].sort())
    assert.ok(fresh.get(MERCHANT_TYPES)?.includes('"/integration/transactions"'))
    assert.ok(!fresh.get(MERCHANT_TYPES)?.includes('"/dashboard/api/'))
    assert.ok(fresh.get(DASHBOARD_TYPES)?.includes('"/dashboard/api/session"'))
    assert.ok(!fresh.get(DASHBOARD_TYPES)?.includes('"/integration/'))
    for (const [file, text] of fresh)
      assert.equal(
        readFileSync(file, 'utf8'),
        text,
        `${file} is out of date: run \`npm run generate:client\``,
      )
  })
})

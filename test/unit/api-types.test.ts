import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { apiTypes, TYPES_FILES } from '../../scripts/api-types.ts'

describe("the API clients' generated types", () => {
  it('are what openapi-typescript makes of the served document today (else: npm run generate:client)', async () => {
    const fresh = await apiTypes()
    assert.ok(fresh.includes('"/integration/transactions"'))
    for (const file of TYPES_FILES)
      assert.equal(
        readFileSync(file, 'utf8'),
        fresh,
        `${file} is out of date: run \`npm run generate:client\``,
      )
  })
})

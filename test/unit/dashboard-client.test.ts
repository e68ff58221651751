import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { CLIENT_TYPES, clientTypes } from '../../scripts/dashboard-client.ts'

describe("the dashboard's API types", () => {
  it('are what openapi-typescript makes of the served document today (else: npm run generate:client)', async () => {
    const fresh = await clientTypes()
    assert.ok(fresh.includes("'/integration/transactions'") || fresh.includes('"/integration/transactions"'))
    assert.equal(
      readFileSync(CLIENT_TYPES, 'utf8'),
      fresh,
      'dashboard/src/api/schema.d.ts is out of date: run `npm run generate:client`',
    )
  })
})

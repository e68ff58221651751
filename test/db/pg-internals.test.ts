import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { onPostgres } from '../helpers/postgres.ts'
import { ROOT } from '../helpers/program.ts'

/**
 * What the driver layer (src/db/driver/: shaped-query.ts, prepared.ts) takes from node-postgres beyond its
 * public API: its Result and value mapping modules, the Query's own steps, and the Connection's messages, state
 * and socket. node-postgres is pinned to one version; an upgrade that moves or renames any of these fails here,
 * by name, before it can fail on the money path.
 */

onPostgres()
const require = createRequire(import.meta.url)

describe('the node-postgres internals the driver layer uses', () => {
  it('pg is pinned to the exact version installed', () => {
    const manifest = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8'))
    const installed = JSON.parse(readFileSync(require.resolve('pg/package.json'), 'utf8')).version
    assert.equal(manifest.dependencies.pg, installed, 'an exact version, not a range')
  })

  it('pg/lib/result.js builds parsers and rows from a field description', () => {
    const Result = require('pg/lib/result.js')
    const result = new Result(undefined, pg.types)
    result.addFields([{ name: 'n', dataTypeID: 23, format: 'text' }])
    assert.ok(Array.isArray(result._parsers) && result._parsers.length === 1, '_parsers')
    assert.equal(typeof result._prebuiltEmptyResultObject, 'object', '_prebuiltEmptyResultObject')
    assert.deepEqual(result.parseRow(['42']), { n: 42 })
    assert.deepEqual(
      result.fields.map((f: { name: string }) => f.name),
      ['n'],
    )
  })

  it('pg/lib/utils.js maps values as a Bind sends them', () => {
    const { prepareValue } = require('pg/lib/utils.js')
    assert.equal(typeof prepareValue, 'function')
    assert.equal(prepareValue(12), '12')
    assert.equal(prepareValue(null), null)
    assert.ok(Buffer.isBuffer(prepareValue(Buffer.from('x'))))
  })

  it('a Query keeps the steps and state the shaped query overrides and sets', () => {
    const proto = pg.Query.prototype as unknown as Record<string, unknown>
    for (const method of ['prepare', 'hasBeenParsed', 'handleError', 'handleDataRow', 'handleRowDescription'])
      assert.equal(typeof proto[method], 'function', method)
    const query = new pg.Query('SELECT 1', []) as unknown as Record<string, unknown>
    for (const field of ['name', 'values', 'portal', 'binary', '_result', '_results'])
      assert.ok(field in query, field)
    // Rows are kept for the callback when this flag is set, as the query's DataRow handling reads it.
    assert.match(readFileSync(require.resolve('pg/lib/query.js'), 'utf8'), /if \(this\._accumulateRows\)/)
  })

  describe('on a connected client', () => {
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL })
    before(() => client.connect())
    after(() => client.end())

    it("the Connection's messages, prepared-statement state and socket", async () => {
      const connection = (client as unknown as { connection: Record<string, unknown> }).connection
      for (const message of ['parse', 'bind', 'execute', 'sync', 'close'])
        assert.equal(typeof connection[message], 'function', message)
      for (const state of ['parsedStatements', 'submittedNamedStatements'])
        assert.equal(typeof connection[state], 'object', state)
      const stream = connection.stream as { cork?: unknown; uncork?: unknown }
      assert.equal(typeof stream.cork, 'function')
      assert.equal(typeof stream.uncork, 'function')
      // A named statement is recorded where hasBeenParsed looks for it.
      await client.query({ name: 'mg_internals_probe', text: 'SELECT 1 AS one' })
      assert.ok('mg_internals_probe' in (connection.parsedStatements as object))
    })
  })
})

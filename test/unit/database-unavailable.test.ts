import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DatabaseTimeoutError } from '../../src/db/bounded.ts'
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts'
import { renderError } from '../../src/http/errors.ts'

/** An error as node-postgres or Node gives it: a message and a code. */
const failure = (message: string, code?: string): Error =>
  Object.assign(new Error(message), code ? { code } : {})

describe('isDatabaseUnavailable', () => {
  // An error says the database is out of reach in one of three ways (src/db/unavailable.ts). The server's SQLSTATE:
  const fromServer: [string, Error][] = [
    [
      'admin shutdown (pg_terminate_backend)',
      failure('terminating connection due to administrator command', '57P01'),
    ],
    ['crash shutdown', failure('terminating connection because of crash of another server process', '57P02')],
    ['starting up', failure('the database system is starting up', '57P03')],
    ['too many connections', failure('sorry, too many clients already', '53300')],
    [
      'read only (a primary demoted under the session)',
      failure('cannot execute INSERT in a read-only transaction', '25006'),
    ],
    ['connection failure (class 08)', failure('could not receive data from client', '08006')],
    ['connection exception (class 08)', failure('connection exception', '08000')],
    [
      'database not accepting connections',
      failure('database "x" is not currently accepting connections', '55000'),
    ],
  ]
  // The socket's error code:
  const fromSocket: [string, Error][] = [
    ['refused', failure('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['reset', failure('read ECONNRESET', 'ECONNRESET')],
    ['broken pipe', failure('write EPIPE', 'EPIPE')],
    ['timed out', failure('connect ETIMEDOUT', 'ETIMEDOUT')],
    [
      'every address refused',
      Object.assign(new AggregateError([failure('a', 'ECONNREFUSED'), failure('b', 'ECONNREFUSED')]), {
        code: undefined,
      }),
    ],
  ]
  // The client's words alone:
  const fromClient: [string, Error][] = [
    ['terminated unexpectedly', failure('Connection terminated unexpectedly')],
    ['terminated', failure('Connection terminated')],
    ['connect timeout of the client', failure('Connection terminated due to connection timeout')],
    ['not queryable', failure('Client has encountered a connection error and is not queryable')],
    ['pool timeout', failure('timeout exceeded when trying to connect')],
    ['a statement past its bound', new DatabaseTimeoutError(10_000)],
  ]
  for (const [what, error] of [...fromServer, ...fromSocket, ...fromClient])
    it(`is true for ${what}`, () => assert.equal(isDatabaseUnavailable(error), true))

  const other: [string, unknown][] = [
    ['a unique violation', failure('duplicate key value violates unique constraint', '23505')],
    ['a syntax error', failure('syntax error at or near "x"', '42601')],
    ['another 55000', failure('operation requires a prior lock', '55000')],
    ['a serialization failure', failure('could not serialize access', '40001')],
    ['a plain error', new Error('boom')],
    ['a string', 'Connection terminated'],
    ['null', null],
  ]
  for (const [what, error] of other)
    it(`is false for ${what}`, () => assert.equal(isDatabaseUnavailable(error), false))

  it('renders as 503 unavailable with Retry-After, in words that say nothing of the database', () => {
    const rendered = renderError(failure('terminating connection due to administrator command', '57P01'))
    assert.equal(rendered.status, 503)
    assert.equal(rendered.code, 'unavailable')
    assert.deepEqual(rendered.headers, { 'retry-after': '1' })
    assert.doesNotMatch(rendered.message, /terminat|administrator|connection/i)
    assert.equal(renderError(new Error('boom')).status, 500)
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AppError } from '../../src/http/errors.ts'
import { type Cursor, decodeCursor, encodeCursor, filterDigest, pageFrom } from '../../src/http/pagination.ts'
import { newId } from '../../src/lib/ids.ts'

const digest = filterDigest({ status: 'paid', currency: 'RUB' })

/** Asserts `fn` throws a 422 validation_failed naming the cursor. */
function assertCursorRefused(fn: () => unknown, message?: RegExp) {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof AppError, String(error))
    assert.equal(error.code, 'validation_failed')
    assert.equal(error.status, 422)
    assert.ok(error.errors?.cursor?.length, JSON.stringify(error.errors))
    if (message) assert.match(error.errors?.cursor?.[0] ?? '', message)
    return true
  })
}

describe('cursors', () => {
  it('round-trips both directions at millisecond precision', () => {
    for (const direction of ['next', 'prev'] as const) {
      const cursor: Cursor = { direction, createdAt: '2026-11-22T10:15:30.123Z', uuid: newId() }
      const text = encodeCursor(cursor, digest)
      assert.match(text, /^[A-Za-z0-9_-]+$/)
      assert.deepEqual(decodeCursor(text, digest), cursor)
    }
  })

  it('refuses a cursor issued for other filters', () => {
    const text = encodeCursor(
      { direction: 'next', createdAt: new Date().toISOString(), uuid: newId() },
      digest,
    )
    assertCursorRefused(() => decodeCursor(text, filterDigest({ status: 'failed' })), /filters/)
  })

  it('refuses garbage', () => {
    const json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const uuid = newId()
    const at = '2026-11-22T10:15:30.123Z'
    for (const text of [
      'garbage',
      '!!!!',
      Buffer.from('not json').toString('base64url'),
      json({ direction: 'next' }),
      json(['n', at, uuid]),
      json(['x', at, uuid, digest]),
      json(['n', 'yesterday', uuid, digest]),
      json(['n', 12, uuid, digest]),
      json(['n', at, 'not-a-uuid', digest]),
      json(['n', at, uuid.toUpperCase(), digest]),
      json(['n', at, uuid, digest, 'extra']),
      json(null),
    ]) {
      assertCursorRefused(() => decodeCursor(text, digest))
    }
  })
})

describe('filterDigest', () => {
  it('ignores absent filters and their order, and differs for different filters', () => {
    assert.equal(filterDigest({ a: '1', b: undefined, c: null }), filterDigest({ a: '1' }))
    assert.equal(filterDigest({ a: '1', b: '2' }), filterDigest({ b: '2', a: '1' }))
    assert.notEqual(filterDigest({ a: '1' }), filterDigest({ a: '2' }))
    assert.notEqual(filterDigest({ a: '1' }), filterDigest({ b: '1' }))
    assert.match(filterDigest({}), /^[0-9a-f]{16}$/)
  })
})

describe('pageFrom', () => {
  // Newest first: row 0 is the newest.
  const rows = Array.from({ length: 5 }, (_, i) => ({
    created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, 10 - i)),
    uuid: newId(),
  }))

  it('first page: a next cursor when there are more rows, no prev cursor', () => {
    const page = pageFrom(rows.slice(0, 3), 2, null, digest)
    assert.deepEqual(page.data, rows.slice(0, 2))
    assert.equal(page.prev_cursor, null)
    assert.deepEqual(decodeCursor(page.next_cursor as string, digest), {
      direction: 'next',
      createdAt: rows[1]?.created_at.toISOString(),
      uuid: rows[1]?.uuid,
    })
  })

  it('last page: no next cursor', () => {
    const page = pageFrom(rows.slice(0, 2), 2, null, digest)
    assert.equal(page.next_cursor, null)
    assert.equal(page.prev_cursor, null)
  })

  it('going back: rows arrive oldest first and are turned newest first', () => {
    const cursor: Cursor = {
      direction: 'prev',
      createdAt: rows[4]?.created_at.toISOString() as string,
      uuid: '',
    }
    const fetched = [rows[3], rows[2], rows[1]] as typeof rows
    const page = pageFrom(fetched, 2, cursor, digest)
    assert.deepEqual(page.data, [rows[2], rows[3]])
    assert.equal(decodeCursor(page.prev_cursor as string, digest).uuid, rows[2]?.uuid)
    assert.equal(decodeCursor(page.next_cursor as string, digest).uuid, rows[3]?.uuid)
  })
})

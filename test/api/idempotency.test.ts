import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { buildApp, createLogger, createServices, type Services } from '../../src/app.ts'
import { type Db, migrateToLatest } from '../../src/db/index.ts'
import { fingerprint, fingerprintKey } from '../../src/http/idempotency.ts'
import { deferred } from '../helpers/deferred.ts'
import {
  backends,
  call,
  DEMO_TEST_RATES,
  freshDatabase,
  newTransaction,
  type TestContext,
  type TestMerchant,
  testConfig,
} from '../helpers/harness.ts'
import { suiteContext } from '../helpers/suite.ts'

const CREATE = '/integration/transactions'
const freshKey = (label = 'idem') => `${label}-${randomBytes(8).toString('hex')}`

async function transactionsWithExternalId(db: Db, externalId: string) {
  return db
    .selectFrom('transactions')
    .select(['uuid', 'merchant_uuid', 'mode'])
    .where('external_id', '=', externalId)
    .execute()
}

async function idempotencyRow(db: Db, merchantUuid: string, key: string, mode: 'test' | 'live' = 'test') {
  return db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('merchant_uuid', '=', merchantUuid)
    .where('mode', '=', mode)
    .where('key', '=', key)
    .executeTakeFirst()
}

/** `again` is `original` replayed: the same status and body byte for byte, marked Idempotent-Replayed. */
function assertReplayOf(
  again: { statusCode: number; headers: Record<string, unknown>; body: string },
  original: { statusCode: number; body: string },
) {
  assert.equal(again.statusCode, original.statusCode)
  assert.equal(again.headers['idempotent-replayed'], 'true')
  assert.equal(again.body, original.body)
}

/** A refusal: `status`, with the error `code`. */
function assertRefused(
  res: { statusCode: number; json(): { error: { code: string } } },
  status: number,
  code: string,
) {
  assert.equal(res.statusCode, status)
  assert.equal(res.json().error.code, code)
}

for (const backend of backends()) {
  describe(`idempotency (${backend})`, () => {
    const ctx = suiteContext(backend)

    /** The key stayed free: no row holds it, and a valid request with it creates afresh (no replay). */
    const assertKeyFree = async (key: string, body: unknown) => {
      assert.equal(await idempotencyRow(ctx.db, ctx.merchant.uuid, key), undefined)
      const valid = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(valid.statusCode, 201, valid.body)
      assert.equal(valid.headers['idempotent-replayed'], undefined)
    }

    it('replays the stored status, headers and body byte for byte, marked Idempotent-Replayed', async () => {
      const key = freshKey()
      const body = newTransaction({ metadata: { order: 'A-1' } })
      const first = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(first.statusCode, 201, first.body)
      assert.equal(first.headers['idempotent-replayed'], undefined)

      for (let i = 0; i < 2; i++) {
        const again = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
        assertReplayOf(again, first)
        assert.deepEqual(again.rawPayload, first.rawPayload)
        assert.equal(again.headers.location, first.headers.location)
        assert.equal(again.headers.location, `/integration/transactions/${first.json().uuid}`)
        assert.equal(again.headers['content-type'], first.headers['content-type'])
        assert.ok(again.headers['x-request-id'])
        assert.notEqual(again.headers['x-request-id'], first.headers['x-request-id'])
      }
      assert.equal((await transactionsWithExternalId(ctx.db, body.external_id)).length, 1)
    })

    it('replays a stored 4xx outcome too (a duplicate external_id answered 409)', async () => {
      const body = newTransaction()
      assert.equal((await call(ctx, 'POST', CREATE, body)).statusCode, 201)
      const key = freshKey()
      const conflict = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assertRefused(conflict, 409, 'conflict')
      const again = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assertReplayOf(again, conflict)
    })

    it('replays whichever credential form the repeat uses: the scope is the merchant and mode', async () => {
      const key = freshKey()
      const body = newTransaction()
      const first = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key, auth: 'signature' })
      assert.equal(first.statusCode, 201, first.body)
      const again = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key, auth: 'apiKey' })
      assertReplayOf(again, first)
    })

    it('the same key with another body or path is 422 idempotency_key_reused, and the stored outcome stays', async () => {
      const key = freshKey()
      const body = newTransaction()
      const first = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(first.statusCode, 201, first.body)

      const otherBody = await call(
        ctx,
        'POST',
        CREATE,
        { ...body, amount: body.amount + 1 },
        { idempotencyKey: key },
      )
      assertRefused(otherBody, 422, 'idempotency_key_reused')
      assert.equal(otherBody.headers['idempotent-replayed'], undefined)

      // The same JSON value written differently is different bytes, hence a different request.
      const reformatted = await call(ctx, 'POST', CREATE, undefined, {
        idempotencyKey: key,
        rawBody: JSON.stringify(body, null, 2),
      })
      assertRefused(reformatted, 422, 'idempotency_key_reused')

      const otherPath = await call(ctx, 'POST', `${CREATE}?source=retry`, body, { idempotencyKey: key })
      assertRefused(otherPath, 422, 'idempotency_key_reused')

      const again = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assertReplayOf(again, first)
      assert.equal((await transactionsWithExternalId(ctx.db, body.external_id)).length, 1)
    })

    it('refuses invalid keys with 400 idempotency_key_invalid', async () => {
      for (const key of ['', 'k'.repeat(256), 'clé-ü', 'tab\there', 'nul\u0001char', 'del\u007fchar']) {
        const body = newTransaction()
        const res = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
        assert.equal(res.statusCode, 400, `${JSON.stringify(key)}: ${res.body}`)
        assert.equal(res.json().error.code, 'idempotency_key_invalid')
        assert.equal((await transactionsWithExternalId(ctx.db, body.external_id)).length, 0)
      }
    })

    it('accepts any 1-255 printable ASCII characters', async () => {
      const printable = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('')
      for (const key of [
        'k',
        `x${'k'.repeat(254)}`,
        `${printable.trim()}-${randomBytes(4).toString('hex')}`,
      ]) {
        const body = newTransaction()
        const first = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
        assert.equal(first.statusCode, 201, `${key.length}: ${first.body}`)
        const again = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
        assert.equal(again.headers['idempotent-replayed'], 'true')
        assert.equal(again.body, first.body)
      }
    })

    it('is scoped by merchant and mode: another merchant or the live key gets its own transaction', async () => {
      const key = freshKey()
      const body = newTransaction()
      const mine = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      const theirs = await call(ctx, 'POST', CREATE, body, {
        idempotencyKey: key,
        as: { merchant: ctx.other },
      })
      const live = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key, as: { mode: 'live' } })
      for (const res of [mine, theirs, live]) {
        assert.equal(res.statusCode, 201, res.body)
        assert.equal(res.headers['idempotent-replayed'], undefined)
      }
      const uuids = new Set([mine, theirs, live].map((r) => r.json().uuid))
      assert.equal(uuids.size, 3)
      assert.equal(live.json().mode, 'live')
      const rows = await transactionsWithExternalId(ctx.db, body.external_id)
      assert.deepEqual(
        rows.map((r) => `${r.merchant_uuid}/${r.mode}`).sort(),
        [`${ctx.merchant.uuid}/live`, `${ctx.merchant.uuid}/test`, `${ctx.other.uuid}/test`].sort(),
      )
      // Each scope replays its own outcome.
      const mineAgain = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(mineAgain.body, mine.body)
      const liveAgain = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key, as: { mode: 'live' } })
      assert.equal(liveAgain.body, live.body)
      assert.equal(liveAgain.headers['idempotent-replayed'], 'true')
    })

    it('a request refused by validation does not own the key', async () => {
      const key = freshKey()
      const body = newTransaction()
      const invalid = await call(ctx, 'POST', CREATE, { ...body, amount: 0 }, { idempotencyKey: key })
      assertRefused(invalid, 422, 'validation_failed')
      const unknownField = await call(ctx, 'POST', CREATE, { ...body, amout: 1 }, { idempotencyKey: key })
      assertRefused(unknownField, 422, 'validation_failed')
      await assertKeyFree(key, body)
    })

    it('a request refused by authentication does not own the key', async () => {
      const key = freshKey()
      const body = newTransaction()
      const wrongKey = await call(ctx, 'POST', CREATE, body, {
        idempotencyKey: key,
        headers: { 'x-api-key': 'sk_test_not_a_real_key' },
      })
      assert.equal(wrongKey.statusCode, 401)
      // A known key_id with a bad signature names the merchant, and still must not claim its key.
      const badSignature = await call(ctx, 'POST', CREATE, body, {
        idempotencyKey: key,
        auth: 'signature',
        headers: {
          'x-signature': `key_id=${ctx.merchant.keys.test.key_id},t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`,
        },
      })
      assertRefused(badSignature, 401, 'signature_invalid')
      await assertKeyFree(key, body)
    })

    it('a request the service refuses for its content (unsupported_currency) does not keep the key', async () => {
      const key = freshKey()
      const refused = await call(ctx, 'POST', CREATE, newTransaction({ currency: 'CHF' }), {
        idempotencyKey: key,
      })
      assertRefused(refused, 422, 'unsupported_currency')
      // Corrected, the same key makes the payment.
      await assertKeyFree(key, newTransaction({ currency: 'EUR' }))
    })

    it('a key past its retention (expires_at) is free again', async () => {
      const key = freshKey()
      const first = await call(ctx, 'POST', CREATE, newTransaction(), { idempotencyKey: key })
      assert.equal(first.statusCode, 201)
      await ctx.db
        .updateTable('idempotency_keys')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('merchant_uuid', '=', ctx.merchant.uuid)
        .where('key', '=', key)
        .execute()

      // A different body would be 422 within retention; past it, the key starts over.
      const body = newTransaction()
      const second = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(second.statusCode, 201, second.body)
      assert.equal(second.headers['idempotent-replayed'], undefined)
      assert.notEqual(second.json().uuid, first.json().uuid)
      const row = await idempotencyRow(ctx.db, ctx.merchant.uuid, key)
      assert.equal(row?.state, 'done')
      assert.ok(row && row.expires_at.getTime() > Date.now() + 6 * 24 * 3600 * 1000)

      const again = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, second.body)
    })

    /** A row as a request that claimed the key and then died (or is still working) leaves it. */
    async function claimAsIfRunning(key: string, payload: string, lockedUntil: Date) {
      const print = fingerprint(
        {
          method: 'POST',
          url: CREATE,
          rawBody: Buffer.from(payload),
        } as FastifyRequest,
        fingerprintKey(ctx.config.masterKey),
      )
      const now = Date.now()
      await ctx.db
        .insertInto('idempotency_keys')
        .values({
          merchant_uuid: ctx.merchant.uuid,
          mode: 'test',
          key,
          fingerprint: print,
          state: 'running',
          owner: 'a-request-that-died',
          locked_until: lockedUntil,
          created_at: new Date(now - 120_000),
          expires_at: new Date(now + 7 * 24 * 3600 * 1000),
        })
        .execute()
    }

    it('a running key whose lease is still held answers 409 in progress with Retry-After: 1', async () => {
      const key = freshKey()
      const body = newTransaction()
      await claimAsIfRunning(key, JSON.stringify(body), new Date(Date.now() + 60_000))
      const res = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assertRefused(res, 409, 'idempotency_request_in_progress')
      assert.equal(res.headers['retry-after'], '1')
      assert.equal((await transactionsWithExternalId(ctx.db, body.external_id)).length, 0)
    })

    it('a running key whose lease (locked_until) ran out is taken over by the retry', async () => {
      const key = freshKey()
      const body = newTransaction()
      await claimAsIfRunning(key, JSON.stringify(body), new Date(Date.now() - 1000))
      const res = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.headers['idempotent-replayed'], undefined)
      assert.equal((await transactionsWithExternalId(ctx.db, body.external_id)).length, 1)
      const row = await idempotencyRow(ctx.db, ctx.merchant.uuid, key)
      assert.equal(row?.state, 'done')
      assert.equal(row?.response_status, 201)

      const again = await call(ctx, 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, res.body)
    })
  })

  describe(`idempotency while a request is held or fails (${backend})`, () => {
    type Create = Services['transactions']['create']
    let app: FastifyInstance
    let db: Db
    let drop: () => Promise<void>
    let merchant: TestMerchant
    let original: Create
    /** Consumed by the next create call: lets a test hold it or make it fail. */
    let interceptor: ((...args: Parameters<Create>) => ReturnType<Create>) | null = null
    const logs: string[] = []
    // call() only needs the app and the merchant.
    const ctxOf = () => ({ app, merchant }) as unknown as TestContext

    before(async () => {
      const fresh = await freshDatabase(backend)
      db = fresh.handle.db
      drop = fresh.drop
      await migrateToLatest(db)
      const config = testConfig()
      const services = createServices(db, config)
      original = services.transactions.create
      services.transactions.create = (...args) => {
        const intercept = interceptor
        interceptor = null
        return intercept ? intercept(...args) : original(...args)
      }
      const sink = new Writable({
        write(chunk, _enc, done) {
          logs.push(chunk.toString())
          done()
        },
      })
      const logger = createLogger('info', sink)
      app = await buildApp({ db, config, services, logger })
      await app.ready()
      await services.rates.setMarketRate('RUB', DEMO_TEST_RATES.RUB as string)
      const created = await services.merchants.createMerchant({ name: 'Held Shop' })
      merchant = { uuid: created.merchant.uuid, keys: created.keys }
    })
    after(async () => {
      await app.close()
      await drop()
    })

    it('a second request while the first still runs gets 409 idempotency_request_in_progress, Retry-After: 1', async () => {
      const { promise: entered, resolve: signalEntered } = deferred()
      const { promise: gate, resolve: release } = deferred()
      interceptor = async (...args) => {
        signalEntered()
        await gate
        return original(...args)
      }

      const key = freshKey()
      const body = newTransaction()
      const first = call(ctxOf(), 'POST', CREATE, body, { idempotencyKey: key })
      await entered

      const second = await call(ctxOf(), 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(second.statusCode, 409, second.body)
      assert.equal(second.json().error.code, 'idempotency_request_in_progress')
      assert.equal(second.headers['retry-after'], '1')
      assert.equal(second.headers['idempotent-replayed'], undefined)
      // A different request under the running key is refused as a reuse, not queued.
      const other = await call(ctxOf(), 'POST', CREATE, { ...body, amount: 1 }, { idempotencyKey: key })
      assertRefused(other, 422, 'idempotency_key_reused')
      assert.equal((await transactionsWithExternalId(db, body.external_id)).length, 0)

      release()
      const done = await first
      assert.equal(done.statusCode, 201, done.body)
      assert.equal(done.headers['idempotent-replayed'], undefined)

      const third = await call(ctxOf(), 'POST', CREATE, body, { idempotencyKey: key })
      assertReplayOf(third, done)
      assert.equal((await transactionsWithExternalId(db, body.external_id)).length, 1)
    })

    it('a 5xx is not stored: 500 internal_error without internals, and the same key may be retried', async () => {
      const internals =
        'duplicate key in "transactions" while running INSERT INTO transactions (uuid) VALUES ($1)'
      interceptor = async () => {
        throw new Error(internals)
      }
      const key = freshKey()
      const body = newTransaction()
      const failed = await call(ctxOf(), 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(failed.statusCode, 500)
      const error = failed.json().error
      assert.equal(error.code, 'internal_error')
      assert.deepEqual(Object.keys(error).sort(), ['code', 'details', 'message', 'request_id'])
      assert.equal(error.request_id, failed.headers['x-request-id'])
      assert.equal(error.details, null)
      for (const leak of ['INSERT', 'VALUES', 'duplicate', 'stack', '.ts:']) {
        assert.ok(!failed.body.includes(leak), `the 500 body reveals "${leak}": ${failed.body}`)
      }
      assert.doesNotMatch(failed.body, /\bat \S+ \(/, 'the 500 body carries a stack frame')
      // The operator still finds the cause in the log, under the request id.
      const logged = logs
        .map((line) => JSON.parse(line))
        .find((entry) => entry.reqId === error.request_id && entry.err)
      assert.equal(logged?.err?.message, internals, logs.join(''))
      assert.equal(await idempotencyRow(db, merchant.uuid, key), undefined)

      const retry = await call(ctxOf(), 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(retry.statusCode, 201, retry.body)
      assert.equal(retry.headers['idempotent-replayed'], undefined)
      const again = await call(ctxOf(), 'POST', CREATE, body, { idempotencyKey: key })
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(again.body, retry.body)
      assert.equal((await transactionsWithExternalId(db, body.external_id)).length, 1)
    })
  })
}

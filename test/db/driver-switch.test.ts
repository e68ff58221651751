import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import type { DatabaseDriver } from '../../src/db/driver/mode.ts'
import { claimKey, findKey, storeAnswer } from '../../src/db/idempotency-keys.ts'
import type { Db, DbHandle } from '../../src/db/index.ts'
import type { Scope } from '../../src/db/scope.ts'
import { ensureAccounts, postEntries } from '../../src/modules/ledger/repository.ts'
import * as refunds from '../../src/modules/refunds/repository.ts'
import * as transactions from '../../src/modules/transactions/repository.ts'
import { type Backend, backends, migratedDatabase, transactionRow } from '../helpers/harness.ts'
import { ROOT } from '../helpers/program.ts'

/**
 * DATABASE_DRIVER: `plain` is Kysely over an ordinary node-postgres pool, without the driver layer
 * (src/db/driver/), and gives the same rows, types and errors as the layer does.
 */

/**
 * A process of its own (whose modules are loaded fresh) that opens a database with `driver`, runs statements
 * with parameters on one connection, and reports what it took from node-postgres: the `pg/lib/…` modules our
 * code required, what it handed to `Client.query`, and how many statements the connection holds prepared.
 */
const PROBE = `
import Module from 'node:module'
const required = []
const load = Module.prototype.require
Module.prototype.require = function (id, ...rest) {
  if (id.startsWith('pg/lib/')) required.push(id)
  return load.call(this, id, ...rest)
}
const { default: pg } = await import('pg')
const sent = new Set()
const query = pg.Client.prototype.query
pg.Client.prototype.query = function (config, ...rest) {
  sent.add(typeof config === 'string' ? 'text' : config.constructor.name)
  return query.call(this, config, ...rest)
}
const [driver, url] = process.argv.slice(1)
const { connectPglite, connectPostgres } = await import(${JSON.stringify(`${ROOT}src/db/index.ts`)})
const { sql } = await import('kysely')
const handle = url ? await connectPostgres(url, 4, undefined, 1, driver) : await connectPglite(null, { driver })
const prepared = await handle.db.connection().execute(async (conn) => {
  for (let n = 0; n < 3; n++) await sql\`SELECT \${n}::int AS n\`.execute(conn)
  await conn.transaction().execute((trx) => sql\`SELECT \${1}::int AS n\`.execute(trx))
  return (await sql\`SELECT count(*)::int AS n FROM pg_prepared_statements\`.execute(conn)).rows[0].n
})
await handle.close()
console.log(JSON.stringify({ driver: handle.driver, required, sent: [...sent].sort(), prepared }))
`

interface Probed {
  driver: DatabaseDriver
  required: string[]
  sent: string[]
  prepared: number
}

function probe(driver: DatabaseDriver, backend: Backend): Promise<Probed> {
  const args = ['--import', 'tsx', '--input-type=module', '-e', PROBE, driver]
  if (backend === 'postgres') args.push(process.env.TEST_DATABASE_URL as string)
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`the probe exited with ${code}:\n${out}`))
      resolve(JSON.parse(out.trim().split('\n').at(-1) as string))
    })
  })
}

/** Every key of a value and of the objects in it, in order: rows must agree on their columns' order too. */
const keyOrder = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(keyOrder)
    : value !== null && typeof value === 'object' && !(value instanceof Date) && !Buffer.isBuffer(value)
      ? Object.entries(value).map(([key, inner]) => [key, keyOrder(inner)])
      : null

/** What a failed statement gives its caller: the error's class and every field of it but the stack. */
async function failure(work: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await work
  } catch (error) {
    const { stack: _, ...fields } = Object.getOwnPropertyDescriptors(error)
    return {
      class: (error as Error).constructor.name,
      message: (error as Error).message,
      ...Object.fromEntries(Object.entries(fields).map(([key, d]) => [key, d.value])),
    }
  }
  throw new Error('the statement succeeded')
}

const MERCHANT = '01a201e3-52fc-74ee-bdfb-9b70f7506cbc'
const PAYMENT = '01a201e3-73b2-720a-830f-1463c0b946b7'
const OTHER_PAYMENT = '01a201e3-73b2-720a-830f-1463c0b946b8'
const REFUND = '01a201e4-977d-749d-8bdc-1200ba75f512'
const AT = new Date('2026-03-04T05:06:07.089Z')
const LATER = new Date('2026-03-04T06:00:00.001Z')
const scope: Scope = { merchantUuid: MERCHANT, mode: 'test' }

/**
 * The same work on a database: the layer's operations as the repositories call them (each twice where the
 * layer keeps a statement or learns a shape from the first), rows of every type the tables hold, and the
 * errors a caller sees. Answers each step's outcome by name.
 */
async function script(db: Db): Promise<[string, unknown][]> {
  const steps: [string, unknown][] = []
  const step = async (name: string, work: () => Promise<unknown>) => {
    steps.push([name, await work()])
  }
  await step('merchant', () =>
    db
      .insertInto('merchants')
      .values({
        uuid: MERCHANT,
        name: 'Shop',
        settlement_currency: 'USDT',
        settlement_hold_seconds: 0,
        transaction_ttl_seconds: 900,
        fx_markup_bps: 150,
        created_at: AT,
        updated_at: AT,
      })
      .returningAll()
      .executeTakeFirstOrThrow(),
  )
  for (const [uuid, n] of [
    [PAYMENT, 1],
    [OTHER_PAYMENT, 2],
  ] as const) {
    const row = transactionRow(MERCHANT, {
      uuid,
      external_id: `order-${n}`,
      payment_token: `token-${n}`,
      created_at: AT,
      updated_at: AT,
      fx_rate_updated_at: AT,
      expires_at: LATER,
      metadata: JSON.stringify({ b: n, a: [1, 'x', null] }) as never,
    })
    await step(`insertTransaction ${n}`, () =>
      transactions.insertTransaction(db, row as unknown as transactions.NewTransactionRow),
    )
  }
  for (const uuid of [PAYMENT, OTHER_PAYMENT, REFUND])
    await step(`findByUuid ${uuid}`, () => transactions.findByUuid(db, scope, uuid))
  for (const uuid of [PAYMENT, OTHER_PAYMENT])
    await step(`updateTransaction ${uuid}`, () =>
      transactions.updateTransaction(db, uuid, { status: 'paid', paid_at: LATER, updated_at: LATER }),
    )
  for (const uuid of [PAYMENT, OTHER_PAYMENT])
    await step(`lockByUuid ${uuid}`, () =>
      db.transaction().execute((trx) => transactions.lockByUuid(trx, uuid)),
    )
  await step('insertRefund', () =>
    refunds.insertRefund(db, {
      uuid: REFUND,
      merchant_uuid: MERCHANT,
      mode: 'test',
      transaction_uuid: PAYMENT,
      amount_minor: 2500,
      currency: 'RUB',
      settlement_debit: 271,
      status: 'pending',
      reason: null,
      message: 'Refund pending',
      action_request_id: REFUND.replace(/..$/, '30'),
      idempotency_key: 'refund-key',
      provider_reference: null,
      next_check_at: LATER,
      succeeded_at: null,
      failed_at: null,
      created_at: AT,
      updated_at: AT,
    }),
  )
  for (let round = 0; round < 2; round++) {
    await step(`lockRefund ${round}`, () =>
      db.transaction().execute((trx) => refunds.lockRefund(trx, REFUND, PAYMENT)),
    )
    await step(`refundsOfOrByKey ${round}`, () => refunds.refundsOfOrByKey(db, scope, PAYMENT, 'refund-key'))
  }
  await step('updateRefund', () =>
    refunds.updateRefund(db, REFUND, { status: 'succeeded', succeeded_at: LATER, updated_at: LATER }),
  )
  let account = 0
  await ensureAccounts(db, MERCHANT, 'test', 'RUB', ['pending', 'provider_clearing'], AT, () =>
    PAYMENT.replace(/..$/, String(10 + account++)),
  )
  for (let round = 0; round < 2; round++)
    await step(`postEntries ${round}`, async () => {
      const { posted, balances } = await postEntries(
        db,
        { merchantUuid: MERCHANT, mode: 'test', currency: 'RUB', at: AT },
        [
          {
            uuid: REFUND.replace(/..$/, '20'),
            kind: 'payment_received',
            referenceType: 'transaction',
            referenceUuid: PAYMENT,
            moves: [
              { kind: 'pending', amount: 150000 },
              { kind: 'provider_clearing', amount: -150000 },
            ],
            lines: [
              { uuid: REFUND.replace(/..$/, '21'), kind: 'pending', amount: 150000 },
              { uuid: REFUND.replace(/..$/, '22'), kind: 'provider_clearing', amount: -150000 },
            ],
          },
        ],
      )
      return { posted: [...posted], balances: [...balances] }
    })
  const claim = { fingerprint: 'f', owner: 'o', now: AT, leaseMs: 60_000 }
  await step('claimKey', () => claimKey(db, scope, 'key-1', claim))
  await step('claimKey again', () => claimKey(db, scope, 'key-1', claim))
  await step('storeAnswer', () =>
    storeAnswer(db, scope, 'key-1', 'o', { status: 201, headers: { 'x-a': '1' }, body: '{}' }),
  )
  await step('findKey', () => findKey(db, scope, 'key-1'))
  await step('listPage', () => transactions.listPage(db, scope, {}, null, 10))
  for (let round = 0; round < 2; round++)
    await step(`types ${round}`, async () => {
      const { rows } = await sql`SELECT ${9007199254740991}::int8 AS big, ${'1.50'}::numeric AS n,
        ${AT}::timestamptz AS at, '2026-01-02 03:04:05.678'::timestamp AS local, '2026-01-02'::date AS day, ${JSON.stringify({ b: 1, a: 2 })}::jsonb AS doc,
        ${true}::boolean AS ok, NULL::text AS nothing, ${Buffer.from([0, 1, 255])}::bytea AS bytes,
        ARRAY[1, 2]::int[] AS list, interval '1 day 2 hours' AS span, ${PAYMENT}::uuid AS id, ${1.5}::float8 AS x,
        1 AS a, 2 AS a`.execute(db)
      return rows
    })
  for (let round = 0; round < 2; round++) {
    await step(`duplicate key ${round}`, () =>
      failure(
        transactions.insertTransaction(
          db,
          transactionRow(MERCHANT, { uuid: PAYMENT }) as unknown as transactions.NewTransactionRow,
        ),
      ),
    )
    await step(`bad input ${round}`, () => failure(sql`SELECT ${'x'}::int AS n`.execute(db)))
    await step(`failed transaction ${round}`, () =>
      failure(
        db.transaction().execute(async (trx) => {
          await transactions.updateTransaction(trx, OTHER_PAYMENT, { description: 'changed' })
          await transactions.updateTransaction(trx, PAYMENT, { amount: -1 })
        }),
      ),
    )
  }
  await step('after the failed transactions', () => transactions.findByUuid(db, scope, OTHER_PAYMENT))
  return steps
}

for (const backend of backends()) {
  describe(`DATABASE_DRIVER (${backend})`, () => {
    it('plain: no node-postgres internals are required, and statements go as text to the pool unprepared', async () => {
      const plain = await probe('plain', backend)
      assert.deepEqual(plain, { driver: 'plain', required: [], sent: ['text'], prepared: 0 })
      // The same probe sees the layer when it is on.
      const prepared = await probe('prepared', backend)
      assert.equal(prepared.driver, 'prepared')
      assert.deepEqual(prepared.required.sort(), ['pg/lib/result.js', 'pg/lib/utils.js'])
      assert.ok(prepared.sent.includes('ShapedQuery'), JSON.stringify(prepared))
      assert.ok(prepared.prepared >= 1, JSON.stringify(prepared))
    })

    describe('the same work both ways', () => {
      const handles = new Map<DatabaseDriver, { handle: DbHandle; drop(): Promise<void> }>()
      before(async () => {
        for (const driver of ['prepared', 'plain'] as const)
          handles.set(driver, await migratedDatabase(backend, driver))
      })
      after(async () => {
        for (const { drop } of handles.values()) await drop()
      })

      it('gives the same rows, types, key order and errors', async () => {
        const layer = handles.get('prepared')?.handle as DbHandle
        const plain = handles.get('plain')?.handle as DbHandle
        assert.equal(layer.driver, 'prepared')
        assert.equal(plain.driver, 'plain')
        const expected = await script(layer.db)
        const actual = await script(plain.db)
        assert.deepEqual(
          actual.map(([name]) => name),
          expected.map(([name]) => name),
        )
        for (const [index, [name, value]] of actual.entries()) {
          const want = expected[index]?.[1]
          assert.deepStrictEqual(value, want, name)
          assert.deepEqual(keyOrder(value), keyOrder(want), `${name}: key order`)
        }
        // What the script read is what it wrote: the comparison is of real rows, not of two empty answers.
        const found = new Map(actual)
        assert.equal(
          (found.get(`findByUuid ${PAYMENT}`) as { metadata: unknown }).metadata instanceof Object,
          true,
        )
        assert.equal(found.get('claimKey again'), false)
        assert.equal((found.get('duplicate key 0') as { code: string }).code, '23505')
        assert.equal((found.get('failed transaction 0') as { code: string }).code, '23514')
      })
    })
  })
}

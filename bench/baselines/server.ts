/**
 * The baselines of the API benchmark: the least a Fastify endpoint can do for the same request, with the
 * same driver, against a table like `transactions` (`baseline_transactions`, made by bench/api/run.ts as
 * `LIKE transactions INCLUDING ALL`: the same columns, constraints and indexes, no foreign keys).
 *
 *   POST /baseline/transactions         validates a body like the create request's (TypeBox schema, ajv),
 *                                       one INSERT … RETURNING *, 201 with the row
 *   GET  /baseline/transactions/:uuid   one SELECT by primary key, 200 with the row (404 when none)
 *
 * No authentication, rate limit, idempotency, FX or fee lookup, transaction block or response schema.
 *
 *   DATABASE_URL=postgres://… PORT=3901 [DRIVER=pg|postgres] [POOL_SIZE=10] node --import tsx bench/baselines/server.ts
 *
 * DRIVER=postgres runs the same endpoints on `postgres` (porsager) instead of `pg`, to measure the gap
 * between the two drivers; the service itself uses `pg` (through Kysely).
 */
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import pg from 'pg'
import postgres from 'postgres'
import { Type } from 'typebox'
import { v7 } from 'uuid'
import { pgTypes } from '../../src/db/index.ts'

const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl) throw new Error('DATABASE_URL is required')
const port = Number(process.env.PORT ?? 3901)
const driver = process.env.DRIVER ?? 'pg'
const poolSize = Number(process.env.POOL_SIZE ?? 10)
const merchantUuid = process.env.BASELINE_MERCHANT_UUID ?? '00000000-0000-7000-8000-000000000000'

const CreateBody = Type.Object(
  {
    amount: Type.Integer({ minimum: 1, maximum: 100_000_000_000 }),
    currency: Type.String({ minLength: 1, maxLength: 8 }),
    payment_method: Type.String({ minLength: 1, maxLength: 32 }),
    external_id: Type.String({ pattern: '^[A-Za-z0-9._:-]{1,64}$' }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])),
  },
  { additionalProperties: false },
)
const UuidParams = Type.Object({
  uuid: Type.String({ pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' }),
})
type Body = {
  amount: number
  currency: string
  payment_method: string
  external_id: string
  description?: string | null
}

const COLUMNS = [
  'uuid',
  'merchant_uuid',
  'mode',
  'type',
  'external_id',
  'amount',
  'gross_amount',
  'net_amount',
  'fee_amount',
  'fee_bps',
  'fee_payer',
  'merchant_fee_share_bps',
  'merchant_fee_merchant_amount',
  'merchant_fee_customer_amount',
  'currency',
  'settlement_currency',
  'settlement_amount',
  'fx_rate',
  'fx_rate_updated_at',
  'payment_method',
  'status',
  'description',
  'payment_token',
  'expires_at',
  'aggregate_version',
  'created_at',
  'updated_at',
]
const INSERT = `insert into baseline_transactions (${COLUMNS.join(', ')}) values (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')}) returning *`
const SELECT = 'select * from baseline_transactions where uuid = $1'

/** The row's values, in COLUMNS order: fixed fee and rate, as the service would have computed them. */
function values(body: Body): unknown[] {
  const now = new Date()
  const fee = Math.floor((body.amount * 250) / 10_000)
  return [
    v7(),
    merchantUuid,
    'test',
    'payment',
    body.external_id,
    body.amount,
    body.amount,
    body.amount - fee,
    fee,
    250,
    'merchant',
    10_000,
    fee,
    0,
    body.currency,
    'USDT',
    Math.floor(((body.amount - fee) * 10_000) / 9215),
    '92.15',
    now,
    body.payment_method,
    'pending',
    body.description ?? null,
    randomBytes(16).toString('base64url'),
    new Date(now.getTime() + 1_800_000),
    1,
    now,
    now,
  ]
}

type Db = {
  insert(body: Body): Promise<unknown>
  select(uuid: string): Promise<unknown>
  close(): Promise<void>
}

function pgDb(): Db {
  // The service's int8 parsing, so both answer the same row.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize, types: pgTypes })
  pool.on('error', () => {})
  return {
    insert: async (body) => (await pool.query(INSERT, values(body))).rows[0],
    select: async (uuid) => (await pool.query(SELECT, [uuid])).rows[0],
    close: () => pool.end(),
  }
}

function postgresDb(): Db {
  const sql = postgres(databaseUrl as string, {
    max: poolSize,
    types: {
      bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
    },
    onnotice: () => {},
  })
  return {
    // biome-ignore lint/suspicious/noExplicitAny: the driver's parameter type is a union of serialisable values
    insert: async (body) => (await sql.unsafe(INSERT, values(body) as any[], { prepare: true }))[0],
    select: async (uuid) => (await sql.unsafe(SELECT, [uuid], { prepare: true }))[0],
    close: () => sql.end(),
  }
}

const db = driver === 'postgres' ? postgresDb() : pgDb()
const app = Fastify({ logger: false })

app.post('/baseline/transactions', { schema: { body: CreateBody } }, async (request, reply) => {
  const row = await db.insert(request.body as Body)
  return reply.code(201).send(row)
})

app.get('/baseline/transactions/:uuid', { schema: { params: UuidParams } }, async (request, reply) => {
  const row = await db.select((request.params as { uuid: string }).uuid)
  if (!row) return reply.code(404).send({ error: 'not_found' })
  return row
})

app.get('/baseline/health', async () => ({ ok: true }))

await app.listen({ port, host: '127.0.0.1' })

const stop = async () => {
  await app.close()
  await db.close()
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.on('SIGINT', () => void stop())

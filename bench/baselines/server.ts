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

/** The row, column by column: fixed fee and rate, as the service would have computed them. */
function row(body: Body): Record<string, unknown> {
  const now = new Date()
  const fee = Math.floor((body.amount * 250) / 10_000)
  return {
    uuid: v7(),
    merchant_uuid: merchantUuid,
    mode: 'test',
    type: 'payment',
    external_id: body.external_id,
    amount: body.amount,
    gross_amount: body.amount,
    net_amount: body.amount - fee,
    fee_amount: fee,
    fee_bps: 250,
    fee_payer: 'merchant',
    merchant_fee_share_bps: 10_000,
    merchant_fee_merchant_amount: fee,
    merchant_fee_customer_amount: 0,
    currency: body.currency,
    settlement_currency: 'USDT',
    settlement_amount: Math.floor(((body.amount - fee) * 10_000) / 9215),
    fx_rate: '92.15',
    fx_rate_updated_at: now,
    payment_method: body.payment_method,
    status: 'pending',
    description: body.description ?? null,
    payment_token: randomBytes(16).toString('base64url'),
    expires_at: new Date(now.getTime() + 1_800_000),
    aggregate_version: 1,
    created_at: now,
    updated_at: now,
  }
}

/** The columns every insert names, in the row's order. */
const COLUMNS = Object.keys(
  row({ amount: 1, currency: 'RUB', payment_method: 'card', external_id: 'columns' }),
)
const INSERT = `insert into baseline_transactions (${COLUMNS.join(', ')}) values (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')}) returning *`
const SELECT = 'select * from baseline_transactions where uuid = $1'

/** The row's values, in COLUMNS order. */
const values = (body: Body): unknown[] => Object.values(row(body))

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

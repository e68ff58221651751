import type { Writable } from 'node:stream'
import type { PostgresPool, PostgresPoolClient } from 'kysely'
import type pg from 'pg'

/** Distinct statement texts given a name, over the process; texts past it are sent unnamed. */
const MAX_NAMED_TEXTS = 2_000
/** Prepared statements one connection keeps at most (PostgreSQL holds each until the connection ends). */
const MAX_PREPARED_PER_CONNECTION = 500

const names = new Map<string, string>()
/** Names are never reused: a connection may still hold a forgotten one. */
let issued = 0

function nameOf(text: string): string | null {
  const known = names.get(text)
  if (known !== undefined) return known
  if (names.size >= MAX_NAMED_TEXTS) return null
  const name = `mg_${++issued}`
  names.set(text, name)
  return name
}

/**
 * PostgreSQL refuses to run a prepared statement whose result columns changed since it was prepared (a
 * migration added or dropped a column of a table it returns whole). The text then gets a new name, so every
 * connection prepares it afresh.
 */
function isStalePlan(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown }
  return code === '0A000' && typeof message === 'string' && message.includes('cached plan must not change')
}

/**
 * Runs a statement through node-postgres' callback interface. Its promise interface (`client.query(config)`
 * with no callback), on a client checked out for several statements as Kysely's is, keeps every result it
 * returned reachable until a major GC: run back to back, all rows survive the young generation and are
 * promoted to the old one (a loop of 100-row keyset queries promoted 383 MB for 300,000 rows; through this
 * function, 0.3 MB). An export's rows then grow the heap by 100 MB and more before a major GC frees them.
 */
const submit = (client: pg.PoolClient, config: pg.QueryConfig): Promise<pg.QueryResult> =>
  new Promise((resolve, reject) => {
    client.query(config, (error: Error | undefined, result: pg.QueryResult) =>
      error ? reject(error) : resolve(result),
    )
  })

function forget(text: string, name: string): void {
  if (names.get(text) === name) names.delete(text)
}

/**
 * Kysely's pool over node-postgres, sending every statement that has parameters as a named (prepared) one:
 * PostgreSQL then parses and plans a statement once per connection rather than on every execution, which
 * is what an unnamed statement costs it. Kysely builds the same text for the same query shape, so the texts
 * are few (one per shape, and per length of an `IN` list or multi-row `VALUES`); the caps above bound them
 * all the same. Statements without parameters (`begin`, `commit`, DDL) keep the simple protocol.
 */
export function preparingPool(pool: pg.Pool): PostgresPool {
  // The pool listens for errors on a client only while it is idle in the pool. One checked out (between the
  // statements of a transaction, or just connected: the server's FATAL may arrive in the same read as its
  // ReadyForQuery) whose connection is cut would emit 'error' with no listener, and that ends the process.
  // With this one, present from the moment the pool hands the client out, the running or next statement
  // fails instead, and the pool drops the client, no longer queryable, when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {})
  })
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>()
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    const prepared = new Set<string>()
    // node-postgres writes Bind, Describe, Execute and Sync one by one, a system call each: corked, the
    // socket sends them in one (client.query submits synchronously when the connection is idle, as a
    // checked-out client is between Kysely's statements). The embedded database's adapter has no socket.
    const socket = (client as unknown as { connection?: { stream?: Partial<Writable> } }).connection?.stream
    const stream = typeof socket?.cork === 'function' ? (socket as Writable) : null
    // Kysely opens and ends its transactions with these statements, without parameters.
    let inTransaction = false
    const query = (
      sql: string | pg.Submittable,
      parameters?: ReadonlyArray<unknown>,
      retried = false,
    ): unknown => {
      if (typeof sql !== 'string') return client.query(sql)
      if (!parameters || parameters.length === 0) {
        if (sql === 'begin' || sql.startsWith('start transaction')) inTransaction = true
        else if (sql === 'commit' || sql === 'rollback') inTransaction = false
        return submit(client, { text: sql })
      }
      const name = nameOf(sql)
      if (name === null || (!prepared.has(name) && prepared.size >= MAX_PREPARED_PER_CONNECTION))
        return submit(client, { text: sql, values: parameters as unknown[] })
      prepared.add(name)
      let running: Promise<unknown>
      stream?.cork()
      try {
        running = submit(client, { name, text: sql, values: parameters as unknown[] })
      } finally {
        stream?.uncork()
      }
      return running.catch((error: unknown) => {
        if (!isStalePlan(error)) throw error
        forget(sql, name)
        // Outside a transaction the statement runs again, prepared anew; inside one the transaction has
        // failed, and its next attempt finds the new name.
        if (inTransaction || retried) throw error
        return query(sql, parameters, true)
      })
    }
    return {
      query: query as unknown as PostgresPoolClient['query'],
      release: () => client.release(),
    }
  }
  return {
    async connect() {
      const client = await pool.connect()
      let wrapped = clients.get(client)
      if (!wrapped) {
        wrapped = wrap(client)
        clients.set(client, wrapped)
      }
      return wrapped
    },
    end: () => pool.end(),
  }
}

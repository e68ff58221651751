import type { Socket } from 'node:net'
import type { PostgresPoolClient } from 'kysely'
import type pg from 'pg'
import type { ReleasableClient, ReleasablePool } from '../bounded.ts'
import { ShapedQuery } from './shaped-query.ts'

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
const submit = (client: pg.ClientBase, config: pg.QueryConfig | ShapedQuery): Promise<pg.QueryResult> =>
  new Promise((resolve, reject) => {
    client.query(config as pg.QueryConfig, (error: Error | undefined, result: pg.QueryResult) =>
      error ? reject(error) : resolve(result),
    )
  })

function forget(text: string, name: string): void {
  if (names.get(text) === name) names.delete(text)
}

type Query = PostgresPoolClient['query']

/**
 * The statements of one connection: every statement with parameters as a named (prepared) one, prepared once
 * on the connection. `client.query` submits at once when the connection is idle (a checked-out client between
 * Kysely's statements) and queues otherwise (a pipelined one).
 */
function statementsOn(client: pg.ClientBase): Query {
  const prepared = new Set<string>()
  // (node-postgres corks the socket around a statement's Parse, Bind, Execute and Sync itself: one write.)
  // Kysely opens and ends its transactions with these statements, without parameters.
  let inTransaction = false
  const query = (
    sql: string | pg.Submittable,
    parameters?: ReadonlyArray<unknown>,
    retried = false,
  ): unknown => {
    if (typeof sql !== 'string') return client.query(sql)
    if (!parameters || parameters.length === 0) {
      if (isBegin(sql)) inTransaction = true
      else if (sql === 'commit' || sql === 'rollback') inTransaction = false
      return submit(client, { text: sql })
    }
    const name = nameOf(sql)
    if (name === null || (!prepared.has(name) && prepared.size >= MAX_PREPARED_PER_CONNECTION))
      return submit(client, { text: sql, values: parameters as unknown[] })
    prepared.add(name)
    return submit(client, new ShapedQuery(name, sql, parameters as unknown[])).catch((error: unknown) => {
      if (!isStalePlan(error)) throw error
      forget(sql, name)
      // Outside a transaction the statement runs again, prepared anew; inside one the transaction has
      // failed, and its next attempt finds the new name.
      if (inTransaction || retried) throw error
      return query(sql, parameters, true)
    })
  }
  return query as unknown as Query
}

const isBegin = (sql: string) => sql === 'begin' || sql.startsWith('start transaction')

/**
 * A statement that leaves something on its session for the statements after it: a session-level advisory
 * lock (Kysely's migrator takes one), a setting, a LISTEN, a cursor, a temporary table.
 */
const SESSION_STATE =
  /\bpg_(try_)?advisory_lock(_shared)?\b|\bset_config\s*\(|^\s*(set|reset|listen|unlisten|declare|prepare|discard)\b|\btemp(orary)?\s+table\b/i
const sessionBound = new Map<string, boolean>()
function needsOwnConnection(sql: string): boolean {
  if (isBegin(sql)) return true
  let bound = sessionBound.get(sql)
  if (bound === undefined) {
    bound = SESSION_STATE.test(sql)
    if (sessionBound.size < MAX_NAMED_TEXTS) sessionBound.set(sql, bound)
  }
  return bound
}

/**
 * Connections that statements outside a transaction share, in node-postgres' pipeline mode: each statement
 * is sent without waiting for the answers to the ones before it on that connection, as the `postgres` driver
 * does, and the statements asked for in one turn of the event loop leave together, in one write at its check
 * phase (the socket is corked until then). PostgreSQL then reads several statements in one wake-up and answers
 * them in one write, and a request needs no connection of its own for a single statement (a get, a create's
 * one INSERT). Every statement ends with its own Sync, so one that fails fails alone. Under the gets of
 * bench:api the one write per turn served 1.23-1.27 x the gets of one write per statement, PostgreSQL's CPU per
 * get 0.017 ms against 0.026.
 */
export interface SharedConnections {
  /** How many: the least busy one takes the next statement. */
  size: number
  /** A new connection, connected, in pipeline mode. */
  open(): Promise<pg.Client>
}

interface Shared {
  client: pg.Client
  query: Query
  /** Holds the connection's writes until the event loop's check phase, so a turn's statements go in one write. */
  batch(): void
  /** Statements sent and not yet answered. */
  busy: number
  lost: boolean
}

/**
 * Statements one shared connection holds (sent, not yet answered) before the next goes to a connection of the
 * pool instead: a statement that waits (for a row lock, say) holds up at most this many behind it.
 */
const MAX_PIPELINED = 32

function sharing(connections: SharedConnections) {
  const slots: (Shared | Promise<Shared> | undefined)[] = new Array(connections.size).fill(undefined)
  let ended = false
  const open = (at: number): Promise<Shared> => {
    const opening = connections.open().then(
      (client) => {
        const stream = (
          client as unknown as { connection: { stream: Partial<Pick<Socket, 'cork' | 'uncork'>> } }
        ).connection.stream
        let corked = false
        const uncork = () => {
          corked = false
          stream.uncork?.()
        }
        const batch = () => {
          // (As node-postgres does, a stream without cork and uncork is written at once.)
          if (corked || !stream.cork || !stream.uncork) return
          corked = true
          stream.cork()
          setImmediate(uncork)
        }
        const shared: Shared = { client, query: statementsOn(client), batch, busy: 0, lost: false }
        // A cut connection fails the statements on it (node-postgres errors every one sent); the next
        // statement opens another in its place. One that reported an error of its own is ended too.
        const lose = () => {
          if (shared.lost) return
          shared.lost = true
          if (slots[at] === shared) slots[at] = undefined
          client.end().catch(() => {})
        }
        client.on('error', lose)
        client.on('end', lose)
        if (ended) {
          lose()
          throw new Error('Client was closed and is not queryable')
        }
        slots[at] = shared
        return shared
      },
      (error: unknown) => {
        slots[at] = undefined
        throw error
      },
    )
    slots[at] = opening
    return opening
  }
  return {
    /**
     * A shared connection for the next statement: an idle one, else a new one while there is room, else the
     * least busy one; null when every one holds MAX_PIPELINED statements (the pool's connections take it).
     */
    pick(): Shared | Promise<Shared> | null {
      if (ended) throw new Error('Client was closed and is not queryable')
      let best: Shared | null = null
      let empty = -1
      let opening: Promise<Shared> | null = null
      for (let at = 0; at < slots.length; at++) {
        const slot = slots[at]
        if (slot === undefined) {
          if (empty < 0) empty = at
        } else if (slot instanceof Promise) opening ??= slot
        else if (!slot.lost && (best === null || slot.busy < best.busy)) best = slot
      }
      if (best !== null && best.busy === 0) return best
      if (empty >= 0) return open(empty)
      if (best !== null && best.busy < MAX_PIPELINED) return best
      return opening
    },
    /** The shared connections open now, and those with no statement in flight. */
    stats(): { open: number; idle: number } {
      let open = 0
      let idle = 0
      for (const slot of slots)
        if (slot !== undefined && !(slot instanceof Promise) && !slot.lost) {
          open++
          if (slot.busy === 0) idle++
        }
      return { open, idle }
    },
    async end(): Promise<void> {
      ended = true
      const open = await Promise.allSettled(slots.filter((slot) => slot !== undefined))
      slots.fill(undefined)
      await Promise.all(
        open.map((opened) => (opened.status === 'fulfilled' ? opened.value.client.end() : undefined)),
      )
    },
  }
}

/**
 * Kysely's pool over node-postgres, sending every statement that has parameters as a named (prepared) one:
 * PostgreSQL then parses and plans a statement once per connection rather than on every execution, which
 * is what an unnamed statement costs it. Kysely builds the same text for the same query shape, so the texts
 * are few (one per shape, and per length of an `IN` list or multi-row `VALUES`); the caps above bound them
 * all the same. Statements without parameters (`begin`, `commit`, DDL) keep the simple protocol.
 *
 * With `shared`, what Kysely takes as a connection binds to a real one as its statements come: until one of
 * them opens a transaction (`begin`) or leaves state on its session (a session-level advisory lock, a
 * setting, ...), they go to one of the shared, pipelined connections, in order, between other requests'
 * statements; from that one on, every statement goes to a connection of its own, checked out of the pool
 * until Kysely releases it.
 */
export function preparingPool(
  pool: pg.Pool,
  shared?: SharedConnections,
): ReleasablePool & { sharedStats(): { open: number; idle: number } } {
  const clients = new WeakMap<pg.PoolClient, ReleasableClient>()
  const checkOut = async (): Promise<ReleasableClient> => {
    const client = await pool.connect()
    let wrapped = clients.get(client)
    if (!wrapped) {
      wrapped = { query: statementsOn(client), release: (destroy) => client.release(destroy) }
      clients.set(client, wrapped)
    }
    return wrapped
  }
  if (!shared) return { connect: checkOut, end: () => pool.end(), sharedStats: () => ({ open: 0, idle: 0 }) }

  const connections = sharing(shared)
  const bound = (): ReleasableClient => {
    let own: ReleasableClient | null = null
    let on: Shared | null = null
    const query = async (sql: string, parameters: ReadonlyArray<unknown>) => {
      if (own) return own.query(sql, parameters)
      if (typeof sql !== 'string')
        throw new TypeError('A streamed query needs a connection of its own: run it in a transaction.')
      // A transaction, or state kept for the statements after it, or every shared connection full: from
      // there on, a connection of the pool of its own.
      const next = needsOwnConnection(sql) ? null : on !== null && !on.lost ? on : connections.pick()
      if (next === null) {
        own = await checkOut()
        return own.query(sql, parameters)
      }
      const connection = next instanceof Promise ? await next : next
      on = connection
      connection.busy++
      connection.batch()
      try {
        return await connection.query(sql, parameters)
      } finally {
        connection.busy--
      }
    }
    return { query: query as Query, release: (destroy) => own?.release(destroy) }
  }
  return {
    sharedStats: () => connections.stats(),
    connect: async () => bound(),
    end: async () => {
      await Promise.all([pool.end(), connections.end()])
    },
  }
}

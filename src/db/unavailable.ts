/** SQLSTATEs that say the database cannot serve this session now, though it may in a moment. */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: pg_terminate_backend, a fast shutdown, a failover
  '57P02', // crash_shutdown: another backend crashed and the server restarts
  '57P03', // cannot_connect_now: the server is starting up, shutting down or in recovery
  '53300', // too_many_connections
  '25006', // read_only_sql_transaction: a primary demoted under the session, before it is cut
])

/** Errors of the socket under a connection: the server went away, or cannot be reached. */
const UNAVAILABLE_SYSTEM_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
])

/** node-postgres and pg-pool say so in words only. */
const UNAVAILABLE_MESSAGES = [
  'Connection terminated', // …unexpectedly, …due to connection timeout, or ended while a query ran
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'timeout exceeded when trying to connect', // pg-pool's connectionTimeoutMillis
  'timeout expired', // node-postgres' own connectionTimeoutMillis (a client outside the pool: a shared one)
]

/**
 * Whether `error` says the database is out of reach rather than that the request is wrong: the connection
 * was cut (a failover, a restart, an administrator ending it), or a new one could not be opened. What the
 * request did in its transaction was rolled back with the session (unless the cut came just as its COMMIT
 * was acknowledged), so it may be retried.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown }
  if (typeof code === 'string') {
    // A statement that outlived DATABASE_QUERY_TIMEOUT (bounded.ts): its outcome is unknown.
    if (code === 'MG_QUERY_TIMEOUT') return true
    // Class 08: connection exception (could not connect, the connection failed, protocol violation…).
    if (/^08[0-9A-Z]{3}$/.test(code) || UNAVAILABLE_SQLSTATES.has(code)) return true
    if (UNAVAILABLE_SYSTEM_CODES.has(code)) return true
    // object_not_in_prerequisite_state, as the server refuses a connection to a database that does not
    // allow connections now (ALLOW_CONNECTIONS false, as during some maintenance).
    if (
      code === '55000' &&
      typeof message === 'string' &&
      message.includes('not currently accepting connections')
    )
      return true
  }
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((m) => message.startsWith(m))) return true
  // A host name with several addresses: each attempt failed (Node's AggregateError of them).
  return Array.isArray(errors) && errors.length > 0 && errors.every(isDatabaseUnavailable)
}

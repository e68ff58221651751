import { once } from 'node:events'
import { PassThrough } from 'node:stream'
import { setTimeout as wait } from 'node:timers/promises'
import { scopeOf } from '../../db/scope.ts'
import type { AuthContext } from '../../http/auth.ts'
import { AppError } from '../../http/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import type { WebhookDeps } from './deps.ts'
import { eventFilters } from './events.ts'
import * as eventRepo from './repository/events.ts'

/** How often an open stream looks for new events. */
export const STREAM_POLL_MS = 200
/**
 * How far back each poll looks, before the newest event sent: an event is stamped when its transaction starts
 * and seen when it commits, and processes' clocks differ a little, so one stamped earlier can appear later.
 */
export const STREAM_LOOKBACK_MS = 5_000
/** A comment line this often keeps proxies from closing a quiet stream, and tells the client it is alive. */
export const STREAM_HEARTBEAT_MS = 15_000
/** Open streams a merchant may have on one process. */
export const STREAM_LIMIT = 10
const BATCH = 200

/** One server-sent event. */
const message = (fields: { id?: string; event: string; data: string }) =>
  `${fields.id ? `id: ${fields.id}\n` : ''}event: ${fields.event}\ndata: ${fields.data}\n\n`

/**
 * The test mode's events as server-sent events, for `merchant-gateway listen` and any EventSource: each open
 * stream polls the events table (the outbox) every STREAM_POLL_MS for the merchant's test events that occurred
 * since it opened, or since the event named by Last-Event-ID when a client reconnects, and writes each once, as
 * `id: <event_id>`, `event: <name>` and `data: <the body its webhook carries>`. Delivery is at least once across
 * reconnections. Polling keeps it the same on PGlite and on many PostgreSQL processes, whichever wrote the
 * event; it costs one indexed query per stream per poll, and only test keys may open one.
 */
export function createEventStreams(deps: Pick<WebhookDeps, 'db'>) {
  const open = new Set<{ end(): void }>()
  /** Set on shutdown: a stream asked for while the server closes is refused, not left open. */
  let closed = false
  const perMerchant = new Map<string, number>()

  async function start(
    auth: AuthContext,
    query: { type?: string },
    lastEventId: string | undefined,
  ): Promise<PassThrough> {
    if (auth.mode !== 'test')
      throw new AppError(
        'forbidden',
        'The event stream is for test mode: connect with a test key (sk_test_…). Live events reach your webhook.',
      )
    const scope = scopeOf(auth)
    const { types } = eventFilters({ type: query.type })
    // Where the stream starts: after the event the client last received, else now.
    let floor = new Date()
    /** The events sent within the look-back (id → when it occurred), and the newest time among all sent. */
    const sent = new Map<string, number>()
    let newest = floor.getTime()
    const last = lastEventId?.toLowerCase()
    if (last && isUuid(last)) {
      const event = await eventRepo.findEvent(deps.db, scope, last)
      if (event) {
        floor = event.occurred_at
        newest = floor.getTime()
        sent.set(event.uuid, newest)
      }
    }
    if (closed) throw new AppError('unavailable', 'The server is shutting down: reconnect in a moment.')
    const count = perMerchant.get(scope.merchantUuid) ?? 0
    if (count >= STREAM_LIMIT)
      throw new AppError(
        'rate_limited',
        `At most ${STREAM_LIMIT} event streams may be open at once for a merchant; close one first.`,
        null,
        null,
        { 'retry-after': '5' },
      )
    perMerchant.set(scope.merchantUuid, count + 1)

    const stream = new PassThrough()
    const stop = new AbortController()
    const entry = { end: () => stop.abort() }
    open.add(entry)
    const finish = () => {
      if (!open.delete(entry)) return
      stop.abort()
      const left = (perMerchant.get(scope.merchantUuid) ?? 1) - 1
      if (left > 0) perMerchant.set(scope.merchantUuid, left)
      else perMerchant.delete(scope.merchantUuid)
      stream.end()
    }
    stream.on('close', finish)
    stop.signal.addEventListener('abort', () => stream.end(), { once: true })

    // A slow client: wait until it has taken what was written (or the stream is stopped: the loop then ends).
    const write = async (text: string) => {
      if (!stream.write(text)) await once(stream, 'drain', { signal: stop.signal })
    }
    const heartbeat = setInterval(() => stream.write(': heartbeat\n\n'), STREAM_HEARTBEAT_MS)
    stop.signal.addEventListener('abort', () => clearInterval(heartbeat), { once: true })

    stream.write('retry: 1000\n\n')
    stream.write(
      message({ event: 'ready', data: JSON.stringify({ mode: 'test', merchant_uuid: scope.merchantUuid }) }),
    )
    void (async () => {
      try {
        while (!stop.signal.aborted) {
          const from = new Date(Math.max(floor.getTime(), newest - STREAM_LOOKBACK_MS))
          for (const [id, at] of sent) if (at < from.getTime()) sent.delete(id)
          const rows = await eventRepo.eventsSince(deps.db, scope, {
            from,
            types,
            except: [...sent.keys()],
            limit: BATCH,
          })
          for (const row of rows) {
            if (stop.signal.aborted) break
            sent.set(row.uuid, row.occurred_at.getTime())
            newest = Math.max(newest, row.occurred_at.getTime())
            await write(message({ id: row.uuid, event: row.event, data: row.body }))
          }
          if (rows.length < BATCH) await wait(STREAM_POLL_MS, undefined, { signal: stop.signal })
        }
      } catch {
        // The database went away, or the stream was stopped while it waited: the stream ends, and the client
        // reconnects with the last id it received.
      } finally {
        finish()
      }
    })()
    return stream
  }

  function endAll() {
    for (const entry of [...open]) entry.end()
  }

  return {
    start,
    /** Ends every open stream: their clients reconnect, with the last id they received. */
    endAll,
    /** The server is shutting down: every open stream ends, and no new one opens (503). */
    close() {
      closed = true
      endAll()
    },
  }
}

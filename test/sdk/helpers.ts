import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import {
  type AddressInfo,
  createServer,
  type Server as NetServer,
  type Socket,
  connect as tcpConnect,
} from 'node:net'

/** One request the service's HTTP server received, as it saw it, and what it answered. */
export interface Seen {
  method: string
  url: string
  idempotencyKey: string | undefined
  /** Which credential header came: `signature` (X-Signature), `apiKey` (X-Api-Key), or `none`. */
  auth: 'signature' | 'apiKey' | 'none'
  userAgent: string | undefined
  at: number
  /** Set once the answer was written (or the connection closed). */
  status?: number
  doneAt?: number
  retryAfter?: string
  requestId?: string
  replayed?: string
}

/**
 * Records every request the listening server receives, from its own `request` event (Fastify's hooks cannot
 * be added after `ready()`): what the SDK's retries look like from the service's side.
 */
export function recordRequests(server: Server): Seen[] {
  const seen: Seen[] = []
  // First among the listeners, so the answer's headers are caught however soon the app writes them.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const header = (name: string) => {
      const value = req.headers[name]
      return Array.isArray(value) ? value.join(',') : value
    }
    const entry: Seen = {
      method: req.method ?? '',
      url: req.url ?? '',
      idempotencyKey: header('idempotency-key'),
      auth: req.headers['x-signature'] ? 'signature' : req.headers['x-api-key'] ? 'apiKey' : 'none',
      userAgent: header('user-agent'),
      at: Date.now(),
    }
    seen.push(entry)
    // Fastify hands its headers to writeHead at once (not through setHeader): read them there.
    const written: Record<string, string> = {}
    const writeHead = res.writeHead
    res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      const headers = args.find((arg) => arg !== null && typeof arg === 'object' && !Array.isArray(arg))
      for (const [name, value] of Object.entries((headers ?? {}) as Record<string, unknown>))
        written[name.toLowerCase()] = String(value)
      return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args)
    } as ServerResponse['writeHead']
    const done = () => {
      if (entry.status !== undefined) return
      entry.status = res.statusCode
      entry.doneAt = Date.now()
      const text = (name: string) => {
        const value = written[name] ?? res.getHeader(name)
        return value === undefined ? undefined : String(value)
      }
      entry.retryAfter = text('retry-after')
      entry.requestId = text('x-request-id')
      entry.replayed = text('idempotent-replayed')
    }
    res.on('finish', done)
    res.on('close', done)
  })
  return seen
}

const REQUEST_LINE = /^([A-Z]+) (\S+) HTTP\/1\.[01]\r\n/

/** Starts `server` on a free loopback port: its port. */
async function listenOnLoopback(server: NetServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

/** Closes `server`, first ending the connections it still holds (`sockets`) so that the close does not wait. */
async function closeServer(server: NetServer, sockets: Iterable<Socket> = []): Promise<void> {
  for (const socket of sockets) socket.destroy()
  await new Promise<void>((resolve) => server.close(() => resolve()))
}

/**
 * A TCP proxy in front of the service that passes everything through, except that for a request whose
 * `METHOD path` `cut` picks, it forwards the request to the service and then destroys the client's socket as
 * soon as the service's answer starts to come back: the service did the work, the client saw the connection
 * drop. Each pick is made once per request (`cut` decides, e.g. only the first time).
 */
export async function startCuttingProxy(targetPort: number, cut: (requestLine: string) => boolean) {
  const sockets = new Set<Socket>()
  /** The request lines whose answers were cut off. */
  const cuts: string[] = []
  const server = createServer((client) => {
    const upstream = tcpConnect(targetPort, '127.0.0.1')
    sockets.add(client)
    sockets.add(upstream)
    // The request now on this connection (HTTP/1.1 without pipelining: one at a time), if it is to be cut.
    let cutting: string | null = null
    client.on('data', (chunk: Buffer) => {
      const line = REQUEST_LINE.exec(chunk.toString('latin1'))
      if (line) {
        const requestLine = `${line[1]} ${line[2]}`
        cutting = cut(requestLine) ? requestLine : null
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (cutting !== null) {
        if (!client.destroyed) {
          cuts.push(cutting)
          client.destroy()
        }
        // The service's answer goes nowhere; the service's side of the connection is left to finish.
        return
      }
      client.write(chunk)
    })
    const forget = (socket: Socket) => () => sockets.delete(socket)
    client.on('close', forget(client))
    upstream.on('close', forget(upstream))
    client.on('close', () => {
      if (cutting === null) upstream.destroy()
    })
    upstream.on('close', () => client.destroy())
    client.on('error', () => {})
    upstream.on('error', () => {})
  })
  const port = await listenOnLoopback(server)
  return {
    url: `http://127.0.0.1:${port}`,
    cuts,
    close: () => closeServer(server, sockets),
  }
}

/** A TCP server that reads requests and never answers: every attempt against it times out. */
export async function startBlackhole() {
  const sockets = new Set<Socket>()
  /** The raw head of each request received. */
  const requests: string[] = []
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1')
      if (REQUEST_LINE.test(text)) requests.push(text)
    })
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
  })
  const port = await listenOnLoopback(server)
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    /** A header of a raw request head, by lower-case name. */
    header(request: string, name: string): string | undefined {
      for (const line of request.split('\r\n')) {
        const at = line.indexOf(':')
        if (at > 0 && line.slice(0, at).toLowerCase() === name) return line.slice(at + 1).trim()
      }
      return undefined
    },
    close: () => closeServer(server, sockets),
  }
}

/** A port nothing listens on (taken, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer()
  const port = await listenOnLoopback(server)
  await closeServer(server)
  return port
}

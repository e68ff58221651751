import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** Where a call that broadcasts a transaction is held: before it reaches the node, or once the node answered. */
export type HoldStage = 'request' | 'response'

/** A call to `eth_sendRawTransaction` the proxy holds. */
export interface HeldCall {
  /** The signed transactions the call broadcasts (one, unless the call was a batch). */
  raws: string[]
  stage: HoldStage
  /** For a held answer: the node has answered (its answer is kept, not sent). */
  answered: boolean
  /** Whether the node accepted every transaction: its answer carries no error. Null until it answered. */
  accepted: boolean | null
  /** The caller has gone (its connection closed): a process killed while it waited. */
  gone: boolean
}

/** One JSON-RPC call that went through, as the caller sent it. */
export interface SeenCall {
  method: string
  params: unknown[]
}

export interface RpcProxy {
  /** Where callers send their JSON-RPC: http://127.0.0.1:<port>. */
  url: string
  /**
   * From now on, each request that broadcasts a transaction (`eth_sendRawTransaction`) is put to `decide` with its
   * signed bytes: it is held where `decide` says, or forwarded when it says null. `null` forwards all again.
   */
  hold(decide: ((raw: string) => HoldStage | null) | null): void
  /** Holds the next broadcast at `stage`, then forwards the others as before. */
  holdNext(stage: HoldStage): void
  /** The calls held now. */
  held(): readonly HeldCall[]
  /** Drops what is held: a held request never reaches the node, a held answer is never sent; both are cut. */
  drop(): void
  /** Lets what is held go: held requests are forwarded, held answers sent. */
  release(): Promise<void>
  /** How many calls went through so far: a mark for `seenSince`. */
  mark(): number
  /** The calls of `method` that came after `mark`. */
  seenSince(mark: number, method: string): SeenCall[]
  close(): Promise<void>
}

interface Answer {
  status: number
  contentType: string
  body: string
}

interface Holding extends HeldCall {
  body: string
  res: ServerResponse
  answer: Promise<Answer> | null
}

const read = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })

/** The calls of a JSON-RPC body, one or a batch; none when it is not JSON-RPC. */
function callsOf(body: string): SeenCall[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return []
  }
  return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((call) =>
    call && typeof call === 'object' && typeof call.method === 'string'
      ? [{ method: call.method, params: Array.isArray(call.params) ? call.params : [] }]
      : [],
  )
}

/** Whether a JSON-RPC answer (one or a batch) carries no error. */
function acceptedIn(body: string): boolean {
  try {
    const parsed = JSON.parse(body)
    return (Array.isArray(parsed) ? parsed : [parsed]).every((answer) => answer && answer.error === undefined)
  } catch {
    return false
  }
}

/**
 * A JSON-RPC proxy in front of an EVM node, on 127.0.0.1 and a port the kernel picks: it forwards every request
 * to `target` as is and sends its answer back, but a test can have it hold the requests that broadcast a
 * transaction, before they reach the node or after the node answered, for as long as it likes: to kill a process
 * that signed a transaction before its broadcast, or before it heard that the node has it.
 */
export async function startRpcProxy(target: string): Promise<RpcProxy> {
  let decide: ((raw: string) => HoldStage | null) | null = null
  const holding: Holding[] = []
  const seen: SeenCall[] = []

  const forward = async (body: string, contentType: string | undefined): Promise<Answer> => {
    const res = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': contentType ?? 'application/json' },
      body,
    })
    return {
      status: res.status,
      contentType: res.headers.get('content-type') ?? 'application/json',
      body: await res.text(),
    }
  }
  const send = (res: ServerResponse, answer: Answer) => {
    if (res.destroyed) return
    res.writeHead(answer.status, { 'content-type': answer.contentType })
    res.end(answer.body)
  }
  const fail = (res: ServerResponse, error: unknown) => {
    if (res.destroyed) return
    res.writeHead(502, { 'content-type': 'text/plain' })
    res.end(`the node did not answer: ${(error as Error).message}`)
  }

  const server = createServer(async (req, res) => {
    try {
      const body = await read(req)
      const calls = callsOf(body)
      seen.push(...calls)
      const raws = calls
        .filter((call) => call.method === 'eth_sendRawTransaction')
        .map((call) => String(call.params[0]))
      const stages = decide ? raws.map((raw) => decide?.(raw) ?? null) : []
      const stage = stages.includes('request') ? 'request' : stages.includes('response') ? 'response' : null
      if (stage === null) {
        send(res, await forward(body, req.headers['content-type']))
        return
      }
      const held: Holding = {
        raws,
        stage,
        answered: false,
        accepted: null,
        gone: false,
        body,
        res,
        answer: null,
      }
      res.on('close', () => {
        held.gone = true
      })
      holding.push(held)
      if (stage === 'response') {
        held.answer = forward(body, req.headers['content-type'])
        const answer = await held.answer.catch(() => null)
        held.answered = true
        held.accepted = answer !== null && acceptedIn(answer.body)
      }
    } catch (error) {
      fail(res, error)
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo

  const take = () => holding.splice(0, holding.length)
  return {
    url: `http://127.0.0.1:${port}`,
    hold(next) {
      decide = next
    },
    holdNext(stage) {
      const before = decide
      decide = () => {
        decide = before
        return stage
      }
    },
    held: () =>
      holding.map(({ raws, stage, answered, accepted, gone }) => ({ raws, stage, answered, accepted, gone })),
    drop() {
      for (const held of take()) held.res.destroy()
    },
    async release() {
      await Promise.all(
        take().map(async (held) => {
          try {
            send(held.res, await (held.answer ?? forward(held.body, 'application/json')))
          } catch (error) {
            fail(held.res, error)
          }
        }),
      )
    },
    mark: () => seen.length,
    seenSince: (mark, method) => seen.slice(mark).filter((call) => call.method === method),
    async close() {
      for (const held of take()) held.res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

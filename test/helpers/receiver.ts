/** One request a receiver got. */
export interface Received {
  headers: Record<string, string | string[] | undefined>
  body: string
  at: number
}

/**
 * A real HTTP server on 127.0.0.1 that records what it receives. `respond` decides each reply
 * (status, optional headers, or `'hang'` to never answer).
 */
export async function startReceiver(
  respond: (
    req: Received,
    index: number,
  ) => { status: number; headers?: Record<string, string>; body?: string } | 'hang' = () => ({ status: 200 }),
) {
  const { createServer } = await import('node:http')
  const received: Received[] = []
  const hanging = new Set<import('node:http').ServerResponse>()
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const entry = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      received.push(entry)
      const answer = respond(entry, received.length - 1)
      if (answer === 'hang') {
        hanging.add(res)
        return
      }
      res.writeHead(answer.status, answer.headers).end(answer.body ?? '')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as import('node:net').AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    /** The parsed bodies received so far. */
    events: () => received.map((r) => JSON.parse(r.body)),
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

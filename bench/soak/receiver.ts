/** The merchants' webhook endpoint during a soak: an HTTP server in the runner's process that answers 200 at once. */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Receiver {
  /** The URL the merchants' webhook configuration points at. */
  url: string
  /** The deliveries received since the last call. */
  take(): number
  close(): void
}

export async function startReceiver(): Promise<Receiver> {
  let received = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      received++
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    take() {
      const count = received
      received = 0
      return count
    },
    close() {
      server.closeAllConnections()
      server.close()
    },
  }
}

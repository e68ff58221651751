/**
 * One client process of the failover drill (failover.test.ts): WORKERS loops that each create a payment, have
 * the sandbox report it paid, refund part of it and, every third time, pay out, each request with its own
 * Idempotency-Key, against the gateways in GATEWAYS (comma-separated base URLs, taken in turn). A request
 * answered 503, 409 `idempotency_request_in_progress` or not at all is sent again, with the same key and body,
 * after a second, as a merchant's integration would. Every attempt is printed as one JSON line (the drill reads
 * them): what, key, the status (0: no answer within REQUEST_TIMEOUT_MS), the object's uuid, when it was sent
 * and how long it took.
 *
 * On SIGTERM the loops start no new operation; each finishes the one it is in (retrying until it is answered
 * 2xx, at most DRAIN_MS), then the process prints `{"done":true}` and exits.
 */
import { sign } from '../../src/http/auth.ts'

const GATEWAYS = (process.env.GATEWAYS ?? '').split(',').filter(Boolean)
const KEY_ID = process.env.API_KEY_ID ?? ''
const SECRET = process.env.API_SECRET ?? ''
const PREFIX = process.env.PREFIX ?? 'ha'
const WORKERS = Number(process.env.WORKERS ?? 3)
const REQUEST_TIMEOUT_MS = Number(process.env.REQUEST_TIMEOUT_MS ?? 20_000)
const DRAIN_MS = Number(process.env.DRAIN_MS ?? 90_000)
const RETRY_MS = 1_000

let stopping = false
let drainDeadline = Number.POSITIVE_INFINITY
process.on('SIGTERM', () => {
  stopping = true
  drainDeadline = Date.now() + DRAIN_MS
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
let turn = 0

interface Attempt {
  what: 'create' | 'paid' | 'refund' | 'payout'
  key: string
  status: number
  uuid: string | null
  code: string | null
  sent: number
  ms: number
}

const print = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`)

/** Sends `body` to `path` with `key` until it is answered 2xx: its uuid, or null if the drain ran out first. */
async function untilDone(
  what: Attempt['what'],
  key: string,
  path: string,
  body: object,
): Promise<string | null> {
  const text = JSON.stringify(body)
  for (;;) {
    const base = GATEWAYS[turn++ % GATEWAYS.length]
    const sent = Date.now()
    const attempt: Attempt = { what, key, status: 0, uuid: null, code: null, sent, ms: 0 }
    try {
      // Signed, as refunds and payouts must be; each attempt signs again (the same key and body).
      const t = Math.floor(sent / 1000)
      const v1 = sign(SECRET, t, 'POST', path, key, text)
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': key,
          'x-signature': `key_id=${KEY_ID},t=${t},v1=${v1}`,
        },
        body: text,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      })
      const answer = (await res.json().catch(() => ({}))) as { uuid?: string; error?: { code?: string } }
      attempt.status = res.status
      attempt.uuid = answer.uuid ?? null
      attempt.code = answer.error?.code ?? null
    } catch {
      // No answer: a hang past the bound, or a refused connection; the drill counts it.
    }
    attempt.ms = Date.now() - sent
    print(attempt)
    if (attempt.status >= 200 && attempt.status < 300) return attempt.uuid
    const retryable =
      attempt.status === 0 || attempt.status === 503 || attempt.code === 'idempotency_request_in_progress'
    if (!retryable || Date.now() > drainDeadline) return null
    await sleep(RETRY_MS)
  }
}

async function worker(index: number): Promise<void> {
  for (let n = 0; !stopping; n++) {
    const id = `${PREFIX}-${index}-${n}`
    const payment = await untilDone('create', `${id}-create`, '/integration/transactions', {
      amount: 150_000,
      currency: 'RUB',
      payment_method: 'card',
      external_id: id,
    })
    if (!payment) return
    if (!(await untilDone('paid', `${id}-paid`, `/integration/sandbox/transactions/${payment}/paid`, {})))
      return
    const refunded = await untilDone('refund', `${id}-refund`, '/integration/refunds', {
      transaction_uuid: payment,
      amount_minor: 1_000 + n,
      reason: `drill ${id}`,
    })
    if (!refunded) return
    if (n % 3 === 0) {
      const payout = await untilDone('payout', `${id}-payout`, '/integration/payouts', {
        external_id: `${id}-payout`,
        amount: 100 + n,
        currency: 'USD',
        method: 'usdt_wallet',
        destination: { network: 'TRC20', address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE' },
      })
      if (!payout) return
    }
  }
}

await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(i)))
print({ done: true })

#!/usr/bin/env node
/**
 * The developer CLI: `listen` brings the test mode's webhooks to a local URL, `trigger` makes an event happen.
 *
 *   merchant-gateway listen  --api-key sk_test_… [--forward-to http://localhost:4000/webhooks] [--events a,b]
 *   merchant-gateway trigger transaction.paid --api-key sk_test_… [--key-id mk_test_…]
 *
 * Both take --base-url (default http://127.0.0.1:3000) and read MERCHANT_GATEWAY_API_KEY,
 * MERCHANT_GATEWAY_KEY_ID and MERCHANT_GATEWAY_BASE_URL when the flags are not given.
 */
import { randomUUID } from 'node:crypto'
import { realpathSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { MerchantGateway } from './client.ts'
import { ApiError, MerchantGatewayError } from './errors.ts'
import { describe } from './http.ts'
import { generateSecret, signHeaders } from './webhooks.ts'

export interface Io {
  out(line: string): void
  err(line: string): void
}

const stdio: Io = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}

/** The events `trigger` can make happen, and what each does in test mode. */
export const TRIGGERS = {
  'transaction.paid': 'creates a card payment and simulates the provider paying it',
  'transaction.failed': 'creates a card payment and simulates the provider failing it',
  'transaction.expired': 'creates a card payment and simulates the provider timing it out',
  refund: 'creates a payment, pays it, and refunds it in full (transaction.refunded)',
  'payout.completed':
    'creates and pays a payment, then pays out 5 USD of it to a USDT wallet and completes it',
} as const
export type Trigger = keyof typeof TRIGGERS
/** The triggers that refund or pay out, which the API only takes signed. */
const SIGNED_TRIGGERS = new Set<Trigger>(['refund', 'payout.completed'])

const USAGE = `usage:
  merchant-gateway listen  --api-key sk_test_… [--forward-to <url>] [--events <name,…>] [--base-url <url>]
  merchant-gateway trigger <${Object.keys(TRIGGERS).join('|')}> --api-key sk_test_… [--key-id mk_test_…] [--base-url <url>]

listen   prints the test mode's events as they happen and, with --forward-to, POSTs each to your local
         endpoint signed (Standard Webhooks) with a session secret it prints; it reconnects by itself.
trigger  creates test objects and drives them through the sandbox so the event fires.
The key may come from MERCHANT_GATEWAY_API_KEY (and MERCHANT_GATEWAY_KEY_ID), the address from
MERCHANT_GATEWAY_BASE_URL.`

const time = () => new Date().toISOString().replace('T', ' ').slice(0, 19)

class UsageError extends Error {}

function client(values: { 'api-key'?: string; 'key-id'?: string; 'base-url'?: string }, command: string) {
  const apiKey = values['api-key'] ?? process.env.MERCHANT_GATEWAY_API_KEY
  if (!apiKey) throw new UsageError(`${command} needs --api-key sk_test_… (or MERCHANT_GATEWAY_API_KEY)`)
  if (apiKey.startsWith('sk_live_'))
    throw new UsageError(`${command} works in test mode only: use a test key (sk_test_…), not a live one`)
  return new MerchantGateway({
    apiKey,
    keyId: values['key-id'] ?? process.env.MERCHANT_GATEWAY_KEY_ID,
    baseUrl: values['base-url'] ?? process.env.MERCHANT_GATEWAY_BASE_URL,
  })
}

/** Reconnection delays after a lost stream: from the first, doubling to the last. */
const RECONNECT_FIRST_MS = 250
const RECONNECT_MAX_MS = 5_000
const FORWARD_TIMEOUT_MS = 10_000

/**
 * `listen`: one stream at a time, reconnected with Last-Event-ID whenever it ends, until `signal` aborts. An
 * answer that another attempt cannot change (a live or revoked key: 401, 403) ends it with that error.
 */
export async function listen(
  mg: MerchantGateway,
  options: { forwardTo?: string; events?: string[]; signal: AbortSignal; secret?: string },
  io: Io = stdio,
): Promise<void> {
  const secret = options.secret ?? generateSecret()
  let lastEventId: string | undefined
  let delay = RECONNECT_FIRST_MS
  let connectedBefore = false
  while (!options.signal.aborted) {
    try {
      for await (const message of mg.events.stream({
        events: options.events,
        lastEventId,
        signal: options.signal,
      })) {
        if (message.type === 'ready') {
          delay = RECONNECT_FIRST_MS
          if (connectedBefore) io.out(`${time()}  Reconnected to ${mg.http.baseUrl}`)
          else
            io.out(
              `Ready! Listening to ${mg.http.baseUrl} (test mode). Your webhook signing secret is ${secret} (^C to quit)`,
            )
          connectedBefore = true
          continue
        }
        lastEventId = message.id
        io.out(`${time()}   --> ${message.event} [${message.id}]`)
        if (options.forwardTo)
          await forward(options.forwardTo, message.id, message.body, secret, io, options.signal)
      }
      if (options.signal.aborted) return
      io.err(`${time()}  The stream ended; reconnecting in ${delay} ms`)
    } catch (error) {
      if (options.signal.aborted) return
      if (error instanceof ApiError && error.status < 500 && error.status !== 429) throw error
      io.err(`${time()}  Lost the connection (${(error as Error).message}); reconnecting in ${delay} ms`)
    }
    await sleep(delay, undefined, { signal: options.signal }).catch(() => {})
    delay = Math.min(delay * 2, RECONNECT_MAX_MS)
  }
}

/** POSTs one event to the local endpoint, signed as the service signs its webhooks, and prints its answer. */
async function forward(
  url: string,
  id: string,
  body: string,
  secret: string,
  io: Io,
  stop: AbortSignal,
): Promise<void> {
  const started = performance.now()
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signHeaders(body, { id, secrets: secret }) },
      body,
      redirect: 'manual',
      signal: AbortSignal.any([stop, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
    })
    await response.arrayBuffer()
    const ms = Math.round(performance.now() - started)
    io.out(`${time()}  <--  [${response.status}] POST ${url} [${id}] (${ms} ms)`)
  } catch (error) {
    io.out(`${time()}  [ERROR] POST ${url} [${id}] failed: ${describe(error)}`)
  }
}

/** `trigger`: the steps that make `event` fire, each printed as it is done. */
export async function trigger(mg: MerchantGateway, event: Trigger, io: Io = stdio): Promise<void> {
  const step = (line: string) => io.out(`Running fixture: ${line}`)
  const reference = `cli-${event.replace(/\./g, '-')}-${randomUUID().slice(0, 8)}`
  io.out(`Setting up fixture for: ${event}`)
  const transaction = await mg.transactions.create({
    amount: 150000,
    currency: 'RUB',
    payment_method: 'card',
    external_id: reference,
    description: `merchant-gateway trigger ${event}`,
  })
  step(`created transaction ${transaction.uuid} (1,500.00 RUB)`)
  if (event === 'transaction.failed' || event === 'transaction.expired') {
    const outcome = event === 'transaction.failed' ? 'failed' : 'expired'
    await mg.sandbox.transactions[outcome](transaction.uuid)
    step(`simulated the provider's '${outcome}' for ${transaction.uuid}`)
    return io.out(`Trigger succeeded! ${event} fired for transaction ${transaction.uuid}`)
  }
  await mg.sandbox.transactions.paid(transaction.uuid)
  step(`simulated the provider's 'paid' for ${transaction.uuid}`)
  if (event === 'transaction.paid')
    return io.out(`Trigger succeeded! transaction.paid fired for transaction ${transaction.uuid}`)
  if (event === 'refund') {
    const refund = await mg.refunds.create({
      transaction_uuid: transaction.uuid,
      reason: 'merchant-gateway trigger',
    })
    step(`refunded ${transaction.uuid} in full: refund ${refund.uuid} (${refund.status})`)
    return io.out(`Trigger succeeded! transaction.refunded fired for transaction ${transaction.uuid}`)
  }
  const quote = await mg.payouts.quote({ amount: 500, currency: 'USD', method: 'usdt_wallet' })
  step(`quoted 5.00 USD to a USDT wallet: quote ${quote.quote_id}`)
  const payout = await mg.payouts.create({
    amount: 500,
    currency: 'USD',
    method: 'usdt_wallet',
    destination: { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' },
    external_id: reference,
    quote_id: quote.quote_id,
  })
  step(`created payout ${payout.uuid} (${payout.status})`)
  const done = await mg.sandbox.payouts.completed(payout.uuid)
  step(`simulated the provider's 'completed' for ${payout.uuid} (${done.status})`)
  io.out(`Trigger succeeded! payout.completed fired for payout ${payout.uuid}`)
}

/** Runs the CLI with these arguments; resolves with the exit code. */
export async function main(argv: string[], io: Io = stdio, signal?: AbortSignal): Promise<number> {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    io.err(`${(error as Error).message}\n\n${USAGE}`)
    return 2
  }
  const { values, positionals } = parsed
  const [command, ...rest] = positionals
  if (values.help || !command) {
    ;(values.help ? io.out : io.err)(USAGE)
    return values.help ? 0 : 2
  }
  try {
    if (command === 'listen') {
      if (rest.length) throw new UsageError(`listen takes no arguments, only flags (got ${rest.join(' ')})`)
      const mg = client(values, 'listen')
      if (values['forward-to'] !== undefined && !/^https?:\/\//.test(values['forward-to']))
        throw new UsageError('--forward-to must be an http(s) URL, e.g. http://localhost:4000/webhooks')
      const stop = new AbortController()
      const quit = () => stop.abort()
      process.once('SIGINT', quit)
      process.once('SIGTERM', quit)
      signal?.addEventListener('abort', quit, { once: true })
      try {
        await listen(
          mg,
          {
            forwardTo: values['forward-to'],
            events: values.events
              ?.split(',')
              .map((name) => name.trim())
              .filter(Boolean),
            signal: stop.signal,
          },
          io,
        )
      } finally {
        process.off('SIGINT', quit)
        process.off('SIGTERM', quit)
      }
      return 0
    }
    if (command === 'trigger') {
      const event = rest[0]
      if (rest.length !== 1 || !event || !(event in TRIGGERS))
        throw new UsageError(`trigger takes one event: ${Object.keys(TRIGGERS).join(', ')}`)
      const mg = client(values, 'trigger')
      // Refunds and payouts are signed: find out before anything is created, not halfway.
      if (SIGNED_TRIGGERS.has(event as Trigger) && !mg.http.canSign)
        throw new UsageError(
          `trigger ${event} signs its requests: give --key-id mk_test_… (or MERCHANT_GATEWAY_KEY_ID)`,
        )
      await trigger(mg, event as Trigger, io)
      return 0
    }
    throw new UsageError(`unknown command: ${command}`)
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`Error: ${error.message}`)
      return 2
    }
    if (error instanceof ApiError) {
      io.err(
        `Error: ${error.message} (${error.status} ${error.code}${error.requestId ? `, request ${error.requestId}` : ''})`,
      )
      return 1
    }
    if (error instanceof MerchantGatewayError) {
      io.err(`Error: ${error.message}`)
      return 1
    }
    throw error
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'api-key': { type: 'string' },
      'key-id': { type: 'string' },
      'base-url': { type: 'string' },
      'forward-to': { type: 'string' },
      events: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

// Run as a program (not imported).
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = await main(process.argv.slice(2))

#!/usr/bin/env node
/**
 * The developer CLI: `listen` brings the test mode's webhooks to a local URL, `trigger` makes an event happen.
 *
 *   merchant-gateway listen  --api-key sk_test_… [--forward-to http://localhost:4000/webhooks] [--events a,b]
 *   merchant-gateway trigger transaction.paid --api-key sk_test_… [--key-id mk_test_…]
 *
 * Both take --base-url (default http://127.0.0.1:3000) and read MERCHANT_GATEWAY_API_KEY,
 * MERCHANT_GATEWAY_KEY_ID and MERCHANT_GATEWAY_BASE_URL when the flags are not given, as the SDK's client does.
 */
import { randomUUID } from 'node:crypto'
import { realpathSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { MerchantGateway, type Transaction } from './client.ts'
import { ApiError, MerchantGatewayError } from './errors.ts'
import { describe, ENVIRONMENT, resolveClientOptions } from './http.ts'
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
  'payout.completed': 'pays in what the payout needs, then pays out 5 USDT to a USDT wallet and completes it',
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
  // The client's own order (a flag, else its variable, else the default), so both read the same variables.
  const options = resolveClientOptions({
    apiKey: values['api-key'],
    keyId: values['key-id'],
    baseUrl: values['base-url'],
  })
  if (!options.apiKey) throw new UsageError(`${command} needs --api-key sk_test_… (or ${ENVIRONMENT.apiKey})`)
  if (options.apiKey.startsWith('sk_live_'))
    throw new UsageError(`${command} works in test mode only: use a test key (sk_test_…), not a live one`)
  return new MerchantGateway(options)
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

/** Payouts leave the USDT balance, and `trigger payout.completed` pays out this much of it (micro USDT). */
const PAYOUT_CURRENCY = 'USDT'
const PAYOUT_AMOUNT_MICRO = 5_000_000
const PAYOUT_WALLET = { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' } as const
/** A trigger's payment, in major units of the merchant's settlement currency. */
const PAYMENT_MAJOR = 15
/** Funding payments a trigger makes at most before it gives up (the first one's fee tells the next's size). */
const MAX_FUNDING_PAYMENTS = 3

/** Minor-unit digits: USDT counts micro units; an ISO 4217 code has what Intl knows of it. */
function exponentOf(currency: string): number {
  if (currency === 'USDT') return 6
  try {
    return (
      new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ??
      2
    )
  } catch {
    return 2
  }
}

/** `15.000000 USDT`: minor units in major ones, as the service formats them. */
function formatMinor(amount: number, currency: string): string {
  const exponent = exponentOf(currency)
  const sign = amount < 0 ? '-' : ''
  const digits = String(Math.abs(amount)).padStart(exponent + 1, '0')
  const major = digits.slice(0, digits.length - exponent)
  return `${sign}${exponent ? `${major}.${digits.slice(-exponent)}` : major} ${currency}`
}

/** The available balance in `currency` (0 when the merchant has none in it yet). */
async function available(mg: MerchantGateway, currency: string): Promise<number> {
  const { data } = await mg.balances.list()
  return data.find((balance) => balance.currency === currency)?.available ?? 0
}

/**
 * `trigger`: the steps that make `event` fire, each printed as it is done. Payments are made in the merchant's
 * settlement currency, the one currency every merchant takes without a market rate (a fresh database has
 * none), and what a refund or a payout will take from the balance is paid in first when the balance lacks it.
 * A trigger that cannot work says why before it creates anything.
 */
export async function trigger(mg: MerchantGateway, event: Trigger, io: Io = stdio): Promise<void> {
  const step = (line: string) => io.out(`Running fixture: ${line}`)
  const reference = `cli-${event.replace(/\./g, '-')}-${randomUUID().slice(0, 8)}`
  io.out(`Setting up fixture for: ${event}`)
  // Read-only first: the settlement currency, and for a payout what it costs and whether it can be funded.
  const { settlement_currency: currency } = await mg.rates.list()
  const amount = PAYMENT_MAJOR * 10 ** exponentOf(currency)
  let funding = 0
  const createPayment = async (minor: number, purpose: string) => {
    const created = await mg.transactions.create({
      amount: minor,
      currency,
      payment_method: 'card',
      // The trigger's own payment comes first; the ones that fund it after.
      external_id: funding === 0 ? reference : `${reference}-funding-${funding}`,
      description: `merchant-gateway trigger ${purpose}`,
    })
    step(`created transaction ${created.uuid} (${formatMinor(minor, currency)})`)
    return created
  }
  const pay = async (uuid: string) => {
    const paid = await mg.sandbox.transactions.paid(uuid)
    step(`simulated the provider's 'paid' for ${uuid}`)
    return paid
  }
  /**
   * Pays in until `short` more of `currency` is available, sizing each payment by what `sample` (a payment of
   * the same method) credits after the merchant's fee.
   */
  const fund = async (short: number, sample: Transaction) => {
    let remaining = short
    while (remaining > 0) {
      if (funding === MAX_FUNDING_PAYMENTS || sample.settlement_amount <= 0)
        throw new MerchantGatewayError(
          `the merchant's card fee leaves ${formatMinor(sample.settlement_amount, currency)} of a ${formatMinor(sample.amount, currency)} payment: test payments cannot fund this`,
        )
      const size = ceilDiv(BigInt(remaining) * BigInt(sample.amount), BigInt(sample.settlement_amount)) + 1n
      funding++
      const payment = await createPayment(Number(size), `${event} (funding)`)
      await pay(payment.uuid)
      remaining -= payment.settlement_amount
      step(`paid in ${formatMinor(payment.settlement_amount, currency)} to cover the ${event}`)
    }
  }

  if (event === 'payout.completed') {
    const quote = await mg.payouts.quote({
      amount: PAYOUT_AMOUNT_MICRO,
      currency: PAYOUT_CURRENCY,
      method: 'usdt_wallet',
    })
    const usdt = await available(mg, PAYOUT_CURRENCY)
    const short = quote.payout_usdt_amount_micro - usdt
    if (short > 0 && currency !== PAYOUT_CURRENCY)
      throw new MerchantGatewayError(
        `payout.completed pays out ${formatMinor(quote.payout_usdt_amount_micro, PAYOUT_CURRENCY)} (fee included) from the USDT balance, ` +
          `which has ${formatMinor(usdt, PAYOUT_CURRENCY)} available; this merchant settles in ${currency}, so a test payment cannot fund it. Nothing was created`,
      )
    if (currency === PAYOUT_CURRENCY) {
      const payment = await createPayment(amount, event)
      if (short - payment.settlement_amount > 0) await fund(short - payment.settlement_amount, payment)
      await pay(payment.uuid)
    }
    // A quote of its own: funding may have taken longer than the first one is held.
    const held = await mg.payouts.quote({
      amount: PAYOUT_AMOUNT_MICRO,
      currency: PAYOUT_CURRENCY,
      method: 'usdt_wallet',
    })
    step(
      `quoted ${formatMinor(PAYOUT_AMOUNT_MICRO, PAYOUT_CURRENCY)} to a USDT wallet: quote ${held.quote_id} (${formatMinor(held.payout_usdt_amount_micro, PAYOUT_CURRENCY)} with the fee)`,
    )
    const payout = await mg.payouts.create({
      amount: PAYOUT_AMOUNT_MICRO,
      currency: PAYOUT_CURRENCY,
      method: 'usdt_wallet',
      destination: PAYOUT_WALLET,
      external_id: reference,
      quote_id: held.quote_id,
    })
    step(`created payout ${payout.uuid} (${payout.status})`)
    const done = await mg.sandbox.payouts.completed(payout.uuid)
    step(`simulated the provider's 'completed' for ${payout.uuid} (${done.status})`)
    return io.out(`Trigger succeeded! payout.completed fired for payout ${payout.uuid}`)
  }

  const before = event === 'refund' ? await available(mg, currency) : 0
  const transaction = await createPayment(amount, event)
  if (event === 'transaction.failed' || event === 'transaction.expired') {
    const outcome = event === 'transaction.failed' ? 'failed' : 'expired'
    await mg.sandbox.transactions[outcome](transaction.uuid)
    step(`simulated the provider's '${outcome}' for ${transaction.uuid}`)
    return io.out(`Trigger succeeded! ${event} fired for transaction ${transaction.uuid}`)
  }
  if (event === 'refund') {
    // A full refund takes the whole amount back (at rate 1, in the settlement currency); the payment credits
    // it less the merchant's fee, so the balance must hold the difference.
    const short = transaction.amount - transaction.settlement_amount - before
    if (short > 0)
      await fund(short, transaction).catch(async (error: unknown) => {
        // Nothing to refund after all: the payment is closed rather than left to be paid.
        await mg.sandbox.transactions.expired(transaction.uuid)
        throw error
      })
  }
  await pay(transaction.uuid)
  if (event === 'transaction.paid')
    return io.out(`Trigger succeeded! transaction.paid fired for transaction ${transaction.uuid}`)
  const refund = await mg.refunds.create({
    transaction_uuid: transaction.uuid,
    reason: 'merchant-gateway trigger',
  })
  step(`refunded ${transaction.uuid} in full: refund ${refund.uuid} (${refund.status})`)
  io.out(`Trigger succeeded! transaction.refunded fired for transaction ${transaction.uuid}`)
}

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b

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

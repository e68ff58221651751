import { randomBytes } from 'node:crypto'
import { type Command, InvalidArgumentError } from 'commander'
import { namedValues, readSecretSource } from '../lib/cli-values.ts'
import { buildEmulator, parseFaults } from './server.ts'

/** Milliseconds separated by commas, each a whole number of at least 0. */
const pauses = (value: string) => {
  const ms = value.split(',').map((part) => Number(part.trim()))
  if (ms.some((n) => !Number.isInteger(n) || n < 0))
    throw new InvalidArgumentError('--callback-retry-ms is whole milliseconds separated by commas.')
  return ms
}

const port = (value: string) => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new InvalidArgumentError('--port is from 1 to 65535.')
  return n
}

interface EmulatorCommandOptions {
  port: number
  host: string
  publicUrl?: string
  apiKey?: string
  callbackUrl?: string
  callbackSecret?: string
  fault: Record<string, string>
  seed: number
  callbackRetryMs?: number[]
}

/** `merchant-gateway provider-emulator`: the emulator as a program of its own (docs/CONNECTORS.md). */
export function registerEmulatorCommand(program: Command, out: (line: string) => void): void {
  program
    .command('provider-emulator')
    .description('Run the provider emulator: the acquirer side of docs/CONNECTORS.md, to rehearse against')
    .option('--port <port>', 'its port', port, 4100)
    .option('--host <host>', 'the address it listens on', '127.0.0.1')
    .option('--public-url <url>', 'where it is reached (default http://<host>:<port>)')
    .option('--api-key <env:VAR|file:PATH>', 'the API key accounts call it with (default: made and printed)')
    .option('--callback-url <url>', "where it posts its callbacks: the account's callback URL at the gateway")
    .option('--callback-secret <env:VAR|file:PATH>', "the account's callback secret, to sign them with")
    .option(
      '--callback-retry-ms <ms,...>',
      "the pauses before a callback's second, third, … attempt (default 500,1000,2000,4000)",
      pauses,
    )
    .option(
      '--fault <name=value>',
      'a fault to start with (repeatable), e.g. error_rate=0.2 or drop_callbacks=true; PUT /admin/faults changes them',
      namedValues('fault'),
      {},
    )
    .option('--seed <n>', 'seeds the rate faults, so that a run can be replayed', (v: string) => Number(v), 1)
    .action(async (opts: EmulatorCommandOptions) => {
      if (!opts.callbackUrl !== !opts.callbackSecret)
        throw new InvalidArgumentError('--callback-url and --callback-secret go together.')
      const apiKey = opts.apiKey
        ? readSecretSource(opts.apiKey)
        : `sk_emulator_${randomBytes(16).toString('hex')}`
      const publicUrl = (opts.publicUrl ?? `http://${opts.host}:${opts.port}`).replace(/\/+$/, '')
      let faults: ReturnType<typeof parseFaults>
      try {
        faults = parseFaults(opts.fault)
      } catch (error) {
        throw new InvalidArgumentError((error as Error).message)
      }
      const emulator = buildEmulator({
        faults,
        seed: opts.seed,
        apiKey,
        publicUrl,
        callbackUrl: opts.callbackUrl,
        callbackSecret: opts.callbackSecret ? readSecretSource(opts.callbackSecret) : undefined,
        callbackRetryMs: opts.callbackRetryMs,
      })
      await emulator.listen({ port: opts.port, host: opts.host })
      out(`provider emulator listening on ${publicUrl} (API under ${publicUrl}/v1)`)
      if (!opts.apiKey) out(`  API key: ${apiKey}`)
      if (opts.callbackUrl) out(`  callbacks to ${opts.callbackUrl}`)
      const stop = () => void emulator.close().then(() => process.exit(0))
      process.on('SIGINT', stop)
      process.on('SIGTERM', stop)
    })
}

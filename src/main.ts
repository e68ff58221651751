#!/usr/bin/env node
import './lib/heap.ts'
import { Command, InvalidArgumentError, Option } from 'commander'
import { buildApp, createLogger, createServices, logDestination, type Services } from './app.ts'
import { type Config, ConfigError, loadConfig, parseDuration } from './config.ts'
import { USER_ROLES, type UserRole } from './db/enums.ts'
import { connect, EmbeddedDatabaseBusyError, migrateToLatest } from './db/index.ts'
import type { Mode } from './db/types.ts'
import { registerEmulatorCommand } from './emulator/cli.ts'
import { AppError } from './http/errors.ts'
import { namedValues } from './lib/cli-values.ts'
import { setMetricSources, startMetricsServer } from './lib/metrics.ts'
import { isKnownCurrency } from './lib/money.ts'
import { keyName } from './modules/merchants/service.ts'
import { registerConnectorCommands } from './modules/providers/cli.ts'
import { H2H_METHODS, isH2hMethod } from './modules/requisites/service.ts'
import { registerPaymentCommands } from './modules/transactions/cli.ts'
import { PAYMENT_METHODS } from './modules/transactions/schemas.ts'
import { CLI } from './modules/users/deps.ts'
import { DEMO_OWNER_EMAIL, seedDemo } from './seed.ts'
import { startWorkers } from './workers/index.ts'

const out = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const integer = (name: string, min: number, max: number) => (value: string) => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < min || n > max)
    throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}.`)
  return n
}
const seconds = (name: string) => (value: string) => {
  try {
    return parseDuration(name, value)
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message)
  }
}

/** Opens the configured database, migrated, runs `work` with the services over it, and closes it. */
async function withServices<T>(work: (services: Services, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig()
  const handle = await connect({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
    driver: config.databaseDriver,
  })
  const services = createServices(handle.db, config)
  try {
    await migrateToLatest(handle.db)
    return await work(services, config)
  } finally {
    await services.close()
    await handle.close()
  }
}

/** A `list` command under `parent`: one line per row that `rows` reads. */
function listCommand<T>(
  parent: Command,
  description: string,
  rows: (services: Services) => Promise<T[]>,
  line: (row: T) => string,
): void {
  parent
    .command('list')
    .description(description)
    .action(() =>
      withServices(async (services) => {
        for (const row of await rows(services)) out(line(row))
      }),
    )
}

interface ServeOptions {
  role: 'all' | 'api' | 'worker'
  /** On the embedded default: give the demo owner a new password, printed in the banner. */
  resetDemoPassword?: boolean
}

async function serve({ role, resetDemoPassword = false }: ServeOptions): Promise<void> {
  const config = loadConfig()
  if (resetDemoPassword && config.databaseUrl)
    throw new UserError(
      '--reset-demo-password is for the embedded database; on PostgreSQL run `users reset-password <email>`',
    )
  const logger = createLogger(
    config.logLevel,
    logDestination(config.logFormat, process.stdout.isTTY === true),
  )
  const handle = await connect({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
    workerPoolSize: config.databaseWorkerPoolSize,
    driver: config.databaseDriver,
    queryTimeoutMs: config.databaseQueryTimeoutMs,
    log: logger,
  })
  const applied = await migrateToLatest(handle.db)
  if (applied.length) logger.info({ migrations: applied }, 'database migrated')
  const services = createServices(handle.db, config, { log: logger })
  const demo = handle.kind === 'pglite' ? await seedDemo(handle.db, services) : null
  // A demo owner made just now has its first password already; one made before gets a new one.
  if (demo && resetDemoPassword && !demo.owner) {
    const reset = await services.users.resetPassword(DEMO_OWNER_EMAIL, CLI)
    demo.owner = { email: reset.user.email, password: reset.password }
  }

  const app = await buildApp({ db: handle.db, config, services, logger })
  // The workers' services query their own connections (handle.background), never waiting behind requests; the
  // embedded database has one session, so there the request services serve the workers too.
  const jobServices =
    role === 'api'
      ? null
      : handle.background === handle.db
        ? services
        : createServices(handle.background, config, { log: logger })
  const workers = jobServices
    ? startWorkers(handle, jobServices, logger, { chainIntervalMs: config.chainWatchIntervalMs })
    : null
  if (role !== 'worker') await app.listen({ port: config.port, host: config.host })
  setMetricSources({
    outbox: () => services.webhooks.outboxStats(),
    pool: () => handle.poolStats(),
    providers: async () => ({
      syncLagSeconds: await services.providers.handovers.syncLagSeconds(),
      routesWithoutAccount: await services.providers.routes.withoutAccount(),
    }),
  })
  const metricsServer = config.metrics
    ? await startMetricsServer(config.metrics.port, config.metrics.host)
    : null
  if (config.metrics) logger.info(config.metrics, 'metrics served at /metrics')

  if (demo) {
    const base = config.publicBaseUrl
    out('')
    out(
      `merchant-gateway ${role === 'worker' ? 'worker' : `listening on ${base}`} (embedded database in ${config.dataDir})`,
    )
    out(`  Demo merchant ${demo.merchantUuid}${demo.created ? ' (created)' : ''}`)
    out(`  Test key id:     ${demo.keyId}`)
    out(`  Test key secret: ${demo.secret}`)
    out(`  API docs:        ${base}/docs`)
    out(`  Dashboard:       ${base}/dashboard/`)
    if (demo.owner) {
      out(`    sign in as ${demo.owner.email} with the password ${demo.owner.password}`)
      out(
        '    (shown this once: only its hash is kept; lost, start with --reset-demo-password for a new one)',
      )
    } else {
      out(`    sign in as ${DEMO_OWNER_EMAIL} with the password printed at the first start`)
      out('    (lost it? stop the server and start it with `npm start -- --reset-demo-password`)')
    }
    // The variables the SDK and its CLI read, so that one paste sets up a shell for both.
    out('  For the SDK and CLI, paste into a shell:')
    out(`    export MERCHANT_GATEWAY_BASE_URL=${base}`)
    out(`    export MERCHANT_GATEWAY_KEY_ID=${demo.keyId}`)
    out(`    export MERCHANT_GATEWAY_API_KEY=${demo.secret}`)
    out('  Try it:')
    out(
      `    curl -s -X POST ${base}/integration/transactions -H 'Content-Type: application/json' -H 'X-Api-Key: ${demo.secret}' ` +
        `-d '{"amount":150000,"currency":"RUB","payment_method":"card","external_id":"order-'"$(date +%s)"'","description":"Demo order"}'`,
    )
    out('')
  }

  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) process.exit(1)
    stopping = true
    logger.info({ signal }, 'shutting down')
    // Long enough for a delivery attempt in flight to end and be recorded.
    const force = setTimeout(() => process.exit(1), config.webhook.timeoutMs + 10_000)
    force.unref()
    // Stop taking requests and finish those in flight, then let the workers finish and give back their claims.
    await app.close()
    metricsServer?.close()
    await workers?.stop()
    await services.close()
    if (jobServices !== services) await jobServices?.close()
    await handle.close()
    process.exit(0)
  }
  process.on('SIGINT', () => void stop('SIGINT'))
  process.on('SIGTERM', () => void stop('SIGTERM'))
}

const program = new Command('merchant-gateway')
  .description('A payment gateway merchant integration API: the server and its operator commands.')
  .showHelpAfterError()

program
  .command('serve', { isDefault: true })
  .description('Run the service (migrates the database first)')
  .addOption(
    new Option('--role <role>', 'what this process runs').choices(['all', 'api', 'worker']).default('all'),
  )
  .option(
    '--reset-demo-password',
    "embedded database only: give the demo merchant's owner a new password, printed at start (ends their sessions)",
  )
  .action((opts: ServeOptions) => serve(opts))

program
  .command('migrate')
  .description('Bring the database schema up to date')
  .action(() =>
    withServices(async () => {
      out('database is up to date')
    }),
  )

const merchants = program.command('merchants').description('Manage merchants')
merchants
  .command('create')
  .description('Create a merchant with one test and one live API key')
  .requiredOption('--name <name>', 'display name, shown on the hosted payment page')
  .option('--settlement-currency <code>', 'currency the merchant is settled in', 'USDT')
  .option('--json', 'print the result as JSON on the last line')
  .action((opts: { name: string; settlementCurrency: string; json?: boolean }) =>
    withServices(async (services) => {
      const settlementCurrency = opts.settlementCurrency.toUpperCase()
      if (!isKnownCurrency(settlementCurrency))
        throw new UserError(
          `--settlement-currency ${opts.settlementCurrency} is not an ISO 4217 code or USDT`,
        )
      const { merchant, keys } = await services.merchants.createMerchant({
        name: opts.name,
        settlementCurrency,
      })
      if (opts.json) return out(JSON.stringify({ merchant_uuid: merchant.uuid, keys }))
      out(`merchant ${merchant.uuid} "${merchant.name}" (settles in ${merchant.settlement_currency})`)
      out(`  test key: ${keys.test.key_id}  secret: ${keys.test.secret}`)
      out(`  live key: ${keys.live.key_id}  secret: ${keys.live.secret}`)
      out('The secrets are shown only now: store them safely.')
    }),
  )
merchants
  .command('update <uuid>')
  .description("Change a merchant's settings")
  .option('--name <name>', 'display name')
  .option(
    '--settlement-hold <duration>',
    'hold before paid money is available, live mode (e.g. 86400, 24h)',
    seconds('--settlement-hold'),
  )
  .option(
    '--transaction-ttl <duration>',
    'how long a transaction stays payable (e.g. 1800, 30m)',
    seconds('--transaction-ttl'),
  )
  .option('--fx-markup-bps <n>', 'FX markup in basis points', integer('--fx-markup-bps', 0, 5000))
  .option(
    '--payout-fee-bps <n>',
    'payout fee in basis points of the USDT amount',
    integer('--payout-fee-bps', 0, 5000),
  )
  .option(
    '--payout-fixed-fee-micro <n>',
    'fixed payout fee in USDT micro (1000000 = 1 USDT)',
    integer('--payout-fixed-fee-micro', 0, 1_000_000_000),
  )
  .action(
    (
      uuid: string,
      opts: {
        name?: string
        settlementHold?: number
        transactionTtl?: number
        fxMarkupBps?: number
        payoutFeeBps?: number
        payoutFixedFeeMicro?: number
      },
    ) =>
      withServices(async (services) => {
        const updated = await services.merchants.updateMerchant(uuid, {
          name: opts.name,
          settlementHoldSeconds: opts.settlementHold,
          transactionTtlSeconds: opts.transactionTtl,
          fxMarkupBps: opts.fxMarkupBps,
          payoutFeeBps: opts.payoutFeeBps,
          payoutFixedFeeMicro: opts.payoutFixedFeeMicro,
        })
        if (!updated) throw new UserError(`no merchant ${uuid}`)
        out(JSON.stringify(updated))
      }),
  )
listCommand(
  merchants,
  'List merchants',
  (services) => services.merchants.listMerchants(),
  (m) => `${m.uuid}  ${m.name}  ${m.settlement_currency}`,
)

const keys = program.command('keys').description('Manage API keys')
keys
  .command('create')
  .description('Create an API key for a merchant')
  .requiredOption('--merchant <uuid>', 'the merchant')
  .addOption(new Option('--mode <mode>', 'test or live').choices(['test', 'live']).makeOptionMandatory())
  .option('--name <name>', 'what the key is for, shown on the dashboard (at most 100 characters)')
  .option('--json', 'print the key as JSON')
  .action((opts: { merchant: string; mode: Mode; name?: string; json?: boolean }) =>
    withServices(async (services) => {
      const name = opts.name === undefined ? null : keyName(opts.name)
      if (name === undefined) throw new UserError('--name: 1 to 100 characters, no control characters')
      const key = await services.merchants.createKey(opts.merchant, opts.mode, { name })
      if (!key) throw new UserError(`no merchant ${opts.merchant}`)
      out(
        opts.json
          ? JSON.stringify({ key_id: key.key_id, secret: key.secret })
          : `key ${key.key_id}  secret: ${key.secret}  (shown only now)`,
      )
    }),
  )
keys
  .command('revoke <keyId>')
  .description('Revoke an API key (answers 401 from then on)')
  .action((keyId: string) =>
    withServices(async (services) => {
      const revoked = await services.merchants.revokeKey(keyId)
      if (!revoked) throw new UserError(`no active key ${keyId}`)
      out(`revoked ${revoked.key_id}`)
    }),
  )

const rates = program.command('rates').description('Manage market FX rates (units of a currency per 1 USDT)')
rates
  .command('set <currency> <rate>')
  .description('Set the market rate of a currency, e.g. "rates set RUB 92.15"')
  .action((currency: string, rate: string) =>
    withServices(async (services) => {
      try {
        const row = await services.rates.setMarketRate(currency.toUpperCase(), rate)
        out(`${row.currency} ${row.market_rate} per 1 USDT (at ${row.updated_at.toISOString()})`)
      } catch (error) {
        throw new UserError((error as Error).message)
      }
    }),
  )
listCommand(
  rates,
  'List market rates',
  (services) => services.rates.listMarketRates(),
  (r) => `${r.currency}  ${r.market_rate}  ${r.updated_at.toISOString()}`,
)

program
  .command('fees')
  .description("Set a merchant's fee for a payment method")
  .command('set')
  .requiredOption('--merchant <uuid>', 'the merchant')
  .addOption(
    new Option('--method <method>', 'payment method').choices([...PAYMENT_METHODS]).makeOptionMandatory(),
  )
  .requiredOption('--fee-bps <n>', 'fee in basis points of the amount', integer('--fee-bps', 0, 10000))
  .option(
    '--merchant-share-bps <n>',
    'share of the fee the merchant bears (10000 = all)',
    integer('--merchant-share-bps', 0, 10000),
    10000,
  )
  .action((opts: { merchant: string; method: string; feeBps: number; merchantShareBps: number }) =>
    withServices(async (services) => {
      if (!(await services.merchants.getMerchant(opts.merchant)))
        throw new UserError(`no merchant ${opts.merchant}`)
      const fee = await services.merchants.setFee(
        opts.merchant,
        opts.method,
        opts.feeBps,
        opts.merchantShareBps,
      )
      out(
        `${fee.payment_method}: fee ${fee.fee_bps} bps, merchant bears ${fee.merchant_fee_share_bps} bps of it`,
      )
    }),
  )

const requisites = program
  .command('requisites')
  .description("Manage the operator's pool of host-to-host requisites")
requisites
  .command('add')
  .description(
    'Add requisites, e.g. --method p2p_card --field card_number=2200... --field bank_name="Demo Bank"',
  )
  .addOption(
    new Option('--method <method>', 'payment method').choices([...H2H_METHODS]).makeOptionMandatory(),
  )
  .requiredOption(
    '--field <name=value>',
    'a field shown to the customer (repeatable)',
    namedValues('field'),
    {},
  )
  .action((opts: { method: string; field: Record<string, string> }) =>
    withServices(async (services) => {
      if (!isH2hMethod(opts.method)) throw new UserError(`unknown method ${opts.method}`)
      const row = await services.requisites.add(opts.method, opts.field)
      out(`requisites ${row.uuid} for ${row.payment_method}: ${JSON.stringify(row.fields)}`)
    }),
  )
listCommand(
  requisites,
  'List the pool',
  (services) => services.requisites.list(),
  (r) =>
    `${r.uuid}  ${r.payment_method}  ${r.active ? 'active' : 'inactive'}  used ${r.assigned_count}×  ${JSON.stringify(r.fields)}`,
)

program
  .command('ledger')
  .description('The double-entry ledger')
  .command('verify')
  .description(
    'Recompute every balance from the journal and check every entry balances; exits 1 on any difference',
  )
  .action(() =>
    withServices(async (services) => {
      const report = await services.ledger.verify()
      for (const m of report.mismatches) {
        out(
          `MISMATCH account ${m.uuid} (${m.merchant_uuid} ${m.mode} ${m.currency} ${m.kind}): balance ${m.balance}, journal ${m.journal}`,
        )
      }
      for (const e of report.unbalanced)
        out(`UNBALANCED entry ${e.uuid}: lines sum to ${e.total} over ${e.currencies} currencies`)
      out(
        report.ok
          ? `ledger ok: ${report.entries} entries, every balance matches the journal`
          : 'ledger has differences',
      )
      if (!report.ok) process.exitCode = 1
    }),
  )

const users = program.command('users').description("Manage a merchant's dashboard users")
users
  .command('invite')
  .description('Invite a person to the dashboard: prints a one-time link to set their password (valid 24 h)')
  .requiredOption('--merchant <uuid>', 'the merchant')
  .requiredOption('--email <email>', 'their email: unique across all merchants')
  .addOption(new Option('--role <role>', 'what they may do').choices([...USER_ROLES]).makeOptionMandatory())
  .action((opts: { merchant: string; email: string; role: UserRole }) =>
    withServices(async (services) => {
      const invitation = await asUserError(() =>
        services.users.invite({ merchantUuid: opts.merchant, email: opts.email, role: opts.role }, CLI),
      )
      const { user } = invitation
      out(`invited ${user.email} as ${user.role} of merchant ${user.merchant_uuid} (user ${user.uuid})`)
      out(`  set-password link, works once until ${invitation.expiresAt.toISOString()}:`)
      out(`  ${invitation.link}`)
    }),
  )
users
  .command('reset-password <user>')
  .description(
    'Give a dashboard user (uuid or email) a new generated password, printed once; their sessions end at once',
  )
  .action((user: string) =>
    withServices(async (services) => {
      const reset = await asUserError(() => services.users.resetPassword(user, CLI))
      out(`new password for ${reset.user.email} (user ${reset.user.uuid}), shown this once:`)
      out(`  ${reset.password}`)
      out(`  ${reset.sessionsRevoked} session(s) ended`)
    }),
  )
users
  .command('list')
  .description("List a merchant's dashboard users")
  .requiredOption('--merchant <uuid>', 'the merchant')
  .action((opts: { merchant: string }) =>
    withServices(async (services) => {
      const list = await asUserError(() => services.users.list(opts.merchant))
      for (const u of list)
        out(
          `${u.uuid}  ${u.email}  ${u.role}  ${u.status}${u.password_set ? '' : '  (invitation not accepted)'}`,
        )
    }),
  )
users
  .command('disable <uuid>')
  .description('Disable a dashboard user: they cannot sign in, and their sessions end at once')
  .action((uuid: string) =>
    withServices(async (services) => {
      const { user, sessionsRevoked } = await asUserError(() => services.users.disable(uuid, CLI))
      out(`disabled ${user.email} (user ${user.uuid}); ${sessionsRevoked} session(s) ended`)
    }),
  )

registerEmulatorCommand(program, out)

registerConnectorCommands(program, {
  withProviders: (work) => withServices((services) => asUserError(() => work(services.providers))),
  out,
  parseCount: (name, value, max) => integer(name, 1, max)(value),
  parseSeconds: (name, value) => {
    try {
      return parseDuration(name, value)
    } catch (error) {
      throw new UserError((error as Error).message)
    }
  },
})

registerPaymentCommands(program, {
  withTransactions: (work) => withServices((services) => asUserError(() => work(services.transactions))),
  out,
  parseCount: (name, value, max) => integer(name, 1, max)(value),
})

class UserError extends Error {}

/** A refusal of the service (no such merchant, an email in use, …) is the operator's error: its message, exit 2. */
async function asUserError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof AppError) {
      const fields = error.errors
        ? ` (${Object.entries(error.errors)
            .map(([f, m]) => `${f} ${m.join(', ')}`)
            .join('; ')})`
        : ''
      throw new UserError(`${error.message}${fields}`)
    }
    throw error
  }
}

program.parseAsync(process.argv).catch((error: unknown) => {
  if (
    error instanceof ConfigError ||
    error instanceof EmbeddedDatabaseBusyError ||
    error instanceof UserError
  ) {
    process.stderr.write(`merchant-gateway: ${error.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`merchant-gateway: ${(error as Error)?.stack ?? String(error)}\n`)
  process.exit(1)
})

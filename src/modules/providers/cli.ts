import { type Command, Option } from 'commander'
import { CONNECTOR_KIND_NAMES, CONNECTOR_KINDS } from '../../connectors/kinds.ts'
import { MODES, type Mode, PAYMENT_METHODS, PAYOUT_METHODS } from '../../db/enums.ts'
import { validationError } from '../../http/errors.ts'
import { namedValues, readSecretSource } from '../../lib/cli-values.ts'
import type { AccountView, ProviderService, RouteKey, RouteView } from './service.ts'

/** How the operator's commands reach the services: open the database, run, print, turn refusals into messages. */
export interface CommandContext {
  withProviders<T>(work: (providers: ProviderService) => Promise<T>): Promise<T>
  out(line: string): void
  parseSeconds(name: string, value: string): number
  parseCount(name: string, value: string, max: number): number
}

/** `name=env:VAR` or `name=file:PATH`, repeatable: the secrets read from there. */
const secretPairs = (value: string, previous: Record<string, string>) => {
  const [name, source] = Object.entries(namedValues('secret')(value, {}))[0] as [string, string]
  return { ...previous, [name]: readSecretSource(source) }
}

const settingOption = () =>
  new Option('--setting <name=value>', 'a setting of the kind (repeatable); `connectors kinds` lists them')
    .argParser(namedValues('setting'))
    .default({})
const secretOption = () =>
  new Option('--secret <name=env:VAR|name=file:PATH>', 'a secret of the kind, read from there (repeatable)')
    .argParser(secretPairs)
    .default({})
const callbackSecretOption = () =>
  new Option(
    '--callback-secret <env:VAR|file:PATH>',
    'the callback signing secret the provider issued (default: one is made and printed once)',
  ).argParser((value: string) => readSecretSource(value))

const accountLine = (a: AccountView) =>
  `${a.name}  ${a.kind}  ${a.mode}  ${a.status}  ${a.uuid}  ${JSON.stringify(a.settings)}`

function printAccount(out: (line: string) => void, a: AccountView): void {
  out(`connector account ${a.name} (${a.uuid})`)
  out(`  kind:     ${a.kind}`)
  out(`  mode:     ${a.mode}`)
  out(`  status:   ${a.status}`)
  for (const [setting, value] of Object.entries(a.settings))
    out(`  setting:  ${setting} = ${JSON.stringify(value)}`)
  for (const secret of a.secrets) out(`  secret:   ${secret} (set)`)
  if (a.callback_url) out(`  callbacks: ${a.callback_url}`)
  out(`  created:  ${a.created_at.toISOString()}`)
  out(`  updated:  ${a.updated_at.toISOString()}`)
}

function printNewCallbackSecret(out: (line: string) => void, secret: string): void {
  out('  callback signing secret, shown this once (give it to the provider; only its sealed copy is kept):')
  out(`  ${secret}`)
}

/** `merchant-gateway connectors …`: the operator's commands for connector accounts (docs/OPERATIONS.md). */
export function registerConnectorCommands(program: Command, context: CommandContext): void {
  const { withProviders, out } = context
  const connectors = program
    .command('connectors')
    .description('Manage connector accounts: the configured payment providers payments and payouts go to')

  connectors
    .command('kinds')
    .description('List the connector kinds with their settings and secrets')
    .action(() => {
      for (const kind of CONNECTOR_KIND_NAMES) {
        const spec = CONNECTOR_KINDS[kind]
        out(`${kind}: ${spec.description}`)
        const required: readonly string[] = spec.settings.required ?? []
        for (const [name, schema] of Object.entries(spec.settings.properties)) {
          const { description, default: fallback } = schema as { description?: string; default?: unknown }
          const note =
            fallback !== undefined ? `default ${fallback}` : required.includes(name) ? 'required' : 'optional'
          out(`  setting ${name} (${note}): ${description ?? ''}`)
        }
        for (const secret of spec.secrets) out(`  secret ${secret} (required)`)
        if (spec.signedCallbacks) out('  callbacks signed with a callback secret (rotated with an overlap)')
      }
    })

  connectors
    .command('add <name>')
    .description(
      'Add a connector account, e.g. add acquirer-live --kind http-acquirer --mode live --setting base_url=…',
    )
    .addOption(
      new Option('--kind <kind>', 'its connector kind').choices(CONNECTOR_KIND_NAMES).makeOptionMandatory(),
    )
    .addOption(new Option('--mode <mode>', 'which mode it serves').choices([...MODES]).makeOptionMandatory())
    .addOption(settingOption())
    .addOption(secretOption())
    .addOption(callbackSecretOption())
    .action(
      (
        name: string,
        opts: {
          kind: string
          mode: Mode
          setting: Record<string, string>
          secret: Record<string, string>
          callbackSecret?: string
        },
      ) =>
        withProviders(async (providers) => {
          const { account, callbackSecret } = await providers.accounts.add({
            name,
            kind: opts.kind,
            mode: opts.mode,
            settings: opts.setting,
            secrets: opts.secret,
            callbackSecret: opts.callbackSecret,
          })
          printAccount(out, account)
          if (callbackSecret && opts.callbackSecret === undefined) printNewCallbackSecret(out, callbackSecret)
        }),
    )

  connectors
    .command('list')
    .description('List the connector accounts (name, kind, mode, status, id, settings; never a secret)')
    .action(() =>
      withProviders(async (providers) => {
        for (const account of await providers.accounts.list()) out(accountLine(account))
      }),
    )

  connectors
    .command('show <name>')
    .description('Show an account: its settings, which secrets are set, its callback secrets’ dates')
    .action((name: string) =>
      withProviders(async (providers) => {
        const { account, callbackSecrets } = await providers.accounts.show(name)
        printAccount(out, account)
        for (const secret of callbackSecrets)
          out(
            `  callback secret: made ${secret.created_at.toISOString()}, ${
              secret.retires_at ? `accepted until ${secret.retires_at.toISOString()}` : 'current'
            }`,
          )
      }),
    )

  connectors
    .command('update <name>')
    .description('Change settings (merged with the current ones) or replace secrets')
    .addOption(settingOption())
    .option(
      '--unset <setting>',
      'remove an optional setting (repeatable)',
      (v: string, p: string[]) => [...p, v],
      [],
    )
    .addOption(secretOption())
    .action(
      (
        name: string,
        opts: { setting: Record<string, string>; unset: string[]; secret: Record<string, string> },
      ) =>
        withProviders(async (providers) => {
          printAccount(
            out,
            await providers.accounts.update(name, {
              settings: opts.setting,
              unset: opts.unset,
              secrets: opts.secret,
            }),
          )
        }),
    )

  for (const [command, status, description] of [
    [
      'disable',
      'disabled',
      'Disable an account: routing passes it over; what it already holds still settles',
    ],
    ['enable', 'enabled', 'Enable a disabled account'],
  ] as const)
    connectors
      .command(`${command} <name>`)
      .description(description)
      .action((name: string) =>
        withProviders(async (providers) => {
          const account = await providers.accounts.setStatus(name, status)
          out(`connector account ${account.name} is ${account.status}`)
        }),
      )

  connectors
    .command('rotate-callback-secret <name>')
    .description('Give an account a new callback secret; the old one is still accepted for the overlap')
    .option('--overlap <duration>', 'how long the old secret stays accepted (0 for not at all)', '24h')
    .addOption(callbackSecretOption())
    .action((name: string, opts: { overlap: string; callbackSecret?: string }) =>
      withProviders(async (providers) => {
        const overlapSeconds = context.parseSeconds('--overlap', opts.overlap)
        const rotated = await providers.accounts.rotateCallbackSecret(name, {
          overlapSeconds,
          secret: opts.callbackSecret,
        })
        out(
          `connector account ${name}: new callback secret; the previous one accepted until ${rotated.retiresAt.toISOString()}`,
        )
        if (opts.callbackSecret === undefined) printNewCallbackSecret(out, rotated.secret)
      }),
    )

  const results = ['applied', 'duplicate', 'stale', 'review', 'unmatched', 'refused', 'malformed'] as const
  connectors
    .command('callbacks')
    .description('List the callbacks the providers sent, newest first (docs/OPERATIONS.md, The callback log)')
    .option('--account <name>', 'of one connector account')
    .addOption(new Option('--result <result>', 'with one result').choices(results))
    .option('--reference <reference>', "about one provider's reference")
    .option('--about <uuid>', 'about one payment, refund or payout')
    .option('--limit <n>', 'at most this many', (v: string) => context.parseCount('--limit', v, 1000), 50)
    .action(
      (opts: {
        account?: string
        result?: (typeof results)[number]
        reference?: string
        about?: string
        limit: number
      }) =>
        withProviders(async (providers) => {
          for (const c of await providers.callbacks.list(opts))
            out(
              `${c.uuid}  ${c.received_at.toISOString()}  ${c.account}  ${c.result}  ${c.verification}  ` +
                `${c.event_type ?? '-'}  ${c.provider_reference ?? '-'}  ${c.detail}`,
            )
        }),
    )

  connectors
    .command('callback <id>')
    .description('Show one callback as received: its headers (credentials left out), body and what it did')
    .action((id: string) =>
      withProviders(async (providers) => {
        const c = await providers.callbacks.show(id)
        out(`callback ${c.uuid} to ${c.account}, received ${c.received_at.toISOString()}`)
        out(`  verification: ${c.verification}`)
        out(`  result:       ${c.result}: ${c.detail}`)
        for (const [name, value] of Object.entries(c.headers)) out(`  header ${name}: ${value}`)
        out('  body:')
        out(c.body)
      }),
    )

  registerRouteCommands(connectors, context)
}

interface RouteOptions {
  mode: Mode
  merchant?: string
  payment?: string
  payout?: string
  currency?: string
  network?: string
}

/** `connectors route set|clear` and `connectors routes`: which accounts take which payments and payouts. */
function registerRouteCommands(connectors: Command, { withProviders, out }: CommandContext): void {
  const keyOptions = (command: Command) =>
    command
      .addOption(new Option('--mode <mode>', 'which mode').choices([...MODES]).makeOptionMandatory())
      .option('--merchant <uuid>', "one merchant's route (default: the operator's, for every merchant)")
      .addOption(new Option('--payment <method>', 'payments of this method').choices([...PAYMENT_METHODS]))
      .addOption(new Option('--payout <method>', 'payouts of this method').choices([...PAYOUT_METHODS]))
      .option('--currency <code>', 'payments in this currency only')
      .option('--network <network>', 'USDT wallet payouts to this network only')
  const keyOf = (opts: RouteOptions): RouteKey => {
    if (!opts.payment === !opts.payout) throw validationError('route', 'name one of --payment or --payout')
    return {
      merchantUuid: opts.merchant ?? null,
      mode: opts.mode,
      subject: opts.payment ? 'payment' : 'payout',
      method: (opts.payment ?? opts.payout) as string,
      currency: opts.currency ?? null,
      network: opts.network ?? null,
    }
  }
  const route = connectors.command('route').description('Set or clear a route')
  keyOptions(
    route
      .command('set <accounts...>')
      .description('Send the payments (or payouts) of a method to these accounts, tried in this order'),
  ).action((accounts: string[], opts: RouteOptions) =>
    withProviders(async (providers) => out(routeLine(await providers.routes.set(keyOf(opts), accounts)))),
  )
  keyOptions(route.command('clear').description('Remove a route')).action((opts: RouteOptions) =>
    withProviders(async (providers) => {
      out((await providers.routes.clear(keyOf(opts))) ? 'route removed' : 'no such route')
    }),
  )
  connectors
    .command('routes')
    .description("List the routes (with --merchant: that merchant's and the operator's defaults)")
    .option('--merchant <uuid>', 'one merchant')
    .action((opts: { merchant?: string }) =>
      withProviders(async (providers) => {
        for (const view of await providers.routes.list({ merchantUuid: opts.merchant })) out(routeLine(view))
      }),
    )
}

const routeLine = (r: RouteView) =>
  `${r.mode}  ${r.subject} ${r.method}${r.currency ? ` ${r.currency}` : ''}${r.network ? ` ${r.network}` : ''}  ` +
  `${r.merchant_uuid ? `merchant ${r.merchant_uuid}` : 'every merchant'}  → ${r.accounts.join(', ')}`

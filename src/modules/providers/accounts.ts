import { LRUCache } from 'lru-cache'
import { Value } from 'typebox/value'
import type { Config } from '../../config.ts'
import { isCallbackSecret, newCallbackSecret } from '../../connectors/http-acquirer/signature.ts'
import {
  CONNECTOR_KINDS,
  type ConnectorKind,
  type ConnectorKindSpec,
  isConnectorKind,
} from '../../connectors/kinds.ts'
import { buildConnector } from '../../connectors/registry.ts'
import type {
  AccountConnector,
  PayoutOutcome,
  ProviderRefundStatus,
  ProviderReport,
  ReportResult,
} from '../../connectors/types.ts'
import type { Db, Executor } from '../../db/index.ts'
import type { Mode, TransactionRow } from '../../db/types.ts'
import { isUniqueViolation } from '../../db/unique.ts'
import { AppError, notFound, validationError } from '../../http/errors.ts'
import { decryptSecret, deriveKey, encryptSecret } from '../../lib/crypto.ts'
import { newId } from '../../lib/ids.ts'
import { createChainDepositStore } from './chain-deposits.ts'
import { createChainTransactionStore } from './chain-transactions.ts'
import * as repo from './repository.ts'

/**
 * Connector accounts (docs/OPERATIONS.md, Connector accounts): the operator's configured instances of a connector
 * kind. Settings are checked against the kind's schema and shown back; secrets are sealed with a key derived from
 * the master key and never leave this file but to the connector that calls the provider with them.
 */

export interface ProviderDeps {
  db: Db
  config: Config
  /** How a provider's report reaches the payment it is about (the transactions module's handler). */
  payments?: () => PaymentReports
  /** How a provider's report reaches the refund it is about (the refunds module's handler). */
  refunds?: () => ObjectReports<Exclude<ProviderRefundStatus, 'pending'>>
  /** How a provider's report reaches the payout it is about (the payouts module's handler). */
  payouts?: () => ObjectReports<Exclude<PayoutOutcome, 'processing'>>
}

/**
 * A provider's report on a refund or payout, applied in the caller's transaction by its module's own handler to
 * the one the account has under `reference`; null when the account has none under it.
 */
export interface ObjectReports<Outcome extends string> {
  apply(
    trx: Executor,
    report: {
      accountUuid: string
      /** The account's reference of the refund or payout. */
      reference: string
      outcome: Outcome
      connector: string
      message: string
    },
  ): Promise<{ uuid: string; result: 'applied' | 'duplicate' | 'stale' } | null>
  /**
   * Makes the status check of the open refund or payout the account has under `reference` due at `at` (a hint
   * from a callback that did not verify); whether there is one.
   */
  recheck(accountUuid: string, reference: string, at: Date): Promise<boolean>
}

/** A provider's report on a payment, applied in the caller's transaction by the payment's own handler. */
export interface PaymentReports {
  apply(
    trx: Executor,
    /** The payment's uuid, or its row the caller read locked in `trx` (handovers.lockPayment). */
    payment: string | TransactionRow,
    report: ProviderReport,
    /** Runs in `trx` once the result is known, before the payment changes (and its money moves). */
    before?: (result: ReportResult) => Promise<unknown>,
  ): Promise<{ result: ReportResult; row: { status: string } }>
}

/** How long a process checks callbacks to an account with what it read of it (accounts.receiving). */
const RECEIVING_TTL_MS = 1000

type AccountRow = NonNullable<Awaited<ReturnType<typeof repo.findAccountByUuid>>>

interface ReceivingAccount {
  account: AccountRow
  secrets: { secret: string; retiresAt: Date | null }[]
}

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/
const SECRET_MAX = 4096

/** What may be shown of an account: never a secret's value, only which secrets it holds. */
export interface AccountView {
  uuid: string
  name: string
  kind: ConnectorKind
  mode: Mode
  status: 'enabled' | 'disabled'
  settings: Record<string, unknown>
  secrets: string[]
  /** Where the provider posts its callbacks (kinds whose callbacks come over HTTP). */
  callback_url: string | null
  created_at: Date
  updated_at: Date
}

export interface CallbackSecretView {
  created_at: Date
  /** When it stops being accepted; null while it is the current one. */
  retires_at: Date | null
}

export interface AccountInput {
  name: string
  kind: string
  mode: Mode
  /** As the operator typed them (`name=value`): converted to the schema's types here. */
  settings: Record<string, string>
  secrets: Record<string, string>
  /** The provider's callback signing secret, when the provider issues it; otherwise one is made. */
  callbackSecret?: string
}

export interface AccountChange {
  settings?: Record<string, string>
  /** Optional settings to remove. */
  unset?: string[]
  secrets?: Record<string, string>
}

export function createAccountOperations(deps: ProviderDeps) {
  const chainTransactions = createChainTransactionStore(deps.db)
  const chainDeposits = createChainDepositStore(deps.db)
  const key = deriveKey(deps.config.masterKey, 'connector-secrets')
  const seal = (value: string) => encryptSecret(key, value)
  const open = (sealed: string) => decryptSecret(key, sealed)

  const view = (row: Awaited<ReturnType<typeof repo.findAccountByName>> & {}): AccountView => ({
    uuid: row.uuid,
    name: row.name,
    kind: row.kind as ConnectorKind,
    mode: row.mode,
    status: row.status,
    settings: row.settings,
    secrets: row.secrets_sealed ? Object.keys(JSON.parse(open(row.secrets_sealed))).sort() : [],
    callback_url: CONNECTOR_KINDS[row.kind as ConnectorKind].signedCallbacks
      ? `${deps.config.publicBaseUrl}/providers/${row.uuid}/callbacks`
      : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  })

  // One connector per account, kept while the account is unchanged: its connections stay open between calls.
  const built = new Map<string, { version: number; connector: AccountConnector }>()
  // What a callback to an account is checked with (its row and its callback secrets, opened), kept a second: a
  // change made here is seen at once, one made by another process within the second.
  const receiving = new LRUCache<string, ReceivingAccount>({ max: 1000, ttl: RECEIVING_TTL_MS })
  const changed = <T>(done: Promise<T>): Promise<T> => done.finally(() => receiving.clear())

  async function found(db: Executor, name: string, lock = false) {
    const row = await (lock ? repo.lockAccountByName(db, name) : repo.findAccountByName(db, name))
    if (!row) throw notFound('connector account')
    return row
  }

  async function addCallbackSecret(trx: Executor, accountUuid: string, given: string | undefined, at: Date) {
    const secret = given ?? newCallbackSecret()
    if (!isCallbackSecret(secret))
      throw validationError('callback_secret', 'whsec_ followed by the base64 of at least 16 bytes')
    await repo.insertCallbackSecret(trx, {
      uuid: newId(),
      account_uuid: accountUuid,
      secret_sealed: seal(secret),
      created_at: at,
    })
    return secret
  }

  return {
    /** Adds an account; for a kind whose callbacks are signed, answers its first callback secret (shown once). */
    async add(input: AccountInput): Promise<{ account: AccountView; callbackSecret: string | null }> {
      if (!NAME.test(input.name))
        throw validationError(
          'name',
          'lower-case letters, digits and hyphens, at most 63, not starting with a hyphen',
        )
      if (!isConnectorKind(input.kind))
        throw validationError('kind', `one of ${Object.keys(CONNECTOR_KINDS).join(', ')}`)
      const spec = CONNECTOR_KINDS[input.kind]
      if (input.kind === 'simulator' && input.mode !== 'test')
        throw validationError('mode', 'the simulator serves test mode only')
      const settings = checkedSettings(input.kind, input.settings)
      checkSecretNames(input.kind, input.secrets)
      const missing = spec.secrets.filter((name) => input.secrets[name] === undefined)
      if (missing.length) throw validationError('secrets', `${missing.join(', ')} required`)
      if (!spec.signedCallbacks && input.callbackSecret !== undefined)
        throw validationError('callback_secret', `${input.kind} does not sign its callbacks`)
      const at = new Date()
      try {
        return await deps.db.transaction().execute(async (trx) => {
          const row = await repo.insertAccount(trx, {
            uuid: newId(),
            name: input.name,
            kind: input.kind,
            mode: input.mode,
            settings: JSON.stringify(settings),
            secrets_sealed: spec.secrets.length ? seal(JSON.stringify(input.secrets)) : null,
            status: 'enabled',
            created_at: at,
            updated_at: at,
          })
          const callbackSecret = spec.signedCallbacks
            ? await addCallbackSecret(trx, row.uuid, input.callbackSecret, at)
            : null
          return { account: view(row), callbackSecret }
        })
      } catch (error) {
        if (isUniqueViolation(error, 'connector_accounts_name_key'))
          throw new AppError('conflict', `A connector account named ${input.name} exists.`)
        throw error
      }
    },

    list: async (): Promise<AccountView[]> => (await repo.listAccounts(deps.db)).map(view),

    /** The account with when each of its callback secrets was made and stops being accepted (never their values). */
    async show(name: string): Promise<{ account: AccountView; callbackSecrets: CallbackSecretView[] }> {
      const row = await found(deps.db, name)
      const secrets = await repo.acceptedCallbackSecrets(deps.db, row.uuid, new Date())
      return {
        account: view(row),
        callbackSecrets: secrets.map((s) => ({ created_at: s.created_at, retires_at: s.retires_at })),
      }
    },

    /** Changes settings (merged into the current ones, checked whole) and replaces the named secrets. */
    update: (name: string, change: AccountChange): Promise<AccountView> =>
      changed(
        deps.db.transaction().execute(async (trx) => {
          const row = await found(trx, name, true)
          const kind = row.kind as ConnectorKind
          const current = Object.fromEntries(
            Object.entries(row.settings)
              .filter(([setting]) => !change.unset?.includes(setting))
              .map(([setting, value]) => [setting, String(value)]),
          )
          for (const setting of change.unset ?? [])
            if (!Object.hasOwn(CONNECTOR_KINDS[kind].settings.properties, setting))
              throw validationError(`settings.${setting}`, `${kind} has no such setting`)
          const settings = checkedSettings(kind, { ...current, ...change.settings })
          checkSecretNames(kind, change.secrets ?? {})
          const secrets =
            row.secrets_sealed && change.secrets && Object.keys(change.secrets).length
              ? seal(JSON.stringify({ ...JSON.parse(open(row.secrets_sealed)), ...change.secrets }))
              : row.secrets_sealed
          return view(
            await repo.updateAccount(trx, row.uuid, {
              settings: JSON.stringify(settings),
              secrets_sealed: secrets,
              updated_at: new Date(),
            }),
          )
        }),
      ),

    /** A disabled account takes no new payment or payout; what it already holds still settles through it. */
    setStatus: (name: string, status: 'enabled' | 'disabled'): Promise<AccountView> =>
      changed(
        deps.db.transaction().execute(async (trx) => {
          const row = await found(trx, name, true)
          return view(await repo.updateAccount(trx, row.uuid, { status, updated_at: new Date() }))
        }),
      ),

    /**
     * A new current callback secret; the ones accepted until now stay accepted for `overlapSeconds` (0: retired at
     * once), so callbacks the provider signed before it switched still verify. Answers the new secret (shown once).
     */
    rotateCallbackSecret: (
      name: string,
      options: { overlapSeconds: number; secret?: string },
    ): Promise<{ secret: string; retiresAt: Date }> =>
      changed(
        deps.db.transaction().execute(async (trx) => {
          const row = await found(trx, name, true)
          if (!CONNECTOR_KINDS[row.kind as ConnectorKind].signedCallbacks)
            throw new AppError('invalid_state', `${row.kind} does not sign its callbacks.`)
          const at = new Date()
          const retiresAt = new Date(at.getTime() + options.overlapSeconds * 1000)
          await repo.retireCurrentCallbackSecrets(trx, row.uuid, retiresAt)
          const secret = await addCallbackSecret(trx, row.uuid, options.secret, at)
          return { secret, retiresAt }
        }),
      ),

    /** The secrets a callback to the account may be signed with at `at`, the current one first. */
    async callbackSecrets(accountUuid: string, at = new Date()): Promise<string[]> {
      const rows = await repo.acceptedCallbackSecrets(deps.db, accountUuid, at)
      return rows.map((row) => open(row.secret_sealed))
    },

    /**
     * The account a callback names, with the secrets it may be signed with at `at` (the current one first), from
     * this process's cache of a second; undefined for no such account.
     */
    async receiving(
      accountUuid: string,
      at = new Date(),
    ): Promise<{ account: AccountRow; secrets: string[] } | undefined> {
      let entry = receiving.get(accountUuid)
      if (!entry) {
        const account = await repo.findAccountByUuid(deps.db, accountUuid)
        if (!account) return undefined
        const rows = await repo.acceptedCallbackSecrets(deps.db, accountUuid, at)
        entry = {
          account,
          secrets: rows.map((row) => ({ secret: open(row.secret_sealed), retiresAt: row.retires_at })),
        }
        receiving.set(accountUuid, entry)
      }
      return {
        account: entry.account,
        secrets: entry.secrets
          .filter((s) => s.retiresAt === null || s.retiresAt.getTime() > at.getTime())
          .map((s) => s.secret),
      }
    },

    /** The account and its connector, built from its settings and opened secrets (kept until it changes). */
    async connector(accountUuid: string) {
      const row = await repo.findAccountByUuid(deps.db, accountUuid)
      if (!row) throw notFound('connector account')
      const version = row.updated_at.getTime()
      let entry = built.get(row.uuid)
      if (!entry || entry.version !== version) {
        void entry?.connector.close()
        const secrets = row.secrets_sealed ? JSON.parse(open(row.secrets_sealed)) : {}
        entry = {
          version,
          connector: buildConnector(row.kind as ConnectorKind, row.settings, secrets, {
            accountUuid: row.uuid,
            chainTransactions,
            chainDeposits,
          }),
        }
        built.set(row.uuid, entry)
      }
      return {
        account: { uuid: row.uuid, name: row.name, kind: row.kind, status: row.status },
        connector: entry.connector,
      }
    },

    /** Closes the connections of every connector built so far. */
    async closeConnectors(): Promise<void> {
      const entries = [...built.values()]
      built.clear()
      await Promise.all(entries.map((entry) => entry.connector.close()))
    },

    /** The account's secrets, opened, for its connector's calls to the provider. */
    async secrets(name: string): Promise<Record<string, string>> {
      const row = await found(deps.db, name)
      return row.secrets_sealed ? JSON.parse(open(row.secrets_sealed)) : {}
    },
  }
}

/** The kind's settings from the operator's strings: converted, defaults filled, and checked whole. */
function checkedSettings(kind: ConnectorKind, given: Record<string, string>): Record<string, unknown> {
  const schema = CONNECTOR_KINDS[kind].settings
  for (const setting of Object.keys(given))
    if (!Object.hasOwn(schema.properties, setting))
      throw validationError(`settings.${setting}`, `${kind} has no such setting`)
  const settings = Value.Default(schema, Value.Convert(schema, { ...given })) as Record<string, unknown>
  const first = [...Value.Errors(schema, settings)][0]
  if (first) {
    const missing = first.keyword === 'required' ? (first.params as { requiredProperties?: string[] }) : null
    const setting = missing?.requiredProperties?.[0] ?? first.instancePath.replace(/^\//, '')
    throw validationError(`settings.${setting}`, missing ? 'required' : first.message)
  }
  return settings
}

function checkSecretNames(kind: ConnectorKind, secrets: Record<string, string>): void {
  const spec: ConnectorKindSpec = CONNECTOR_KINDS[kind]
  const known = [...spec.secrets, ...(spec.optionalSecrets ?? [])]
  for (const [name, value] of Object.entries(secrets)) {
    if (!known.includes(name))
      throw validationError(
        `secrets.${name}`,
        known.length ? `${kind} keeps only ${known.join(', ')}` : `${kind} keeps no secret`,
      )
    checkSecret(`secrets.${name}`, value)
    const refusal = spec.refuseSecret?.(name, value)
    if (refusal) throw validationError(`secrets.${name}`, refusal)
  }
}

function checkSecret(field: string, value: string): void {
  if (value.length === 0 || value.length > SECRET_MAX || /[\r\n]/.test(value))
    throw validationError(field, `one line of 1 to ${SECRET_MAX} characters`)
}

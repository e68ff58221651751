import type { Selectable } from 'kysely'
import { PAYMENT_METHODS, PAYOUT_METHODS } from '../../db/enums.ts'
import type { ConnectorRoutesTable, Mode } from '../../db/types.ts'
import { validationError } from '../../http/errors.ts'
import { isUuid, newId } from '../../lib/ids.ts'
import { isKnownCurrency } from '../../lib/money.ts'
import { WALLET_NETWORKS } from '../payouts/schemas.ts'
import type { ProviderDeps } from './accounts.ts'

/**
 * Routes (docs/OPERATIONS.md, Routes): which connector accounts take a merchant's payments of a method (and
 * optionally a currency), or its payouts of a method (and, for USDT wallets, a network), in which order. The first
 * that accepts gets the payment; one that refuses with a retryable reason or does not answer passes it on.
 */

export interface RouteKey {
  /** Null: the operator's default for every merchant without a route of its own for the key. */
  merchantUuid: string | null
  mode: Mode
  subject: 'payment' | 'payout'
  method: string
  currency?: string | null
  network?: string | null
}

/** A route: its key's columns, and the accounts' names in the order they are tried. */
export type RouteView = Pick<
  Selectable<ConnectorRoutesTable>,
  'merchant_uuid' | 'mode' | 'subject' | 'method' | 'currency' | 'network'
> & { accounts: string[] }

/** The account a route hands to, as the hand-over needs it. */
export interface RoutedAccount {
  uuid: string
  name: string
  kind: string
}

export function createRouting(deps: ProviderDeps) {
  const { db } = deps

  /** The rows of exactly this key (null columns matched as null). */
  const ofKey = (key: Required<RouteKey>) =>
    db
      .selectFrom('connector_routes')
      .where((eb) =>
        eb.and([
          key.merchantUuid === null
            ? eb('connector_routes.merchant_uuid', 'is', null)
            : eb('connector_routes.merchant_uuid', '=', key.merchantUuid),
          eb('connector_routes.mode', '=', key.mode),
          eb('connector_routes.subject', '=', key.subject),
          eb('connector_routes.method', '=', key.method),
          key.currency === null
            ? eb('connector_routes.currency', 'is', null)
            : eb('connector_routes.currency', '=', key.currency),
          key.network === null
            ? eb('connector_routes.network', 'is', null)
            : eb('connector_routes.network', '=', key.network),
        ]),
      )

  return {
    /** Replaces the route of `key` with `accounts`, tried in that order. */
    async set(input: RouteKey, accounts: string[]): Promise<RouteView> {
      const key = checkedKey(input)
      if (accounts.length === 0) throw validationError('accounts', 'name at least one account')
      if (new Set(accounts).size !== accounts.length)
        throw validationError('accounts', 'an account is named twice')
      return db.transaction().execute(async (trx) => {
        if (key.merchantUuid !== null) {
          const merchant = await trx
            .selectFrom('merchants')
            .select('uuid')
            .where('uuid', '=', key.merchantUuid)
            .executeTakeFirst()
          if (!merchant) throw validationError('merchant', 'no such merchant')
        }
        const rows = await trx
          .selectFrom('connector_accounts')
          .select(['uuid', 'name', 'mode'])
          .where('name', 'in', accounts)
          .execute()
        for (const name of accounts) {
          const account = rows.find((row) => row.name === name)
          if (!account) throw validationError('accounts', `no connector account named ${name}`)
          if (account.mode !== key.mode)
            throw validationError('accounts', `${name} serves ${account.mode} mode, not ${key.mode}`)
        }
        await trx.deleteFrom('connector_routes').where('uuid', 'in', ofKey(key).select('uuid')).execute()
        const at = new Date()
        await trx
          .insertInto('connector_routes')
          .values(
            accounts.map((name, position) => ({
              ...viewKey(key),
              uuid: newId(),
              position,
              account_uuid: rows.find((row) => row.name === name)?.uuid as string,
              created_at: at,
            })),
          )
          .execute()
        return { ...viewKey(key), accounts }
      })
    },

    /** Removes the route of `key`; answers whether there was one. */
    async clear(input: RouteKey): Promise<boolean> {
      const key = checkedKey(input)
      const removed = await db
        .deleteFrom('connector_routes')
        .where('uuid', 'in', ofKey(key).select('uuid'))
        .executeTakeFirst()
      return Number(removed.numDeletedRows) > 0
    },

    /** How many route keys have no enabled account: what they route is refused (live) or left to the simulator. */
    async withoutAccount(): Promise<number> {
      const row = await db
        .selectFrom('connector_routes as r')
        .innerJoin('connector_accounts as a', 'a.uuid', 'r.account_uuid')
        .select(['r.merchant_uuid', 'r.mode', 'r.subject', 'r.method', 'r.currency', 'r.network'])
        .groupBy(['r.merchant_uuid', 'r.mode', 'r.subject', 'r.method', 'r.currency', 'r.network'])
        .having((eb) => eb.fn.count('a.uuid').filterWhere('a.status', '=', 'enabled'), '=', 0)
        .execute()
      return row.length
    },

    /** Every route (or a merchant's and the defaults), each with its accounts in order. */
    async list(filter: { merchantUuid?: string } = {}): Promise<RouteView[]> {
      let query = db
        .selectFrom('connector_routes as r')
        .innerJoin('connector_accounts as a', 'a.uuid', 'r.account_uuid')
        .select(['r.merchant_uuid', 'r.mode', 'r.subject', 'r.method', 'r.currency', 'r.network', 'a.name'])
        .orderBy('r.mode')
        .orderBy('r.subject')
        .orderBy('r.method')
        .orderBy('r.merchant_uuid')
        .orderBy('r.currency')
        .orderBy('r.network')
        .orderBy('r.position')
      if (filter.merchantUuid)
        query = query.where((eb) =>
          eb.or([
            eb('r.merchant_uuid', 'is', null),
            eb('r.merchant_uuid', '=', filter.merchantUuid as string),
          ]),
        )
      const views: RouteView[] = []
      const keyOf = (r: Omit<RouteView, 'accounts'>) =>
        [r.merchant_uuid, r.mode, r.subject, r.method, r.currency, r.network].join('|')
      for (const { name, ...key } of await query.execute()) {
        const last = views.at(-1)
        if (last && keyOf(last) === keyOf(key)) last.accounts.push(name)
        else views.push({ ...key, accounts: [name] })
      }
      return views
    },

    /**
     * The enabled accounts a payment or payout goes to, in order: the merchant's own route for the key (its
     * currency's or network's before the one for any), else the operator's default likewise; empty when none.
     * A route whose accounts are all disabled is empty too: it does not fall through to a default.
     */
    async resolve(input: RouteKey & { merchantUuid: string }): Promise<RoutedAccount[]> {
      const narrow = input.subject === 'payment' ? (input.currency ?? null) : (input.network ?? null)
      const column = input.subject === 'payment' ? 'r.currency' : 'r.network'
      // Every row of the four keys in one statement; the most specific key that has rows wins.
      const rows = await db
        .selectFrom('connector_routes as r')
        .innerJoin('connector_accounts as a', 'a.uuid', 'r.account_uuid')
        .select(['r.merchant_uuid', 'r.currency', 'r.network', 'a.uuid', 'a.name', 'a.kind', 'a.status'])
        .where('r.mode', '=', input.mode)
        .where('r.subject', '=', input.subject)
        .where('r.method', '=', input.method)
        .where((eb) =>
          eb.or([eb('r.merchant_uuid', '=', input.merchantUuid), eb('r.merchant_uuid', 'is', null)]),
        )
        .where((eb) =>
          narrow === null ? eb(column, 'is', null) : eb.or([eb(column, '=', narrow), eb(column, 'is', null)]),
        )
        .where(input.subject === 'payment' ? 'r.network' : 'r.currency', 'is', null)
        .orderBy('r.position')
        .execute()
      const candidates: [string | null, string | null][] = [
        [input.merchantUuid, narrow],
        [input.merchantUuid, null],
        [null, narrow],
        [null, null],
      ]
      for (const [merchantUuid, qualifier] of candidates) {
        const of = rows.filter(
          (row) =>
            row.merchant_uuid === merchantUuid &&
            (input.subject === 'payment' ? row.currency : row.network) === qualifier,
        )
        if (of.length)
          return of
            .filter((row) => row.status === 'enabled')
            .map(({ uuid, name, kind }) => ({ uuid, name, kind }))
      }
      return []
    },
  }
}

function checkedKey(key: RouteKey): Required<RouteKey> {
  const methods: readonly string[] = key.subject === 'payment' ? PAYMENT_METHODS : PAYOUT_METHODS
  if (!methods.includes(key.method)) throw validationError('method', `one of ${methods.join(', ')}`)
  const currency = key.currency ?? null
  const network = key.network ?? null
  if (currency !== null && (key.subject !== 'payment' || !isKnownCurrency(currency)))
    throw validationError('currency', key.subject === 'payment' ? 'not a known currency' : 'payments only')
  if (
    network !== null &&
    (key.method !== 'usdt_wallet' || !(WALLET_NETWORKS as readonly string[]).includes(network))
  )
    throw validationError(
      'network',
      key.method === 'usdt_wallet' ? `one of ${WALLET_NETWORKS.join(', ')}` : 'USDT wallet payouts only',
    )
  if (key.merchantUuid !== null && !isUuid(key.merchantUuid)) throw validationError('merchant', 'not a uuid')
  return {
    merchantUuid: key.merchantUuid,
    mode: key.mode,
    subject: key.subject,
    method: key.method,
    currency,
    network,
  }
}

const viewKey = (key: Required<RouteKey>) => ({
  merchant_uuid: key.merchantUuid,
  mode: key.mode,
  subject: key.subject,
  method: key.method,
  currency: key.currency,
  network: key.network,
})

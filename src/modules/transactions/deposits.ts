import type { FastifyBaseLogger } from 'fastify'
import type { ChainPoint } from '../../connectors/evm-erc20/store.ts'
import type { DepositChain } from '../../connectors/types.ts'
import type { TransactionRow } from '../../db/types.ts'
import type { LedCursor } from '../providers/chain-deposits.ts'
import type { TransactionDeps } from './deps.ts'
import * as repo from './repository.ts'
import { applyProviderReport } from './status.ts'

type Deps = Pick<TransactionDeps, 'db' | 'config' | 'merchants' | 'ledger' | 'webhooks' | 'providers'>

/** How the chain watchers read (docs/OPERATIONS.md, Chain watchers). */
export interface WatchOptions {
  /** The most blocks one read of the token's transfers covers: a watcher far behind catches up in such steps. */
  range: number
  /** How long a watcher leads an account's chain without renewing its lease before another may take over. */
  leaseMs: number
  /** How many of the cursor's past blocks one trace of a reorganisation compares at the most. */
  traceDepth: number
}

/** The worker that watches: its name as a lease holder, and where it tells the operator of a reorganisation. */
export interface Watcher {
  leader: string
  log: Pick<FastifyBaseLogger, 'warn'>
}

export const WATCH_DEFAULTS: WatchOptions = { range: 500, leaseMs: 30_000, traceDepth: 256 }

/**
 * One round of the chain watchers (docs/CONNECTORS.md, Deposits): for each account that has given deposit
 * addresses and whose lease this worker (`leader`) holds or takes, the chain is followed from the account's cursor
 * to the head, and the transfers that have their confirmations are counted. Answers how many blocks it read.
 */
export async function watchChainDeposits(
  deps: Deps,
  watcher: Watcher,
  options: WatchOptions = WATCH_DEFAULTS,
): Promise<number> {
  const { leader } = watcher
  const store = deps.providers.chainDeposits
  let read = 0
  for (const { account_uuid } of await store.watched()) {
    const cursor = await store.lead(account_uuid, leader, options.leaseMs)
    if (!cursor) continue
    const { account, connector } = await deps.providers.accounts.connector(account_uuid)
    const chain = connector.deposits
    if (!chain || account.status !== 'enabled') continue
    const followed = await followChain(deps, chain, cursor, watcher, options)
    read += followed.read
    await countConfirmed(deps, chain, account, followed.at, followed.head)
  }
  return read
}

/**
 * Reads the chain from the cursor to the head, `options.range` blocks at a time: a range whose first block's parent
 * is not the cursor's block means the chain was reorganised, which is traced back before anything more is read; a
 * range whose last block changed while it was read is read again. The transfers of each range are recorded with the
 * cursor's move, in one database transaction.
 */
async function followChain(
  deps: Deps,
  chain: DepositChain,
  led: LedCursor,
  watcher: Watcher,
  options: WatchOptions,
): Promise<{ read: number; at: ChainPoint; head: bigint }> {
  const { leader } = watcher
  const store = deps.providers.chainDeposits
  const head = await chain.head()
  let at: ChainPoint = { number: led.number, hash: led.hash }
  let read = 0
  while (at.number < head) {
    const cursor = { ...led, ...at }
    const first = await chain.block(at.number + 1n)
    if (first.parentHash !== at.hash) {
      at = await traceBack(deps, chain, cursor, watcher, options)
      continue
    }
    const last = at.number + BigInt(options.range) < head ? at.number + BigInt(options.range) : head
    const end = last === first.number ? first : await chain.block(last)
    const transfers = await chain.transfers(first.number, last)
    const again = await chain.block(last)
    if (again.hash !== end.hash || transfers.some((t) => t.blockNumber === last && t.blockHash !== end.hash))
      continue
    await store.advance(cursor, leader, end, transfers)
    read += Number(last - at.number)
    at = end
  }
  return { read, at, head }
}

/**
 * The cursor's block is no longer the chain's: the highest block the cursor stood on that the chain still has is
 * where both chains part, and the cursor goes back there, taking back the transfers above it not yet counted.
 */
async function traceBack(
  deps: Deps,
  chain: DepositChain,
  cursor: LedCursor,
  { leader, log }: Watcher,
  options: WatchOptions,
): Promise<ChainPoint> {
  const store = deps.providers.chainDeposits
  for (const stood of await store.blocksBelow(cursor.accountUuid, cursor.number, options.traceDepth)) {
    const now = await chain.block(stood.number)
    if (now.hash !== stood.hash) continue
    const taken = await store.rewind(cursor, leader, stood)
    log.warn(
      { account: cursor.accountUuid, from: cursor.number.toString(), to: stood.number.toString(), taken },
      'chain reorganised: the watcher goes back to the last block both chains share',
    )
    return stood
  }
  throw new Error(
    `the chain was reorganised deeper than the ${options.traceDepth} blocks the watcher of account ${cursor.accountUuid} compares`,
  )
}

/**
 * The transfers that have the account's confirmations (their block at least `confirmations` deep, counting it, and
 * read by the cursor) count for their payments, each payment in its own database transaction under its lock:
 * what it received grows, and once that reaches what the customer was asked (the gross amount), the payment is
 * paid through the same handler as any provider's report (late, after its expiry, if it came then).
 */
async function countConfirmed(
  deps: Deps,
  chain: DepositChain,
  account: { uuid: string; name: string },
  at: ChainPoint,
  head: bigint,
): Promise<number> {
  const store = deps.providers.chainDeposits
  const deep = head - BigInt(chain.confirmations) + 1n
  const upTo = deep < at.number ? deep : at.number
  const payments = await store.uncounted(account.uuid, upTo)
  for (const paymentUuid of payments)
    await deps.db.transaction().execute(async (trx) => {
      const row = (await repo.lockByUuid(trx, paymentUuid)) as TransactionRow
      const counted = await store.count(trx, paymentUuid, upTo, new Date())
      if (counted.units === 0n) return
      const received = (row.amount_received ?? 0) + Number(toMinor(counted.units, chain.decimals))
      const updated = await repo.updateTransaction(trx, paymentUuid, { amount_received: received })
      if (received < row.gross_amount) return
      await applyProviderReport(deps, trx, updated, {
        outcome: 'paid',
        amount: row.amount,
        currency: row.currency,
        connector: account.name,
        reference: counted.last,
        accountUuid: account.uuid,
      })
    })
  return payments.length
}

/** Token units in USDT's minor units (micro), rounded down: dust below a micro unit does not count. */
function toMinor(units: bigint, decimals: number): bigint {
  return decimals >= 6 ? units / 10n ** BigInt(decimals - 6) : units * 10n ** BigInt(6 - decimals)
}

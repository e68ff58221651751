import type { FastifyBaseLogger } from 'fastify'
import type { ChainPoint } from '../../connectors/evm-erc20/store.ts'
import type { DepositChain } from '../../connectors/types.ts'
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
  log: Pick<FastifyBaseLogger, 'warn' | 'error'>
}

export const WATCH_DEFAULTS: WatchOptions = { range: 500, leaseMs: 30_000, traceDepth: 256 }

/**
 * One round of the chain watchers (docs/CONNECTORS.md, Deposits): for each account that has given deposit
 * addresses and whose lease this worker (`leader`) holds or takes, the chain is followed from the account's cursor
 * to the head. `countChainDeposits` counts what it read. Answers how many blocks it read.
 */
export async function watchChainDeposits(
  deps: Deps,
  watcher: Watcher,
  options: WatchOptions = WATCH_DEFAULTS,
): Promise<number> {
  const { leader } = watcher
  const store = deps.providers.chainDeposits
  let read = 0
  // One account's node down or chain in trouble holds back no other account.
  for (const { account_uuid } of await store.watched())
    try {
      const cursor = await store.lead(account_uuid, leader, options.leaseMs)
      if (!cursor) continue
      const { account, connector } = await deps.providers.accounts.connector(account_uuid)
      const chain = connector.deposits
      if (!chain || account.status !== 'enabled') continue
      read += (await followChain(deps, chain, cursor, watcher, options)).read
    } catch (err) {
      watcher.log.error({ err, account: account_uuid }, 'chain-watch: the account could not be followed')
    }
  return read
}

/** How many payments one database transaction counts for at the most. */
const COUNT_BATCH = 100

/**
 * Counts what the chain watchers read and what has its confirmations (docs/CONNECTORS.md, Deposits), for every
 * account that takes deposits: a job of its own, so that counting never holds the reading back. Any number of
 * workers may run it at once: each payment is counted under its lock, and what is counted is marked so. Answers
 * how many payments it counted for.
 */
export async function countChainDeposits(deps: Deps, log: Watcher['log']): Promise<number> {
  const store = deps.providers.chainDeposits
  let counted = 0
  for (const { account_uuid, block_number } of await store.watched())
    try {
      const { account, connector } = await deps.providers.accounts.connector(account_uuid)
      const chain = connector.deposits
      if (!chain) continue
      counted += await countConfirmed(deps, chain, account, BigInt(block_number))
    } catch (err) {
      log.error({ err, account: account_uuid }, "chain-count: the account's deposits could not be counted")
    }
  return counted
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
): Promise<{ read: number; at: ChainPoint }> {
  const { leader } = watcher
  const store = deps.providers.chainDeposits
  const head = await chain.head()
  let at: ChainPoint = { number: led.number, hash: led.hash }
  let read = 0
  // A node that refuses a range (too many logs) is asked for half as many blocks, down to one.
  let span = BigInt(options.range)
  while (at.number < head) {
    const cursor = { ...led, ...at }
    const first = await chain.block(at.number + 1n)
    if (first.parentHash !== at.hash) {
      at = await traceBack(deps, chain, cursor, watcher, options)
      continue
    }
    const last = at.number + span < head ? at.number + span : head
    const end = last === first.number ? first : await chain.block(last)
    let transfers: Awaited<ReturnType<DepositChain['transfers']>>
    try {
      transfers = await chain.transfers(first.number, last)
    } catch (error) {
      if (span === 1n) throw error
      span /= 2n
      continue
    }
    // The chain the range was read from is the cursor's, from its block to the range's last, before and after
    // the read: a reorganisation during it (or a node behind a balancer answering from another) reads it again.
    const [again, still] = await Promise.all([chain.block(last), chain.block(at.number)])
    if (
      again.hash !== end.hash ||
      still.hash !== at.hash ||
      transfers.some((t) => t.blockNumber === last && t.blockHash !== end.hash)
    )
      continue
    await store.advance(cursor, leader, end, transfers, options.leaseMs)
    read += Number(last - at.number)
    at = end
  }
  return { read, at }
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
    const { taken, counted } = await store.rewind(cursor, leader, stood, options.leaseMs)
    const fields = {
      account: cursor.accountUuid,
      from: cursor.number.toString(),
      to: stood.number.toString(),
      taken,
      counted,
    }
    log.warn(fields, 'chain reorganised: the watcher goes back to the last block both chains share')
    // Deeper than the confirmations: transfers already counted were in blocks the chain no longer has.
    if (counted > 0)
      log.error(fields, 'chain reorganised below counted deposits: their payments need the operator')
    return stood
  }
  throw new Error(
    `the chain was reorganised deeper than the ${options.traceDepth} blocks the watcher of account ${cursor.accountUuid} compares`,
  )
}

/**
 * The transfers that have the account's confirmations (their block at least `confirmations` deep below the cursor,
 * counting it: only blocks the watcher has read and linked by their parent hashes count as depth) count for their
 * payments, up to COUNT_BATCH payments a database transaction, each under its lock (taken in uuid order): what it
 * received grows, and once that reaches what the customer was asked (the gross amount) the payment is paid through
 * the same handler as any provider's report (late, after its expiry, if it came then).
 */
async function countConfirmed(
  deps: Deps,
  chain: DepositChain,
  account: { uuid: string; name: string },
  cursor: bigint,
): Promise<number> {
  const store = deps.providers.chainDeposits
  const payments = (await store.uncounted(account.uuid, cursor - BigInt(chain.confirmations) + 1n)).sort()
  for (let i = 0; i < payments.length; i += COUNT_BATCH)
    await deps.db.transaction().execute(async (trx) => {
      const at = new Date()
      // The cursor as it stands now (a reorganisation may have moved it back since the list was read), held
      // until the commit; and the batch's payments locked first, in uuid order, before any balance is: a refund
      // or settlement that holds one of them and waits on the merchant's balances is never waited on in turn.
      const upTo = (await store.cursorShared(trx, account.uuid)) - BigInt(chain.confirmations) + 1n
      const rows = await repo.lockManyByUuid(trx, payments.slice(i, i + COUNT_BATCH))
      for (const row of rows) {
        const counted = await store.count(trx, row.uuid, upTo, at)
        if (counted.units === 0n) continue
        const received = (row.amount_received ?? 0) + Number(toMinor(counted.units, chain.decimals))
        const updated = await repo.updateTransaction(trx, row.uuid, { amount_received: received })
        if (received < row.gross_amount) continue
        await applyProviderReport(deps, trx, updated, {
          outcome: 'paid',
          amount: row.amount,
          currency: row.currency,
          connector: account.name,
          reference: counted.last,
          accountUuid: account.uuid,
        })
      }
    })
  return payments.length
}

/** Token units in USDT's minor units (micro), rounded down: dust below a micro unit does not count. */
function toMinor(units: bigint, decimals: number): bigint {
  return decimals >= 6 ? units / 10n ** BigInt(decimals - 6) : units * 10n ** BigInt(6 - decimals)
}

import { sql } from 'kysely'
import type { ChainDepositStore, ChainPoint, Deposit } from '../../connectors/evm-erc20/store.ts'
import type { ReadTransfer } from '../../connectors/types.ts'
import type { Db, Executor } from '../../db/index.ts'
import { isUniqueViolation } from '../../db/unique.ts'

/** How many indexes in a row a payment may pass over for addresses another account gave. */
const MAX_INDEX_TRIES = 100

/** How many of the cursor's past blocks are kept to trace a reorganisation back (far deeper than any seen). */
const KEPT_BLOCKS = 10_000

const given = (row: { address: string; derivation_index: number; amount: string }): Deposit => ({
  address: row.address,
  index: Number(row.derivation_index),
  amount: BigInt(row.amount),
})

/** The watcher's cursor of an account it leads. */
export interface LedCursor extends ChainPoint {
  accountUuid: string
}

/**
 * The deposits of `evm-erc20` accounts (docs/CONNECTORS.md, Deposits): the addresses given to payments
 * (`chain_deposits`, their indexes in `chain_deposit_keys`), and what each account's chain watcher keeps: its
 * cursor and lease (`chain_cursors`), the blocks it stood on (`chain_blocks`) and the transfers it read
 * (`chain_transfers`). Every write of the watcher is fenced by its lease: a watcher that lost it writes nothing.
 */
export function createChainDepositStore(db: Db) {
  const depositOf = async (paymentUuid: string, executor: Executor = db) => {
    const row = await executor
      .selectFrom('chain_deposits')
      .select(['address', 'derivation_index', 'amount'])
      .where('transaction_uuid', '=', paymentUuid)
      .executeTakeFirst()
    return row ? given(row) : null
  }

  /** The cursor's row, moved on only while `leader` holds the lease, which it renews. */
  const moveCursor = (
    trx: Executor,
    accountUuid: string,
    leader: string,
    to: ChainPoint,
    at: Date,
    leaseMs: number,
  ) =>
    trx
      .updateTable('chain_cursors')
      .set({
        block_number: Number(to.number),
        block_hash: to.hash,
        // Each move renews the lease: a long catch-up keeps it while it makes progress.
        lease_until: new Date(at.getTime() + leaseMs),
        updated_at: at,
      })
      .where('account_uuid', '=', accountUuid)
      .where('leader', '=', leader)
      .where('lease_until', '>', at)
      .executeTakeFirst()
      .then(async (result) => {
        if (result.numUpdatedRows === 1n) return
        const now = await trx
          .selectFrom('chain_cursors')
          .select(['leader', 'lease_until'])
          .where('account_uuid', '=', accountUuid)
          .executeTakeFirst()
        throw new LostLeaseError(accountUuid, leader, now?.leader ?? null, now?.lease_until ?? null)
      })

  const store: ChainDepositStore = {
    depositOf: (paymentUuid) => depositOf(paymentUuid),

    async depositFor({ accountUuid, paymentUuid, amount, address, start: begin }) {
      const before = await depositOf(paymentUuid)
      if (before) return before
      const cursor = await db
        .selectFrom('chain_cursors')
        .select('account_uuid')
        .where('account_uuid', '=', accountUuid)
        .executeTakeFirst()
      const at = new Date()
      if (!cursor) {
        const start = await begin()
        await db.transaction().execute(async (trx) => {
          const made = await trx
            .insertInto('chain_cursors')
            .values({
              account_uuid: accountUuid,
              block_number: Number(start.number),
              block_hash: start.hash,
              leader: null,
              lease_until: null,
              created_at: at,
              updated_at: at,
            })
            .onConflict((oc) => oc.column('account_uuid').doNothing())
            .executeTakeFirst()
          // The first block the cursor stands on is where a reorganisation above it is traced back to.
          if (made.numInsertedOrUpdatedRows === 1n)
            await trx
              .insertInto('chain_blocks')
              .values({
                account_uuid: accountUuid,
                block_number: Number(start.number),
                block_hash: start.hash,
              })
              .execute()
        })
      }
      // Each index is taken, and the row moved on, in one statement of its own: an index once taken is never taken
      // again, even when what follows fails. An address another account gave already (the same deposit key on two
      // accounts) is passed over for the next index, so that one transfer is never two accounts' deposit.
      for (let tries = 0; tries < MAX_INDEX_TRIES; tries++) {
        const { index } = await db
          .insertInto('chain_deposit_keys')
          .values({ account_uuid: accountUuid, next_index: 1, created_at: at, updated_at: at })
          .onConflict((oc) =>
            oc.column('account_uuid').doUpdateSet({
              next_index: sql`chain_deposit_keys.next_index + 1`,
              updated_at: at,
            }),
          )
          .returning(sql<number>`next_index - 1`.as('index'))
          .executeTakeFirstOrThrow()
        const row = {
          transaction_uuid: paymentUuid,
          account_uuid: accountUuid,
          derivation_index: Number(index),
          address: address(Number(index)),
          amount: amount.toString(),
          created_at: at,
        }
        try {
          await db.insertInto('chain_deposits').values(row).execute()
          return given(row)
        } catch (error) {
          // A repeat of the hand-over gave the payment its deposit meanwhile: that one stands.
          if (isUniqueViolation(error, 'chain_deposits_pkey'))
            return (await depositOf(paymentUuid)) as Deposit
          if (!isUniqueViolation(error, 'chain_deposits_address_key')) throw error
        }
      }
      throw new Error(
        `no free deposit address in ${MAX_INDEX_TRIES} indexes: is the deposit key another account's?`,
      )
    },
  }

  return {
    ...store,

    /** The accounts whose watcher has a cursor, that is, which have given a deposit address. */
    watched: () =>
      db
        .selectFrom('chain_cursors')
        .select(['account_uuid', 'block_number'])
        .orderBy('account_uuid')
        .execute(),

    /**
     * The account's cursor, with its lease taken or renewed by `leader` for `leaseMs`; null while another worker
     * holds it.
     */
    async lead(accountUuid: string, leader: string, leaseMs: number, at = new Date()) {
      const row = await db
        .updateTable('chain_cursors')
        .set({ leader, lease_until: new Date(at.getTime() + leaseMs) })
        .where('account_uuid', '=', accountUuid)
        .where((eb) =>
          eb.or([eb('leader', '=', leader), eb('lease_until', 'is', null), eb('lease_until', '<=', at)]),
        )
        .returning(['block_number', 'block_hash'])
        .executeTakeFirst()
      return row
        ? ({ accountUuid, number: BigInt(row.block_number), hash: row.block_hash } satisfies LedCursor)
        : null
    },

    /**
     * Records the transfers read in the blocks after the cursor up to `to` (those to one of the account's deposit
     * addresses, each once) and moves the cursor to `to`, in one database transaction.
     */
    async advance(
      cursor: LedCursor,
      leader: string,
      to: ChainPoint,
      transfers: ReadTransfer[],
      leaseMs: number,
    ) {
      const at = new Date()
      await db.transaction().execute(async (trx) => {
        await moveCursor(trx, cursor.accountUuid, leader, to, at, leaseMs)
        await trx
          .insertInto('chain_blocks')
          .values({ account_uuid: cursor.accountUuid, block_number: Number(to.number), block_hash: to.hash })
          .onConflict((oc) =>
            oc.columns(['account_uuid', 'block_number']).doUpdateSet({ block_hash: to.hash }),
          )
          .execute()
        await trx
          .deleteFrom('chain_blocks')
          .where('account_uuid', '=', cursor.accountUuid)
          .where('block_number', '<', Number(to.number) - KEPT_BLOCKS)
          .execute()
        if (transfers.length === 0) return
        const deposits = new Map(
          (
            await trx
              .selectFrom('chain_deposits')
              .select(['address', 'transaction_uuid'])
              .where('account_uuid', '=', cursor.accountUuid)
              .where('address', 'in', [...new Set(transfers.map((t) => t.to))])
              .execute()
          ).map((row) => [row.address, row.transaction_uuid]),
        )
        const rows = transfers.flatMap((t) => {
          const payment = deposits.get(t.to)
          return payment
            ? [
                {
                  account_uuid: cursor.accountUuid,
                  transaction_hash: t.transactionHash,
                  log_index: t.logIndex,
                  block_number: Number(t.blockNumber),
                  block_hash: t.blockHash,
                  payment_uuid: payment,
                  sender: t.from,
                  amount: t.value.toString(),
                  counted_at: null,
                  created_at: at,
                },
              ]
            : []
        })
        if (rows.length)
          await trx
            .insertInto('chain_transfers')
            .values(rows)
            .onConflict((oc) => oc.columns(['account_uuid', 'transaction_hash', 'log_index']).doNothing())
            .execute()
      })
    },

    /** The blocks the cursor stood on at or below `below`, highest first: where a reorganisation is traced back. */
    blocksBelow: (accountUuid: string, below: bigint, limit: number) =>
      db
        .selectFrom('chain_blocks')
        .select(['block_number', 'block_hash'])
        .where('account_uuid', '=', accountUuid)
        .where('block_number', '<=', Number(below))
        .orderBy('block_number', 'desc')
        .limit(limit)
        .execute()
        .then((rows) => rows.map((row) => ({ number: BigInt(row.block_number), hash: row.block_hash }))),

    /**
     * The chain was reorganised above `fork`, the last block both chains share: the transfers not yet counted of
     * the blocks above it are taken back, and the cursor goes back to it. Answers how many were taken back.
     */
    async rewind(
      cursor: LedCursor,
      leader: string,
      fork: ChainPoint,
      leaseMs: number,
    ): Promise<{ taken: number; counted: number }> {
      const at = new Date()
      return db.transaction().execute(async (trx) => {
        await moveCursor(trx, cursor.accountUuid, leader, fork, at, leaseMs)
        await trx
          .deleteFrom('chain_blocks')
          .where('account_uuid', '=', cursor.accountUuid)
          .where('block_number', '>', Number(fork.number))
          .execute()
        const taken = await trx
          .deleteFrom('chain_transfers')
          .where('account_uuid', '=', cursor.accountUuid)
          .where('block_number', '>', Number(fork.number))
          .where('counted_at', 'is', null)
          .executeTakeFirst()
        const counted = await trx
          .selectFrom('chain_transfers')
          .select(({ fn }) => fn.countAll<string>().as('n'))
          .where('account_uuid', '=', cursor.accountUuid)
          .where('block_number', '>', Number(fork.number))
          .executeTakeFirstOrThrow()
        return { taken: Number(taken.numDeletedRows), counted: Number(counted.n) }
      })
    },

    /** Where the account's cursor stands, read in the caller's transaction and held (shared) until its end. */
    cursorShared: (trx: Executor, accountUuid: string) =>
      trx
        .selectFrom('chain_cursors')
        .select('block_number')
        .where('account_uuid', '=', accountUuid)
        .forShare()
        .executeTakeFirstOrThrow()
        .then((row) => BigInt(row.block_number)),

    /** The payments with transfers not yet counted in blocks up to `upTo`. */
    uncounted: (accountUuid: string, upTo: bigint) =>
      db
        .selectFrom('chain_transfers')
        .select('payment_uuid')
        .distinct()
        .where('account_uuid', '=', accountUuid)
        .where('counted_at', 'is', null)
        .where('block_number', '<=', Number(upTo))
        .execute()
        .then((rows) => rows.map((row) => row.payment_uuid)),

    /**
     * Counts the payment's transfers in blocks up to `upTo` not counted before, in the caller's transaction (which
     * holds the payment's lock): answers them, in token units, with the last one's transaction hash.
     */
    async count(trx: Executor, paymentUuid: string, upTo: bigint, at: Date) {
      const rows = await trx
        .updateTable('chain_transfers')
        .set({ counted_at: at })
        .where('payment_uuid', '=', paymentUuid)
        .where('counted_at', 'is', null)
        .where('block_number', '<=', Number(upTo))
        .returning(['amount', 'transaction_hash', 'block_number', 'log_index'])
        .execute()
      rows.sort((a, b) => Number(a.block_number) - Number(b.block_number) || a.log_index - b.log_index)
      return {
        units: rows.reduce((sum, row) => sum + BigInt(row.amount), 0n),
        last: rows.at(-1)?.transaction_hash ?? null,
      }
    },
  }
}

export type ChainDeposits = ReturnType<typeof createChainDepositStore>

/** The watcher's lease on an account's cursor went to another worker: what it was writing is not written. */
export class LostLeaseError extends Error {
  override name = 'LostLeaseError'
  constructor(accountUuid: string, leader: string, holder: string | null, until: Date | null) {
    super(
      `${leader} lost its lease on the chain of account ${accountUuid}: ${holder ?? 'nobody'} holds it until ${until?.toISOString() ?? 'now'}`,
    )
  }
}

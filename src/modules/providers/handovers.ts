import { sql } from 'kysely'
import type { ProviderPayment } from '../../connectors/types.ts'
import type { Executor } from '../../db/index.ts'
import { newId } from '../../lib/ids.ts'
import type { ProviderDeps } from './accounts.ts'
import * as repo from './repository.ts'

/**
 * The record of payments handed to providers (docs/OPERATIONS.md, Hand-over and status sync): each try along a
 * payment's route, the account that has it with the provider's reference, and when status sync asks next. The
 * hand-over itself is the transactions module's: it calls the connector between these writes.
 */
export function createHandoverRecords(deps: ProviderDeps) {
  return {
    /** Up to `limit` payments handed over, or tried, under the provider's `reference` (a dashboard search). */
    paymentsWithReference: (reference: string, limit: number) =>
      repo.paymentsWithReference(deps.db, reference, limit),

    /**
     * In the caller's transaction (the payment's insert): the first try begins, and the payment is with
     * `accountUuid`. It is due for status sync after `leaseMs`, so a process killed during the provider call
     * leaves it to a worker.
     */
    async begin(
      trx: Executor,
      input: { transactionUuid: string; accountUuid: string; at: Date; leaseMs: number },
    ): Promise<string> {
      const { transactionUuid, accountUuid, at } = input
      await repo.insertHandover(trx, {
        transaction_uuid: transactionUuid,
        account_uuid: accountUuid,
        state: 'handing_over',
        provider_reference: null,
        redirect_url: null,
        sync_due_at: new Date(at.getTime() + input.leaseMs),
        created_at: at,
        updated_at: at,
      })
      return insertStartedAttempt(trx, transactionUuid, accountUuid, 0, at)
    },

    /**
     * In the caller's transaction: the try at `position` begins, and the payment is with `accountUuid`, due for
     * status sync after `leaseMs`; unless the hand-over no longer waits on a try (status sync finished the one
     * before, whose call outlasted its lease): then null, and nothing changes.
     */
    async next(
      trx: Executor,
      input: { transactionUuid: string; accountUuid: string; position: number; at: Date; leaseMs: number },
    ): Promise<string | null> {
      const { transactionUuid, accountUuid, position, at } = input
      const moved = await repo.moveHandover(trx, transactionUuid, {
        account_uuid: accountUuid,
        sync_due_at: new Date(at.getTime() + input.leaseMs),
        updated_at: at,
      })
      return moved === 1 ? insertStartedAttempt(trx, transactionUuid, accountUuid, position, at) : null
    },

    /**
     * In the caller's transaction: the provider took the payment on this try; status sync asks after `syncAt`.
     * The hand-over keeps it only while it still waits on this try's account (a try that outlasted its lease
     * may answer after status sync or the next account's try has taken over): whether it did.
     */
    async accepted(
      trx: Executor,
      input: {
        transactionUuid: string
        attemptUuid: string
        payment: ProviderPayment
        at: Date
        syncAt: Date
      },
    ): Promise<boolean> {
      const { payment, at } = input
      await repo.updateAttempt(trx, input.attemptUuid, {
        result: 'accepted',
        provider_reference: payment.reference,
        detail: 'accepted',
        updated_at: at,
      })
      const recorded = await repo.recordHandedOver(trx, input.transactionUuid, input.attemptUuid, {
        state: 'handed_over',
        provider_reference: payment.reference,
        redirect_url: payment.redirectUrl,
        sync_due_at: input.syncAt,
        sync_count: 0,
        updated_at: at,
      })
      return recorded === 1
    },

    /**
     * The try ended without the provider taking the payment; a try already ended otherwise (status sync's call
     * of it was answered) keeps that end.
     */
    tryFailed: (
      db: Executor,
      attemptUuid: string,
      result: 'refused' | 'no_answer',
      detail: string,
      at: Date,
    ) => repo.endStartedAttempt(db, attemptUuid, { result, detail: detail.slice(0, 500), updated_at: at }),

    /** No account took the payment, or the payment is final: status sync never asks about it again. */
    close: (db: Executor, transactionUuid: string, state: 'failed' | 'final', at: Date) =>
      closing(db, transactionUuid, state, at).execute(),
    /** The statement `close` runs, to be run with another (as a common table expression). */
    closing,
    /**
     * No account took the payment: the hand-over ends failed, unless it no longer waits on a try (a repeat of a try
     * took the payment meanwhile). Whether it ended.
     */
    giveUp: async (db: Executor, transactionUuid: string, at: Date) =>
      (await repo.failHandingOver(db, transactionUuid, at)) === 1,

    /**
     * Status sync's next asks, in one statement: each hand-over still under the claim that ends at `claimedUntil`
     * (one a callback or a hint has changed since keeps what they set) is asked again at `due`, after `count` asks.
     */
    async scheduleMany(
      db: Executor,
      entries: { transactionUuid: string; due: Date; count: number }[],
      claimedUntil: Date,
      at: Date,
    ): Promise<void> {
      if (entries.length === 0) return
      await sql`UPDATE payment_handovers AS h
        SET sync_due_at = v.due, sync_count = v.count, updated_at = ${at.toISOString()}::timestamptz
        FROM unnest(
          ${`{${entries.map((e) => e.transactionUuid).join(',')}}`}::uuid[],
          ${`{${entries.map((e) => e.due.toISOString()).join(',')}}`}::timestamptz[],
          ${`{${entries.map((e) => e.count).join(',')}}`}::int[]
        ) AS v(uuid, due, count)
        WHERE h.transaction_uuid = v.uuid AND h.sync_due_at = ${claimedUntil.toISOString()}::timestamptz`.execute(
        db,
      )
    },

    /** When status sync asks next (null: never), after `count` asks. */
    schedule: (db: Executor, transactionUuid: string, due: Date | null, count: number, at: Date) =>
      repo.updateHandover(db, transactionUuid, { sync_due_at: due, sync_count: count, updated_at: at }),

    /** The try a hand-over stopped in (begun, never ended: its process was killed during the call). */
    startedAttempt: (db: Executor, transactionUuid: string) =>
      db
        .selectFrom('payment_attempts')
        .select(['uuid', 'position'])
        .where('transaction_uuid', '=', transactionUuid)
        .where('result', '=', 'started')
        .orderBy('position', 'desc')
        .executeTakeFirst(),
    /** A payment's hand-over with the kind of the account that has it; none for a payment never handed over. */
    heldBy: (db: Executor, transactionUuid: string) =>
      db
        .selectFrom('payment_handovers as h')
        .innerJoin('connector_accounts as a', 'a.uuid', 'h.account_uuid')
        .select(['h.state', 'h.redirect_url', 'a.kind'])
        .where('h.transaction_uuid', '=', transactionUuid)
        .executeTakeFirst(),
    find: (db: Executor, transactionUuid: string) => repo.findHandover(db, transactionUuid),
    /** The hand-over `reference` names at the account; none for a reference no provider could have answered. */
    findByReference: async (db: Executor, accountUuid: string, reference: string) =>
      reference.includes('\u0000') ? undefined : repo.findHandoverByReference(db, accountUuid, reference),
    /**
     * The payment handed to the account under `reference`, read locked in `trx` (none for a reference no
     * provider could have answered): what a callback about it applies to.
     */
    lockPayment: async (trx: Executor, accountUuid: string, reference: string) =>
      reference.includes('\u0000') ? undefined : repo.lockPaymentByReference(trx, accountUuid, reference),
    /** Seconds since the most overdue status sync was due (0 when none is). */
    async syncLagSeconds(now = new Date()): Promise<number> {
      const row = await deps.db
        .selectFrom('payment_handovers')
        .select((eb) => eb.fn.min('sync_due_at').as('due'))
        .where('sync_due_at', '<=', now)
        .executeTakeFirst()
      const due = row?.due ? new Date(row.due as Date | string) : null
      return due ? Math.max(0, (now.getTime() - due.getTime()) / 1000) : 0
    },
    attempts: (transactionUuid: string) => repo.listAttempts(deps.db, transactionUuid),
    claimDue: (now: Date, limit: number, leaseMs: number) =>
      repo.claimDueHandovers(deps.db, now, limit, leaseMs),
  }
}

function closing(
  db: Pick<Executor, 'updateTable'>,
  transactionUuid: string,
  state: 'failed' | 'final',
  at: Date,
) {
  return db
    .updateTable('payment_handovers')
    .set({ state, sync_due_at: null, updated_at: at })
    .where('transaction_uuid', '=', transactionUuid)
}

async function insertStartedAttempt(
  trx: Executor,
  transactionUuid: string,
  accountUuid: string,
  position: number,
  at: Date,
): Promise<string> {
  const uuid = newId()
  await repo.insertAttempt(trx, {
    uuid,
    transaction_uuid: transactionUuid,
    position,
    account_uuid: accountUuid,
    result: 'started',
    provider_reference: null,
    detail: 'handing over',
    created_at: at,
    updated_at: at,
  })
  return uuid
}

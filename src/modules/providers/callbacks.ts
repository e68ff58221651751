import { sql } from 'kysely'
import { type AcquirerCallback, parseAcquirerCallback } from '../../connectors/http-acquirer/callbacks.ts'
import { verifyCallback } from '../../connectors/http-acquirer/signature.ts'
import { CONNECTOR_KINDS, type ConnectorKind } from '../../connectors/kinds.ts'
import type { Executor } from '../../db/index.ts'
import type { CallbackVerificationResult, ConnectorCallbackResult } from '../../db/types.ts'
import { AppError, foundByUuid, validationError } from '../../http/errors.ts'
import { isUuid, newId } from '../../lib/ids.ts'
import { providerCallbacks } from '../../lib/metrics.ts'
import type { createAccountOperations, ProviderDeps } from './accounts.ts'
import type { createHandoverRecords } from './handovers.ts'

const PAYMENT_OUTCOMES = { succeeded: 'paid', failed: 'failed', expired: 'expired' } as const

/** What the callback log says a verified callback did. */
const DETAILS: Record<
  'applied' | 'duplicate' | 'stale' | 'review',
  (payment: string, outcome: string, callback: AcquirerCallback) => string
> = {
  applied: (payment, outcome) => `payment ${payment} is now ${outcome}`,
  duplicate: (payment, outcome) => `payment ${payment} was already ${outcome}: nothing changed`,
  stale: (payment, outcome) => `payment ${payment} is past ${outcome}: recorded, not applied`,
  review: (payment, _outcome, callback) =>
    `payment ${payment} is under review: the provider reports ${callback.data.amount} ${callback.data.currency}`,
}

/** What the callback log says a verified callback about a refund or payout did. */
const OBJECT_DETAILS: Record<'applied' | 'duplicate' | 'stale', (what: string, outcome: string) => string> = {
  applied: (what, outcome) => `${what} is now ${outcome}`,
  duplicate: (what, outcome) => `${what} was already ${outcome}: nothing changed`,
  stale: (what, outcome) => `${what} is past ${outcome}: recorded, not applied`,
}

/** Where a payment's, refund's or payout's reference at its account is kept, and the column of its uuid. */
const CALLBACK_OBJECTS = [
  { table: 'payment_handovers', id: 'transaction_uuid' },
  { table: 'refunds', id: 'uuid' },
  { table: 'payouts', id: 'uuid' },
] as const

/** Headers that carry credentials: never kept in the callback log. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-api-key'])

export interface ReceivedCallback {
  accountUuid: string
  headers: Record<string, string | string[] | undefined>
  /** The body exactly as received (UTF-8), the bytes the signature covers. */
  body: string
}

export interface CallbackReceipt {
  uuid: string
  result: ConnectorCallbackResult
  detail: string
}

/**
 * An account's inbound callbacks (docs/OPERATIONS.md, The callback log): each is verified with the account's
 * accepted secrets, parsed, and kept with what it did, before it is answered. One that does not verify is refused
 * (401) and changes nothing; a malformed one is 400; a verified one about a reference the gateway never handed to
 * this account is acknowledged as unmatched, so the provider stops retrying. Only a failure to record it is a 5xx.
 */
export function createCallbackReceiver(
  deps: ProviderDeps,
  accounts: ReturnType<typeof createAccountOperations>,
  handovers: ReturnType<typeof createHandoverRecords>,
) {
  // Status asks a bad signature may cause, per account: at most one a second (a hint is no proof).
  const hinted = new Map<string, number>()

  /**
   * A callback whose signature did not verify, about a payment, refund or payout handed to the account: the
   * provider is asked for its status instead (status sync, or the refunds' or payouts' check, now), at most once a
   * second per account. What it says is what counts; the callback itself changes nothing.
   */
  async function hint(account: { uuid: string }, callback: AcquirerCallback | null): Promise<string> {
    if (!callback) return ''
    const now = Date.now()
    if ((hinted.get(account.uuid) ?? 0) > now - 1000) return '; too many such callbacks to ask the provider'
    const [subject] = callback.type.split('.') as [string]
    const reference = callback.data.reference
    if (subject !== 'payment') {
      const reports = subject === 'refund' ? deps.refunds?.() : deps.payouts?.()
      if (!reports || reference.includes('\u0000')) return ''
      if (!(await reports.recheck(account.uuid, reference, new Date(now)))) return ''
      hinted.set(account.uuid, now)
      return `; the ${subject}'s status is asked from the provider instead`
    }
    const handover = await handovers.findByReference(deps.db, account.uuid, reference)
    if (!handover || handover.sync_due_at === null) return ''
    hinted.set(account.uuid, now)
    await handovers.schedule(
      deps.db,
      handover.transaction_uuid,
      new Date(now),
      handover.sync_count,
      new Date(now),
    )
    return "; the payment's status is asked from the provider instead"
  }

  /** A verified callback, applied to what it is about in `trx`, and logged there with what it did. */
  async function applyCallback(
    trx: Executor,
    account: { uuid: string; name: string },
    callback: AcquirerCallback,
    log: (
      db: Executor,
      result: ConnectorCallbackResult,
      detail: string,
      /** Also closes this payment's hand-over (final: status sync asks no more), in the same statement. */
      closing?: string,
    ) => Promise<readonly [ConnectorCallbackResult, string]>,
  ) {
    const [subject, event] = callback.type.split('.') as [string, string]
    if (subject === 'refund' || subject === 'payout') {
      const report = {
        accountUuid: account.uuid,
        reference: callback.data.reference,
        connector: account.name,
        message: callback.data.reason ?? `The provider reports the ${subject} ${event}.`,
      }
      // A reference with a NUL is none the provider could have answered (and no text column can hold it).
      const known = !callback.data.reference.includes('\u0000')
      const applied = !known
        ? null
        : subject === 'refund'
          ? await deps.refunds?.().apply(trx, { ...report, outcome: event as 'succeeded' | 'failed' })
          : await deps.payouts?.().apply(trx, { ...report, outcome: event as 'completed' | 'failed' })
      if (!applied)
        return log(
          trx,
          'unmatched',
          `no ${subject} handed to this account has reference ${callback.data.reference}`,
        )
      return log(trx, applied.result, OBJECT_DETAILS[applied.result](`${subject} ${applied.uuid}`, event))
    }
    const locked =
      subject === 'payment'
        ? await handovers.lockPayment(trx, account.uuid, callback.data.reference)
        : undefined
    if (!locked || !deps.payments)
      return log(
        trx,
        'unmatched',
        `no ${subject} handed to this account has reference ${callback.data.reference}`,
      )
    const outcome = PAYMENT_OUTCOMES[event as keyof typeof PAYMENT_OUTCOMES]
    const payment = locked.uuid
    let logged: readonly [ConnectorCallbackResult, string] | undefined
    // Kept before the payment changes, in the same transaction: its money moves last, just before the commit. An
    // outcome that moved the payment ends status sync's asks (the provider has said), in the same statement.
    const record = async (result: keyof typeof DETAILS) => {
      logged = await log(
        trx,
        result,
        DETAILS[result](payment, outcome, callback),
        result === 'applied' ? payment : undefined,
      )
    }
    const { result } = await deps.payments().apply(
      trx,
      locked,
      {
        outcome,
        amount: callback.data.amount ?? null,
        currency: callback.data.currency ?? null,
        connector: account.name,
        reference: callback.id,
        accountUuid: account.uuid,
      },
      record,
    )
    // A review changes nothing of the payment: it is kept without going through `record`.
    if (!logged) await record(result)
    return logged as readonly [ConnectorCallbackResult, string]
  }

  return {
    /** The log, newest first, filtered by account name, result and the provider's reference. */
    async list(filter: {
      account?: string
      result?: ConnectorCallbackResult
      reference?: string
      /** About this payment, refund or payout (by the reference its account gave it). */
      about?: string
      limit: number
    }) {
      let query = deps.db
        .selectFrom('connector_callbacks as c')
        .innerJoin('connector_accounts as a', 'a.uuid', 'c.account_uuid')
        .select([
          'c.uuid',
          'a.name as account',
          'c.received_at',
          'c.verification',
          'c.event_type',
          'c.provider_reference',
          'c.result',
          'c.detail',
        ])
        .orderBy('c.received_at', 'desc')
        .orderBy('c.uuid', 'desc')
        .limit(filter.limit)
      if (filter.account) query = query.where('a.name', '=', filter.account)
      if (filter.result) query = query.where('c.result', '=', filter.result)
      if (filter.reference) query = query.where('c.provider_reference', '=', filter.reference)
      if (filter.about !== undefined) {
        if (!isUuid(filter.about)) throw validationError('about', 'not a uuid')
        const about = filter.about
        // A callback names its object by the reference the account gave it: the payment's hand-over, the
        // refund's or the payout's.
        query = query.where((eb) =>
          eb.or(
            CALLBACK_OBJECTS.map(({ table, id }) =>
              eb.exists(
                sql`(SELECT 1 FROM ${sql.table(table)} AS o
                  WHERE o.account_uuid = c.account_uuid AND o.provider_reference = c.provider_reference
                    AND ${sql.ref(`o.${id}`)} = ${about})`,
              ),
            ),
          ),
        )
      }
      return query.execute()
    },

    /** One callback as received: its headers (without credentials) and body. */
    show: (uuid: string) =>
      foundByUuid('callback', uuid, (id) =>
        deps.db
          .selectFrom('connector_callbacks as c')
          .innerJoin('connector_accounts as a', 'a.uuid', 'c.account_uuid')
          .selectAll('c')
          .select('a.name as account')
          .where('c.uuid', '=', id)
          .executeTakeFirst(),
      ),

    /**
     * Deletes the callbacks received more than PROVIDER_CALLBACK_RETENTION_DAYS ago, in batches of `batch`, each
     * its own statement; any number of workers may run it at once. Returns how many it deleted.
     */
    async purge(now = new Date(), batch = 1000): Promise<number> {
      const before = new Date(now.getTime() - deps.config.callbackRetentionDays * 86_400_000)
      let purged = 0
      for (;;) {
        const { numDeletedRows } = await deps.db
          .deleteFrom('connector_callbacks')
          .where(
            'uuid',
            'in',
            deps.db
              .selectFrom('connector_callbacks')
              .select('uuid')
              .where('received_at', '<', before)
              .limit(batch)
              .forUpdate()
              .skipLocked(),
          )
          .executeTakeFirst()
        purged += Number(numDeletedRows)
        if (Number(numDeletedRows) < batch) return purged
      }
    },

    async receive(received: ReceivedCallback): Promise<CallbackReceipt> {
      const { account, secrets } = await foundByUuid('connector account', received.accountUuid, (uuid) =>
        accounts.receiving(uuid),
      )
      if (!CONNECTOR_KINDS[account.kind as ConnectorKind].signedCallbacks)
        throw new AppError('not_found', `A ${account.kind} account takes no callbacks over HTTP.`)
      const check = verifyCallback(received.body, received.headers, secrets)
      const verification: CallbackVerificationResult = check.ok ? 'verified' : check.reason
      const parsed = parseAcquirerCallback(received.body)
      const callback = 'callback' in parsed ? parsed.callback : null
      const uuid = newId()
      const log = async (db: Executor, result: ConnectorCallbackResult, detail: string, closing?: string) => {
        const at = new Date()
        const insert = (creator: Pick<Executor, 'insertInto'>) =>
          creator.insertInto('connector_callbacks').values({
            uuid,
            account_uuid: account.uuid,
            received_at: at,
            headers: JSON.stringify(keptHeaders(received.headers)),
            // The signature was checked on the body as received.
            body: storable(received.body),
            verification,
            event_type: callback?.type ?? null,
            provider_reference: callback ? storable(callback.data.reference) : null,
            result,
            detail: storable(detail),
          })
        await (closing === undefined
          ? insert(db)
          : insert(db.with('closed', (cte) => handovers.closing(cte, closing, 'final', at)))
        ).execute()
        return [result, detail] as const
      }
      const [result, detail] =
        check.ok && callback
          ? await deps.db.transaction().execute((trx) => applyCallback(trx, account, callback, log))
          : await log(
              deps.db,
              !check.ok ? 'refused' : 'malformed',
              !check.ok
                ? `the signature did not verify (${check.reason})${await hint(account, callback)}`
                : 'fault' in parsed
                  ? parsed.fault
                  : 'malformed',
            )
      providerCallbacks.inc({ account: account.name, result })
      // Kept first, then answered: a refusal names the log entry that holds what was sent.
      if (result === 'refused')
        throw new AppError(
          verification === 'stale' ? 'signature_expired' : 'signature_invalid',
          'The callback signature did not verify; nothing changed.',
          { callback_id: uuid },
        )
      if (result === 'malformed')
        throw new AppError('malformed_request', `The callback could not be read: ${detail}.`, {
          callback_id: uuid,
        })
      return { uuid, result, detail }
    },
  }
}

function keptHeaders(headers: ReceivedCallback['headers']): Record<string, string> {
  const kept: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || CREDENTIAL_HEADERS.has(name.toLowerCase())) continue
    kept[name.toLowerCase()] = (Array.isArray(value) ? value.join(', ') : value).replaceAll(
      '\u0000',
      '\uFFFD',
    )
  }
  return kept
}

/** PostgreSQL's text and jsonb hold no NUL: kept as U+FFFD. */
const storable = (text: string): string => text.replaceAll('\u0000', '\uFFFD')

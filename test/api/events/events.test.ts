import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as eventsMigration from '../../../src/db/migrations/0007_events_api.ts'
import type { Mode } from '../../../src/db/types.ts'
import { runMaintenance } from '../../../src/workers/maintenance.ts'
import { onePageMeta } from '../../helpers/assertions.ts'
import { assertFieldInvalid } from '../../helpers/errors.ts'
import { backends, call, eventually, newTransaction, type TestMerchant } from '../../helpers/harness.ts'
import { seededRandom } from '../../helpers/random.ts'
import { assertRefusedOn, assertRefusesValues } from '../../helpers/refused-queries.ts'
import { suiteContext, suiteReceiver, suiteWorkers } from '../../helpers/suite.ts'

interface EventJson {
  event: string
  event_id: string
  schema_version: string
  occurred_at: string
  aggregate_version: number
  transaction?: { uuid: string; status: string } & Record<string, unknown>
  payout?: { uuid: string; status: string } & Record<string, unknown>
  webhook_status: string
}

interface Page {
  data: EventJson[]
  meta: { per_page: number; next_cursor: string | null; prev_cursor: string | null; path: string }
}

/** An event row as the test writes it straight into `events`, with the time and type it needs. */
interface EventSpec {
  uuid: string
  event: string
  occurred_at: Date
  aggregate_uuid: string
}

const DAY_MS = 86_400_000

/** Newest first: occurred_at desc, then the event id desc (PostgreSQL orders uuids as their hex text). */
const newestFirst = (a: EventSpec, b: EventSpec) =>
  b.occurred_at.getTime() - a.occurred_at.getTime() || (a.uuid < b.uuid ? 1 : a.uuid > b.uuid ? -1 : 0)

/** A uuid from the seeded generator: runs are repeatable, and ids of one test never meet another's. */
function uuidFrom(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20)}`
}

const withoutStatus = ({ webhook_status: _, ...body }: EventJson) => body

for (const backend of backends()) {
  describe(`events (${backend})`, () => {
    const ctx = suiteContext(backend, {
      services: {
        // A failed attempt is retried in an hour: the delivery stays pending for the whole suite.
        dispatch: { schedule: [3600], random: () => 0.5 },
        // Payouts complete when the test says so, not on the provider's own clock.
        payouts: { completionMs: 3_600_000 },
      },
    })
    /** Answers 200, 410 and 500: a delivery that succeeds, one that fails at once, one left to retry. */
    const ok = suiteReceiver(ctx)
    const gone = suiteReceiver(ctx, () => ({ status: 410 }))
    const broken = suiteReceiver(ctx, () => ({ status: 500 }))
    suiteWorkers(ctx)
    const random = seededRandom(14)

    const as = (merchant: TestMerchant, mode: Mode = 'test') => ({ as: { merchant, mode } })

    async function list(merchant: TestMerchant, query: Record<string, string> = {}, mode: Mode = 'test') {
      const qs = new URLSearchParams(query).toString()
      return call(ctx, 'GET', `/integration/events${qs ? `?${qs}` : ''}`, undefined, as(merchant, mode))
    }

    async function listOk(merchant: TestMerchant, query: Record<string, string> = {}, mode: Mode = 'test') {
      const res = await list(merchant, query, mode)
      assert.equal(res.statusCode, 200, res.body)
      return res.json<Page>()
    }

    const getEvent = (merchant: TestMerchant, id: string, mode: Mode = 'test') =>
      call(ctx, 'GET', `/integration/events/${id}`, undefined, as(merchant, mode))

    async function assertValidation(merchant: TestMerchant, query: Record<string, string>, field: string) {
      assertFieldInvalid(await list(merchant, query), field, JSON.stringify(query))
    }

    const idsOf = (page: Page) => page.data.map((e) => e.event_id)

    async function configureWebhook(merchant: TestMerchant, url: string, mode: Mode = 'test') {
      const res = await call(ctx, 'PUT', '/integration/webhook', { url }, as(merchant, mode))
      assert.equal(res.statusCode, 200, res.body)
    }

    async function createTx(
      merchant: TestMerchant,
      overrides: Record<string, unknown> = {},
      mode: Mode = 'test',
    ) {
      const res = await call(
        ctx,
        'POST',
        '/integration/transactions',
        newTransaction(overrides),
        as(merchant, mode),
      )
      assert.equal(res.statusCode, 201, res.body)
      return res.json()
    }

    async function paidTx(
      merchant: TestMerchant,
      overrides: Record<string, unknown> = {},
      mode: Mode = 'test',
    ) {
      const tx = await createTx(merchant, overrides, mode)
      const res = await call(
        ctx,
        'POST',
        `/integration/sandbox/transactions/${tx.uuid}/paid`,
        undefined,
        as(merchant, mode),
      )
      assert.equal(res.statusCode, 200, res.body)
      return res.json()
    }

    let keyCounter = 0
    async function refund(merchant: TestMerchant, transactionUuid: string, amountMinor?: number) {
      const res = await call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: transactionUuid, ...(amountMinor ? { amount_minor: amountMinor } : {}) },
        { ...as(merchant), auth: 'signature', idempotencyKey: `events-refund-${keyCounter++}` },
      )
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().status, 'succeeded')
      return res.json()
    }

    /**
     * A payment's life: a larger payment first (so the refunds' ceiled debits are covered), then a payment of
     * 1500.00 RUB, paid, refunded 500.00, then the rest: four events.
     */
    async function lifecycle(merchant: TestMerchant) {
      const funding = await paidTx(merchant, { amount: 1_000_000 })
      const tx = await paidTx(merchant, { amount: 150_000 })
      const partial = await refund(merchant, tx.uuid, 50_000)
      const rest = await refund(merchant, tx.uuid)
      return { funding, tx, partial, rest }
    }

    /** A 1.00 USD payout to a wallet, funded by a paid 1000.00 USD payment, then completed in the sandbox. */
    async function completedPayout(merchant: TestMerchant) {
      await paidTx(merchant, { amount: 100_000, currency: 'USD' })
      const res = await call(
        ctx,
        'POST',
        '/integration/payouts',
        {
          external_id: `po-events-${keyCounter++}`,
          amount: 100,
          currency: 'USD',
          method: 'usdt_wallet',
          destination: { address: 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE', network: 'TRC20' },
        },
        { ...as(merchant), auth: 'signature', idempotencyKey: `events-payout-${keyCounter++}` },
      )
      assert.equal(res.statusCode, 201, res.body)
      const done = await call(
        ctx,
        'POST',
        `/integration/sandbox/payouts/${res.json().uuid}/completed`,
        undefined,
        as(merchant),
      )
      assert.equal(done.statusCode, 200, done.body)
      assert.equal(done.json().status, 'completed')
      return done.json()
    }

    /**
     * Writes events straight into the outbox table, at the times a test needs. Each body is a real webhook
     * body: the transaction `template` (as the API shows it) under the event's own aggregate uuid.
     */
    async function insertEvents(merchant: TestMerchant, specs: EventSpec[], mode: Mode = 'test') {
      const template = await createTx(merchant, {}, mode)
      await ctx.db
        .insertInto('events')
        .values(
          specs.map((spec) => ({
            uuid: spec.uuid,
            merchant_uuid: merchant.uuid,
            mode,
            event: spec.event,
            aggregate_type: 'transaction' as const,
            aggregate_uuid: spec.aggregate_uuid,
            aggregate_version: 2,
            occurred_at: spec.occurred_at,
            body: JSON.stringify({
              event: spec.event,
              event_id: spec.uuid,
              schema_version: '1',
              occurred_at: spec.occurred_at.toISOString(),
              aggregate_version: 2,
              transaction: { ...template, uuid: spec.aggregate_uuid, aggregate_version: 2 },
            }),
          })),
        )
        .execute()
    }

    const spec = (event: string, at: string): EventSpec => ({
      uuid: uuidFrom(random),
      event,
      occurred_at: new Date(at),
      aggregate_uuid: uuidFrom(random),
    })

    it('a payment and its refunds: their events newest first, each the body its webhook delivered', async () => {
      const m = await ctx.newMerchant('Lifecycle')
      await configureWebhook(m, `${ok.url}/hooks`)
      const { funding, tx, partial, rest } = await lifecycle(m)

      // Every delivery done: the events say so.
      const page = await eventually(async () => {
        const p = await listOk(m)
        return p.data.length === 4 && p.data.every((e) => e.webhook_status === 'succeeded') ? p : null
      })
      assert.deepEqual(
        page.data.map((e) => [e.event, e.transaction?.uuid, e.aggregate_version, e.transaction?.status]),
        [
          ['transaction.refunded', tx.uuid, 4, 'refunded'],
          ['transaction.partially_refunded', tx.uuid, 3, 'partially_refunded'],
          ['transaction.paid', tx.uuid, 2, 'paid'],
          ['transaction.paid', funding.uuid, 2, 'paid'],
        ],
      )
      assert.deepEqual(page.meta, onePageMeta('/integration/events'))
      for (const event of page.data) {
        assert.equal(event.schema_version, '1')
        assert.equal(Object.keys(event).at(-1), 'webhook_status')
        // The webhook's body, delivered, is the event without its webhook_status.
        const delivered = ok.received.filter((r) => r.headers['webhook-id'] === event.event_id)
        assert.equal(delivered.length, 1, event.event)
        assert.deepEqual(JSON.parse(delivered[0]?.body as string), withoutStatus(event))
        // And one event read alone is the same as in the list.
        const one = await getEvent(m, event.event_id)
        assert.equal(one.statusCode, 200, one.body)
        assert.deepEqual(one.json(), event)
      }
      // Newest first, also by the stored times.
      const times = page.data.map((e) => Date.parse(e.occurred_at))
      assert.deepEqual(
        times,
        [...times].sort((a, b) => b - a),
      )
      // A refund's event occurred when the refund succeeded.
      assert.equal(page.data[0]?.occurred_at, rest.succeeded_at)
      assert.equal(page.data[1]?.occurred_at, partial.succeeded_at)
    })

    it('object_uuid: the events of a transaction, of a refund (what its success caused) and of a payout', async () => {
      const m = await ctx.newMerchant('Objects')
      const { tx, partial, rest } = await lifecycle(m)
      const payout = await completedPayout(m)

      const ofTx = await listOk(m, { object_uuid: tx.uuid })
      assert.deepEqual(
        ofTx.data.map((e) => [e.event, e.aggregate_version]),
        [
          ['transaction.refunded', 4],
          ['transaction.partially_refunded', 3],
          ['transaction.paid', 2],
        ],
      )
      // No webhook URL and no callback_url: no delivery was due.
      assert.ok(ofTx.data.every((e) => e.webhook_status === 'none'))
      assert.deepEqual(
        (await listOk(m, { object_uuid: tx.uuid.toUpperCase() })).data.map((e) => e.event_id),
        idsOf(ofTx),
      )

      const ofPartial = await listOk(m, { object_uuid: partial.uuid })
      assert.deepEqual(
        ofPartial.data.map((e) => [e.event, e.transaction?.uuid, e.transaction?.status]),
        [['transaction.partially_refunded', tx.uuid, 'partially_refunded']],
      )
      const ofRest = await listOk(m, { object_uuid: rest.uuid })
      assert.deepEqual(
        ofRest.data.map((e) => [e.event, e.transaction?.uuid]),
        [['transaction.refunded', tx.uuid]],
      )

      const ofPayout = await listOk(m, { object_uuid: payout.uuid })
      assert.deepEqual(
        ofPayout.data.map((e) => [
          e.event,
          e.aggregate_version,
          e.payout?.uuid,
          e.payout?.status,
          'transaction' in e,
        ]),
        [
          ['payout.completed', 3, payout.uuid, 'completed', false],
          ['payout.processing', 2, payout.uuid, 'processing', false],
        ],
      )
      const one = await getEvent(m, ofPayout.data[0]?.event_id as string)
      assert.deepEqual(one.json(), ofPayout.data[0])

      // Nothing of its own: an empty list, not an error.
      assert.deepEqual((await listOk(m, { object_uuid: uuidFrom(random) })).data, [])
      await assertValidation(m, { object_uuid: 'not-a-uuid' }, 'object_uuid')

      // Combined with type.
      assert.deepEqual(
        (await listOk(m, { object_uuid: tx.uuid, type: 'transaction.paid,payout.completed' })).data.map(
          (e) => e.aggregate_version,
        ),
        [2],
      )
      assert.deepEqual(
        (await listOk(m, { type: 'payout.completed,payout.processing' })).data.map((e) => e.event),
        ['payout.completed', 'payout.processing'],
      )
    })

    it('filters: type, created_from and created_to, alone and combined; invalid values are 422', async () => {
      const m = await ctx.newMerchant('Filters')
      const a = spec('transaction.paid', '2026-03-09T23:59:59.999Z')
      const b = spec('transaction.paid', '2026-03-10T00:00:00.000Z')
      const c = spec('transaction.failed', '2026-03-10T12:00:00.000Z')
      const d = spec('transaction.refunded', '2026-03-10T23:59:59.999Z')
      const e = spec('transaction.expired', '2026-03-11T00:00:00.000Z')
      await insertEvents(m, [c, a, e, b, d])
      const ids = async (query: Record<string, string>) => idsOf(await listOk(m, query))
      const of = (...specs: EventSpec[]) => specs.map((s) => s.uuid)

      assert.deepEqual(await ids({}), of(e, d, c, b, a))
      assert.deepEqual(await ids({ type: 'transaction.paid' }), of(b, a))
      assert.deepEqual(await ids({ type: 'transaction.refunded,transaction.paid' }), of(d, b, a))
      assert.deepEqual(await ids({ type: 'transaction.paid,transaction.paid' }), of(b, a))
      assert.deepEqual(await ids({ type: 'payout.failed' }), [])

      // A date covers its whole UTC day; both ends are inclusive.
      assert.deepEqual(await ids({ created_from: '2026-03-10' }), of(e, d, c, b))
      assert.deepEqual(await ids({ created_to: '2026-03-10' }), of(d, c, b, a))
      assert.deepEqual(await ids({ created_from: '2026-03-10', created_to: '2026-03-10' }), of(d, c, b))
      // Date-times, with an offset.
      assert.deepEqual(await ids({ created_from: '2026-03-10T12:00:00Z' }), of(e, d, c))
      assert.deepEqual(await ids({ created_to: '2026-03-10T15:00:00+03:00' }), of(c, b, a))
      assert.deepEqual(
        await ids({ created_from: '2026-03-10T00:00:00.001Z', created_to: '2026-03-10T23:59:59.998Z' }),
        of(c),
      )

      // Every filter at once.
      assert.deepEqual(
        await ids({
          type: 'transaction.paid,transaction.failed',
          created_from: '2026-03-10',
          created_to: '2026-03-11',
          object_uuid: b.aggregate_uuid,
        }),
        of(b),
      )
      assert.deepEqual(await ids({ type: 'transaction.paid', object_uuid: c.aggregate_uuid }), [])
      assert.deepEqual(
        await ids({ type: 'transaction.failed,transaction.expired', created_to: '2026-03-10' }),
        of(c),
      )

      await assertRefusesValues((query) => list(m, query), {
        type: ['transaction.paid,transaction.lost', 'webhook.test', 'Transaction.Paid', ''],
        created_from: ['2026-02-30', '2026-03-10T12:00:00'],
        created_to: ['yesterday'],
        per_page: ['0', '101'],
        event: ['transaction.paid'],
      })
      await assertValidation(m, { created_from: '2026-03-11', created_to: '2026-03-10' }, 'created_from')
    })

    it('cursors: next and prev across pages, ties broken by event id; a cursor keeps its filters', async () => {
      const m = await ctx.newMerchant('Pages')
      const shared = '2026-05-01T10:00:00.000Z'
      const specs = [
        spec('transaction.paid', '2026-05-01T09:00:00.000Z'),
        spec('transaction.paid', shared),
        spec('transaction.failed', shared),
        spec('transaction.paid', shared),
        spec('transaction.refunded', '2026-05-01T11:00:00.000Z'),
        spec('transaction.paid', shared),
        spec('transaction.paid', '2026-05-02T00:00:00.000Z'),
      ]
      await insertEvents(m, specs)
      const expected = [...specs].sort(newestFirst).map((s) => s.uuid)

      const first = await listOk(m, { per_page: '3' })
      assert.deepEqual(idsOf(first), expected.slice(0, 3))
      assert.equal(first.meta.prev_cursor, null)
      assert.ok(first.meta.next_cursor)
      const second = await listOk(m, { per_page: '3', cursor: first.meta.next_cursor as string })
      assert.deepEqual(idsOf(second), expected.slice(3, 6))
      assert.ok(second.meta.prev_cursor)
      const third = await listOk(m, { per_page: '3', cursor: second.meta.next_cursor as string })
      assert.deepEqual(idsOf(third), expected.slice(6))
      assert.equal(third.meta.next_cursor, null)

      // Back again: the same pages.
      const backToSecond = await listOk(m, { per_page: '3', cursor: third.meta.prev_cursor as string })
      assert.deepEqual(idsOf(backToSecond), idsOf(second))
      const backToFirst = await listOk(m, { per_page: '3', cursor: backToSecond.meta.prev_cursor as string })
      assert.deepEqual(idsOf(backToFirst), idsOf(first))
      assert.equal(backToFirst.meta.prev_cursor, null)

      // With a filter, and per_page changing between pages.
      const paid = specs
        .filter((s) => s.event === 'transaction.paid')
        .sort(newestFirst)
        .map((s) => s.uuid)
      const p1 = await listOk(m, { type: 'transaction.paid', per_page: '2' })
      assert.deepEqual(idsOf(p1), paid.slice(0, 2))
      const p2 = await listOk(m, {
        type: 'transaction.paid',
        per_page: '5',
        cursor: p1.meta.next_cursor as string,
      })
      assert.deepEqual(idsOf(p2), paid.slice(2))
      assert.equal(p2.meta.next_cursor, null)

      // A cursor followed with other filters, or none at all, or one that is not ours: 422 on cursor.
      const cursor = p1.meta.next_cursor as string
      await assertRefusedOn((query) => list(m, query), 'cursor', [
        { per_page: '2', cursor },
        { type: 'transaction.failed', cursor },
        { type: 'transaction.paid', created_from: '2026-05-01', cursor },
        { type: 'transaction.paid', object_uuid: specs[0]?.aggregate_uuid as string, cursor },
        { cursor: 'bm90IGEgY3Vyc29y' },
      ])
      // The same filters written another way are the same filters.
      const reordered = await listOk(m, { type: 'transaction.paid,transaction.paid', per_page: '5', cursor })
      assert.deepEqual(idsOf(reordered), paid.slice(2))
    })

    it("another merchant's events and the other mode's are never visible", async () => {
      const m = await ctx.newMerchant('Isolated')
      const mine = await paidTx(m)
      const live = await paidTx(m, {}, 'live')
      const theirs = await paidTx(ctx.other)
      const idOf = async (merchant: TestMerchant, txUuid: string, mode: Mode = 'test') => {
        const page = await listOk(merchant, { object_uuid: txUuid }, mode)
        assert.equal(page.data.length, 1)
        return page.data[0]?.event_id as string
      }
      const mineId = await idOf(m, mine.uuid)
      const liveId = await idOf(m, live.uuid, 'live')
      const theirsId = await idOf(ctx.other, theirs.uuid)

      assert.deepEqual(idsOf(await listOk(m)), [mineId])
      assert.deepEqual(idsOf(await listOk(m, {}, 'live')), [liveId])
      assert.deepEqual((await listOk(m, { object_uuid: theirs.uuid })).data, [])
      assert.deepEqual((await listOk(m, { object_uuid: live.uuid })).data, [])

      assert.equal((await getEvent(m, mineId)).statusCode, 200)
      assert.equal((await getEvent(m, liveId, 'live')).statusCode, 200)
      for (const [id, mode] of [
        [theirsId, 'test'],
        [liveId, 'test'],
        [mineId, 'live'],
        [uuidFrom(random), 'test'],
        ['not-an-event', 'test'],
        [`${mineId}0`, 'test'],
      ] as const) {
        const res = await getEvent(m, id, mode)
        assert.equal(res.statusCode, 404, `${id} (${mode}): ${res.body}`)
        assert.equal(res.json().error.code, 'not_found')
      }
      const anonymous = await call(ctx, 'GET', '/integration/events', undefined, { auth: 'none' })
      assert.equal(anonymous.statusCode, 401, anonymous.body)
    })

    it('webhook_status: none, pending, succeeded and failed, from the deliveries', async () => {
      const m = await ctx.newMerchant('Statuses')
      const none = await paidTx(m)
      const succeeded = await paidTx(m, { callback_url: `${ok.url}/cb` })
      const failed = await paidTx(m, { callback_url: `${gone.url}/cb` })
      const pending = await paidTx(m, { callback_url: `${broken.url}/cb` })
      const statusOf = async (txUuid: string) =>
        (await listOk(m, { object_uuid: txUuid })).data[0]?.webhook_status

      assert.equal(await statusOf(none.uuid), 'none')
      await eventually(async () => (await statusOf(succeeded.uuid)) === 'succeeded')
      await eventually(async () => (await statusOf(failed.uuid)) === 'failed')
      // Attempted once and answered 500: waiting for its retry in an hour.
      await eventually(async () => broken.received.length > 0)
      await eventually(async () => {
        const row = await ctx.db
          .selectFrom('webhook_deliveries')
          .innerJoin('events', 'events.uuid', 'webhook_deliveries.event_id')
          .select(['webhook_deliveries.attempts', 'webhook_deliveries.status'])
          .where('events.aggregate_uuid', '=', pending.uuid)
          .executeTakeFirstOrThrow()
        return row.attempts === 1
      })
      assert.equal(await statusOf(pending.uuid), 'pending')
      assert.deepEqual(
        (await listOk(m)).data.map((e) => [e.transaction?.uuid, e.webhook_status]),
        [
          [pending.uuid, 'pending'],
          [failed.uuid, 'failed'],
          [succeeded.uuid, 'succeeded'],
          [none.uuid, 'none'],
        ],
      )
    })

    it('housekeeping deletes events past EVENT_RETENTION_DAYS with their deliveries; newer ones stay', async () => {
      assert.equal(ctx.config.eventRetentionDays, 30)
      const m = await ctx.newMerchant('Retention')
      await configureWebhook(m, `${ok.url}/hooks`)
      const old = await paidTx(m)
      const recent = await paidTx(m)
      const fresh = await paidTx(m)
      const stuck = await paidTx(m, { callback_url: `${broken.url}/cb` })
      const eventOf = (txUuid: string) =>
        ctx.db.selectFrom('events').select('uuid').where('aggregate_uuid', '=', txUuid).executeTakeFirst()
      const deliveriesOf = (eventId: string) =>
        ctx.db.selectFrom('webhook_deliveries').select('uuid').where('event_id', '=', eventId).execute()
      const attemptsOf = (deliveryUuid: string) =>
        ctx.db
          .selectFrom('webhook_attempts')
          .select('uuid')
          .where('delivery_uuid', '=', deliveryUuid)
          .execute()

      const oldId = (await eventOf(old.uuid))?.uuid as string
      const stuckId = (await eventOf(stuck.uuid))?.uuid as string
      await eventually(async () => {
        const page = await listOk(m)
        const byTx = new Map(page.data.map((e) => [e.transaction?.uuid, e.webhook_status]))
        return (
          [old, recent, fresh].every((t) => byTx.get(t.uuid) === 'succeeded') &&
          (await attemptsOf((await deliveriesOf(stuckId))[0]?.uuid as string)).length === 1
        )
      })
      const [oldDelivery] = await deliveriesOf(oldId)
      assert.ok(oldDelivery)
      assert.equal((await attemptsOf(oldDelivery.uuid)).length, 1)

      const age = (txUuid: string, days: number) =>
        ctx.db
          .updateTable('events')
          .set({ occurred_at: new Date(Date.now() - days * DAY_MS) })
          .where('aggregate_uuid', '=', txUuid)
          .execute()
      await age(old.uuid, 31)
      await age(stuck.uuid, 31)
      await age(recent.uuid, 29)

      await runMaintenance(ctx.db, ctx.app.log, ctx.services)

      assert.equal(await eventOf(old.uuid), undefined)
      assert.equal((await getEvent(m, oldId)).statusCode, 404)
      assert.deepEqual(await deliveriesOf(oldId), [])
      assert.deepEqual(await attemptsOf(oldDelivery.uuid), [])
      const left = await listOk(m)
      assert.deepEqual(
        left.data.map((e) => [e.transaction?.uuid, e.webhook_status]),
        [
          [fresh.uuid, 'succeeded'],
          [recent.uuid, 'succeeded'],
          [stuck.uuid, 'pending'],
        ],
      )

      // Once its delivery is final, the old event goes too.
      await ctx.db
        .updateTable('webhook_deliveries')
        .set({ status: 'failed', next_attempt_at: null })
        .where('event_id', '=', stuckId)
        .execute()
      await runMaintenance(ctx.db, ctx.app.log, ctx.services)
      assert.equal(await eventOf(stuck.uuid), undefined)
      assert.deepEqual(await deliveriesOf(stuckId), [])
      assert.deepEqual(
        idsOf(await listOk(m)),
        idsOf(left).filter((id) => id !== stuckId),
      )

      // The retention is counted from the time given: 20 days on, the 29-day-old event is past it.
      assert.equal(await ctx.services.webhooks.purgeEvents(new Date(Date.now() + 20 * DAY_MS)), 1)
      assert.equal(await eventOf(recent.uuid), undefined)
      assert.ok(await eventOf(fresh.uuid))
    })

    it('migration 0007 gives the refund events recorded before it their refund', async () => {
      const m = await ctx.newMerchant('Backfill')
      const { tx, partial, rest } = await lifecycle(m)
      const refundOf = async () =>
        (
          await ctx.db
            .selectFrom('events')
            .select(['event', 'refund_uuid'])
            .where('aggregate_uuid', '=', tx.uuid)
            .orderBy('aggregate_version')
            .execute()
        ).map((row) => [row.event, row.refund_uuid])
      const expected = [
        ['transaction.paid', null],
        ['transaction.partially_refunded', partial.uuid],
        ['transaction.refunded', rest.uuid],
      ]
      assert.deepEqual(await refundOf(), expected)
      await eventsMigration.down(ctx.db as never)
      await eventsMigration.up(ctx.db as never)
      assert.deepEqual(await refundOf(), expected)
      assert.deepEqual(idsOf(await listOk(m, { object_uuid: rest.uuid })).length, 1)
    })
  })
}

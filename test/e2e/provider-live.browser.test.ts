import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type { Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import type { EmulatorFaults } from '../../src/emulator/server.ts'
import { sign } from '../../src/http/auth.ts'
import { formatMinor } from '../../src/lib/money.ts'
import { callbackLog } from '../api/providers/handover-helpers.ts'
import { emulatorAdmin } from '../helpers/acquirer-program.ts'
import { columnOf } from '../helpers/columns.ts'
import { eventually, postgresUrlOf, workerEnv } from '../helpers/harness.ts'
import { suiteLiveGateway } from '../helpers/live-gateway.ts'
import { checkPage, openPage, screenshot, withPage } from '../helpers/pages.ts'
import { newPayout } from '../helpers/payouts.ts'
import { onPostgres } from '../helpers/postgres.ts'
import { type Reply, request } from '../helpers/processes.ts'
import { spawnProgram } from '../helpers/program.ts'
import { suiteContext } from '../helpers/suite.ts'

/**
 * Live money with every party a real program: the gateway's API (`serve --role api`), its worker (`serve --role
 * worker`: webhook deliveries, status sync, refund and payout checks), the acquirer (`provider-emulator`) and
 * Chromium. A payment paid on the acquirer's page is refunded and paid out there, each step decided by the
 * acquirer's signed callback; then the acquirer's callbacks go wrong on purpose (dropped, sent six times, out of
 * order, badly signed, for another amount) and the gateway still ends each payment right. Screenshots in
 * test-artifacts/screenshots/provider-live-*.png.
 */

// PostgreSQL, as in production: the programs and this suite share the database.
onPostgres()

const WIDTHS = [390, 1280] as const
const API_KEY = 'sk_live_acquirer_live_e2e'
/** Status sync asks the acquirer 1 s after the hand-over, 2 s after that, then every 5 s. */
const SYNC_SCHEDULE_S = [1, 2, 5]
/** How often the worker's status sync looks for due asks. */
const JOB_TICK_MS = 1000
/** One step through the programs takes a few seconds; a busy machine gets room. */
const STEP_MS = 30_000
/** A payment of 1000.00 USD: USDT settles one to one (the test rates), so its amounts read plainly. */
const AMOUNT = 100_000

type Transaction = { uuid: string; status: string; payment_url: string; settlement_amount: number }
type Balance = { currency: string; total: number; pending: number; available: number; reserved: number }
type Sent = { type: string; reference: string; attempts: number[] }

describe('live money through the gateway, its worker, the acquirer emulator and Chromium', () => {
  const ctx = suiteContext('postgres')
  // The operator's side, on the same database: a live http-acquirer account at the emulator, the default
  // routes of live card payments and of USDT (TRC20) payouts to it. Both programs read the sync schedule: the
  // API sets a payment's first ask when it hands it over, the worker the next.
  const live = suiteLiveGateway(ctx, {
    apiKey: API_KEY,
    events: [
      'transaction.paid',
      'transaction.partially_refunded',
      'transaction.refunded',
      'payout.completed',
    ],
    worker: true,
    env: { PROVIDER_SYNC_SCHEDULE: SYNC_SCHEDULE_S.join(',') },
    acquirer: {
      payouts: [{ method: 'usdt_wallet', network: 'TRC20' }],
      args: ['--callback-retry-ms', '200,400'],
    },
  })
  const key = () => ctx.merchant.keys.live
  let sequence = 0
  const cspViolations: string[] = []
  const pageErrors: string[] = []

  // No settlement hold for the merchant, so that a payment's money can be paid out at once.
  before(() => ctx.services.merchants.updateMerchant(ctx.merchant.uuid, { settlementHoldSeconds: 0 }))

  /** A request that moves money: signed with the live key (X-Signature), under a fresh Idempotency-Key. */
  async function signed(path: string, body: unknown): Promise<Reply> {
    const idempotencyKey = `live-e2e-${++sequence}`
    const payload = JSON.stringify(body)
    const t = Math.floor(Date.now() / 1000)
    const v1 = sign(key().secret, t, 'POST', path, idempotencyKey, payload)
    const res = await fetch(`${live.origin}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
        'x-signature': `key_id=${key().key_id},t=${t},v1=${v1}`,
      },
      body: payload,
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) }
  }

  const get = async (path: string) => {
    const res = await request(live.origin, 'GET', path, { secret: key().secret })
    assert.equal(res.status, 200, res.text)
    return res.json()
  }
  const transaction = (uuid: string): Promise<Transaction> => get(`/integration/transactions/${uuid}`)

  /** The merchant's live balance in USDT, their settlement currency. */
  const balance = async (): Promise<Balance> => {
    const usdt = ((await get('/integration/balances')).data as Balance[]).find((b) => b.currency === 'USDT')
    assert.ok(usdt, 'a USDT balance')
    return usdt
  }

  /** A live 1000.00 USD card payment, handed to the acquirer: the transaction and the acquirer's reference. */
  async function livePayment(name: string) {
    const created = await request(live.origin, 'POST', '/integration/transactions', {
      secret: key().secret,
      body: {
        amount: AMOUNT,
        currency: 'USD',
        payment_method: 'card',
        external_id: `live-e2e-${name}`,
        description: `Order #${8000 + ++sequence}`,
      },
    })
    assert.equal(created.status, 201, created.text)
    const tx = created.json() as Transaction
    const handover = await ctx.services.providers.handovers.find(ctx.db, tx.uuid)
    assert.equal(handover?.state, 'handed_over', live.gateway.output())
    return { tx, reference: handover?.provider_reference as string }
  }

  /** A call to the emulator's admin API, as its back office (or a test) makes it. */
  const admin = (method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) =>
    emulatorAdmin(live.acquirer.base, method, path, body)
  /** What the acquirer is told to do wrong, until `work` ends. */
  async function withFaults<T>(faults: Partial<EmulatorFaults>, work: () => Promise<T>): Promise<T> {
    await admin('PUT', '/faults', faults)
    try {
      return await work()
    } finally {
      await admin('PUT', '/faults', {})
    }
  }
  /** The callbacks the emulator sent about `reference`, once `count` of them have ended (2xx or given up). */
  const sentAbout = (reference: string, count: number) =>
    eventually(async () => {
      const sent = ((await admin('GET', '/callbacks')) as Sent[]).filter((c) => c.reference === reference)
      return sent.length >= count && sent.every((c) => c.attempts.length > 0) ? sent : null
    }, STEP_MS)

  /** The outcomes applied to a payment, each with the callback id it came from (null: a status call). */
  const outcomes = (uuid: string) =>
    ctx.db
      .selectFrom('provider_callbacks')
      .select(['to_status', 'provider_reference'])
      .where('transaction_uuid', '=', uuid)
      .orderBy('received_at')
      .execute()
  const ledgerEntries = (uuid: string) =>
    ctx.db
      .selectFrom('journal_entries')
      .select('kind')
      .where('reference_uuid', '=', uuid)
      .orderBy('created_at')
      .execute()
  const paidAt = async (uuid: string) => (await columnOf(ctx.db, 'transactions', uuid, 'paid_at')) as Date

  /** The refund or payout `uuid` went to the acquirer's account: the reference the acquirer gave it. */
  async function acquirerReference(table: 'refunds' | 'payouts', uuid: string, prefix: RegExp) {
    assert.equal(await columnOf(ctx.db, table, uuid, 'account_uuid'), live.acquirer.account.uuid)
    const reference = (await columnOf(ctx.db, table, uuid, 'provider_reference')) as string
    assert.match(reference, prefix)
    return reference
  }

  /**
   * The acquirer's back office decides the refund or payout `reference` (`status`), and the gateway applies its
   * callback once: resolves with the merchant's `path` once it reads `status`.
   */
  async function decidedByCallback(
    kind: 'refund' | 'payout',
    reference: string,
    status: 'succeeded' | 'completed',
    path: string,
  ) {
    await admin('POST', `/${kind}s/${reference}/decide`, { status })
    const decided = await eventually(async () => {
      const got = await get(path)
      return got.status === status && got
    }, STEP_MS)
    assert.deepEqual(
      (await callbackLog(ctx, reference)).map((c) => [c.verification, c.result, c.event_type]),
      [['verified', 'applied', `${kind}.${status}`]],
    )
    return decided
  }

  /** The merchant's webhook `event` about the resource `uuid`, verified with the live webhook secret. */
  async function webhookOf(event: string, uuid: string) {
    const matching = () =>
      live.receiver.received.filter((r) => {
        const body = JSON.parse(r.body)
        return body.event === event && (body.transaction ?? body.payout)?.uuid === uuid
      })
    const [delivered] = await eventually(async () => matching().length > 0 && matching(), STEP_MS)
    assert.ok(delivered)
    const verified = new Webhook(live.webhookSecret).verify(
      delivered.body,
      delivered.headers as Record<string, string>,
    ) as { event: string; transaction?: Transaction; payout?: { uuid: string; status: string } }
    return { body: verified, count: () => matching().length }
  }

  /** Screenshots of `page` at the phone's width and the desktop's, as `provider-live-<name>-<width>.png`. */
  async function shots(page: Page, name: string) {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 })
      await screenshot(page, `provider-live-${name}-${width}`)
    }
  }

  /**
   * The customer's journey in Chromium: the hosted page sends them to the acquirer's page, they pass its
   * challenge and pay, and are sent back; resolves once they see the payment paid, with the time they were back.
   */
  async function payInChromium(tx: Transaction, reference: string, name: string): Promise<number> {
    return withPage(openPage(live.browser, WIDTHS[1], { cspViolations, pageErrors }), async (page) => {
      const token = new URL(tx.payment_url).pathname.split('/')[2]
      await page.goto(tx.payment_url)
      assert.match(page.url(), new RegExp(`^${live.acquirer.base}/pay/${reference}$`))
      await page.getByRole('heading', { name: 'Emulated acquirer' }).waitFor()
      await page.getByLabel(/Confirmation code/).fill('1234')
      await shots(page, `${name}-acquirer`)
      await page.getByRole('button', { name: 'Pay' }).click()
      await page.waitForURL(`${live.origin}/pay/${token}?returned=1`)
      // The acquirer decided before it sent the customer back.
      const decided = Date.now()
      await page.locator('#status.status-paid').waitFor({ timeout: STEP_MS })
      assert.equal(await page.locator('#status').textContent(), 'Payment received. Thank you!')
      assert.equal(await page.locator('.amount').textContent(), '$1,000.00')
      for (const width of WIDTHS) {
        await page.setViewportSize({ width, height: 900 })
        await checkPage(
          page,
          `the returned page at ${width} px`,
          width,
          `provider-live-${name}-paid-${width}`,
        )
      }
      return decided
    })
  }

  it('a payment paid in Chromium is refunded and paid out at the acquirer, each step decided by its callback', {
    timeout: 3 * STEP_MS,
  }, async () => {
    const start = await balance()
    const { tx, reference } = await livePayment('journey')
    await payInChromium(tx, reference, 'journey')

    // Paid by the acquirer's signed callback, applied once by the gateway program.
    const paid = await transaction(tx.uuid)
    assert.equal(paid.status, 'paid')
    const [first, ...again] = await callbackLog(ctx, reference)
    assert.deepEqual(
      { ...first, detail: undefined },
      { verification: 'verified', result: 'applied', event_type: 'payment.succeeded', detail: undefined },
    )
    assert.ok(
      again.every((c) => c.result === 'duplicate'),
      JSON.stringify(again),
    )
    const paidHook = await webhookOf('transaction.paid', tx.uuid)
    assert.equal(paidHook.body.transaction?.status, 'paid')
    assert.ok(paid.settlement_amount > 0)
    // No hold: the payment's money is available at once.
    const afterPayment = await balance()
    assert.equal(afterPayment.total - start.total, paid.settlement_amount)
    assert.equal(afterPayment.available - start.available, paid.settlement_amount)

    // A refund of a quarter, left pending at the acquirer until its back office decides it.
    const refund = await withFaults({ refunds: 'pending' }, () =>
      signed('/integration/refunds', { transaction_uuid: tx.uuid, amount_minor: AMOUNT / 4 }),
    )
    assert.equal(refund.status, 201, refund.text)
    assert.equal(refund.json().status, 'pending')
    const refundReference = await acquirerReference('refunds', refund.json().uuid, /^re_/)
    const debit = await columnOf(ctx.db, 'refunds', refund.json().uuid, 'settlement_debit')
    // The refund's debit is taken from the available balance while it is pending.
    const refunding = await balance()
    assert.equal(afterPayment.available - refunding.available, debit)
    assert.ok(debit > 0)
    const refunded = await decidedByCallback(
      'refund',
      refundReference,
      'succeeded',
      `/integration/refunds/${refund.json().uuid}`,
    )
    assert.equal(refunded.amount_minor, AMOUNT / 4)
    assert.equal((await transaction(tx.uuid)).status, 'partially_refunded')
    const refundHook = await webhookOf('transaction.partially_refunded', tx.uuid)
    assert.equal(refundHook.body.transaction?.status, 'partially_refunded')
    const afterRefund = await balance()
    assert.equal(afterRefund.available, refunding.available)
    assert.equal(afterPayment.total - afterRefund.total, debit)

    // A payout of 100.00 USD to a TRC20 wallet, by the payout route to the acquirer.
    const payout = await signed('/integration/payouts', newPayout())
    assert.equal(payout.status, 201, payout.text)
    assert.equal(payout.json().status, 'processing')
    const total = payout.json().payout_usdt_amount_micro as number
    assert.ok(total > 0)
    const payoutReference = await acquirerReference('payouts', payout.json().uuid, /^po_/)
    const reserved = await balance()
    assert.equal(afterRefund.available - reserved.available, total)
    assert.equal(reserved.reserved - afterRefund.reserved, total)
    await decidedByCallback(
      'payout',
      payoutReference,
      'completed',
      `/integration/payouts/${payout.json().uuid}`,
    )
    const payoutHook = await webhookOf('payout.completed', payout.json().uuid)
    assert.equal(payoutHook.body.payout?.status, 'completed')
    // The reservation left: the total is down by the payout, fee included; nothing else moved.
    const end = await balance()
    assert.equal(end.reserved, afterRefund.reserved)
    assert.equal(end.available, reserved.available)
    assert.equal(afterRefund.total - end.total, total)
    assert.equal(end.total - start.total, paid.settlement_amount - debit - total)
  })

  it('a dropped callback: status sync finds the payment paid at its next ask', { timeout: 2 * STEP_MS }, () =>
    withFaults({ drop_callbacks: true }, async () => {
      const { tx, reference } = await livePayment('dropped')
      const decided = await payInChromium(tx, reference, 'dropped')
      // Nothing came from the acquirer: the worker asked it, within one interval of its schedule.
      assert.deepEqual(await callbackLog(ctx, reference), [])
      assert.deepEqual(await sentAbout(reference, 0), [])
      assert.deepEqual(await outcomes(tx.uuid), [{ to_status: 'paid', provider_reference: null }])
      const lag = (await paidAt(tx.uuid)).getTime() - decided
      assert.ok(
        lag <= Math.max(...SYNC_SCHEDULE_S) * 1000 + 2 * JOB_TICK_MS,
        `paid ${lag} ms after it was decided`,
      )
      assert.equal((await webhookOf('transaction.paid', tx.uuid)).body.transaction?.status, 'paid')
    }),
  )

  it('a callback sent six times: one paid event, one webhook, one credit', { timeout: STEP_MS }, () =>
    withFaults({ duplicate_callbacks: 5 }, async () => {
      const before = await balance()
      const { tx, reference } = await livePayment('duplicated')
      await admin('POST', `/payments/${reference}/decide`, { status: 'succeeded' })
      const sent = await sentAbout(reference, 6)
      assert.equal(sent.length, 6)
      assert.ok(
        sent.every((c) => c.attempts.at(-1) === 200),
        JSON.stringify(sent),
      )
      const log = await callbackLog(ctx, reference)
      assert.deepEqual(
        log.map((c) => c.result),
        ['applied', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate'],
      )
      const paid = await transaction(tx.uuid)
      assert.equal(paid.status, 'paid')
      const events = await ctx.db
        .selectFrom('events')
        .select(['uuid', 'event'])
        .where('aggregate_uuid', '=', tx.uuid)
        .execute()
      assert.deepEqual(
        events.map((e) => e.event),
        ['transaction.paid'],
      )
      const deliveries = await ctx.db
        .selectFrom('webhook_deliveries')
        .select('uuid')
        .where('event_id', '=', (events[0] as { uuid: string }).uuid)
        .execute()
      assert.equal(deliveries.length, 1)
      const hook = await webhookOf('transaction.paid', tx.uuid)
      assert.equal(hook.count(), 1)
      assert.deepEqual((await ledgerEntries(tx.uuid)).map((e) => e.kind).sort(), [
        'payment_received',
        'payment_settled',
      ])
      assert.equal((await balance()).total - before.total, paid.settlement_amount)
    }),
  )

  it(
    "a payment's callback that comes after its refund's changes nothing: the payment stays refunded",
    {
      timeout: STEP_MS,
    },
    () =>
      // The acquirer holds its callbacks until two wait, then sends them newest first.
      withFaults({ reorder_callbacks: 2, refunds: 'pending' }, async () => {
        const { tx, reference } = await livePayment('reordered')
        await admin('POST', `/payments/${reference}/decide`, { status: 'succeeded' })
        // Its callback held back, the payment is found paid by status sync.
        await eventually(async () => (await transaction(tx.uuid)).status === 'paid', STEP_MS)
        assert.deepEqual(await callbackLog(ctx, reference), [])
        assert.deepEqual(await outcomes(tx.uuid), [{ to_status: 'paid', provider_reference: null }])
        const refund = await signed('/integration/refunds', {
          transaction_uuid: tx.uuid,
          amount_minor: AMOUNT,
        })
        assert.equal(refund.status, 201, refund.text)
        const refundReference = await acquirerReference('refunds', refund.json().uuid, /^re_/)
        await admin('POST', `/refunds/${refundReference}/decide`, { status: 'succeeded' })

        const sent = await eventually(async () => {
          const all = (await admin('GET', '/callbacks')) as Sent[]
          const ours = all.filter((c) => c.reference === reference || c.reference === refundReference)
          return ours.length === 2 && ours.every((c) => c.attempts.length > 0) && ours
        }, STEP_MS)
        assert.deepEqual(
          sent.map((c) => c.type),
          ['refund.succeeded', 'payment.succeeded'],
        )
        assert.deepEqual(
          (await callbackLog(ctx, refundReference)).map((c) => c.result),
          ['applied'],
        )
        // The refunded payment was paid on its way there: the late word is kept, and changes nothing.
        const late = await callbackLog(ctx, reference)
        assert.deepEqual(
          late.map((c) => [c.verification, c.result]),
          [['verified', 'duplicate']],
        )
        assert.match(late[0]?.detail ?? '', /nothing changed/)
        assert.equal((await transaction(tx.uuid)).status, 'refunded')
        assert.equal((await get(`/integration/refunds/${refund.json().uuid}`)).status, 'succeeded')
        assert.deepEqual((await ledgerEntries(tx.uuid)).map((e) => e.kind).sort(), [
          'payment_received',
          'payment_settled',
        ])
      }),
  )

  it(
    'a badly signed callback changes nothing, but has the status asked at once, and that makes it paid',
    {
      timeout: STEP_MS,
    },
    () =>
      withFaults({ wrong_signature: true }, async () => {
        const { tx, reference } = await livePayment('badly-signed')
        // Once status sync has asked twice, its next ask is the schedule's longest interval away.
        const scheduled = await eventually(async () => {
          const handover = await ctx.db
            .selectFrom('payment_handovers')
            .select(['sync_count', 'sync_due_at'])
            .where('transaction_uuid', '=', tx.uuid)
            .executeTakeFirstOrThrow()
          return handover.sync_count >= 2 && (handover.sync_due_at as Date)
        }, STEP_MS)
        assert.equal((await transaction(tx.uuid)).status, 'pending')
        await admin('POST', `/payments/${reference}/decide`, { status: 'succeeded' })
        await eventually(async () => (await transaction(tx.uuid)).status === 'paid', STEP_MS)
        assert.ok((await paidAt(tx.uuid)) < scheduled, 'paid before the ask the schedule had set')
        const [sent] = await sentAbout(reference, 1)
        assert.deepEqual(sent?.attempts, [401, 401, 401])
        const log = await callbackLog(ctx, reference)
        assert.equal(log.length, 3)
        assert.ok(
          log.every((c) => c.verification === 'mismatch' && c.result === 'refused'),
          JSON.stringify(log),
        )
        assert.match(log[0]?.detail ?? '', /the payment's status is asked from the provider instead/)
        assert.deepEqual(await outcomes(tx.uuid), [{ to_status: 'paid', provider_reference: null }])
      }),
  )

  it('a callback for another amount puts the payment under review, not paid', { timeout: STEP_MS }, () =>
    withFaults({ amount_delta: -100 }, async () => {
      const before = await balance()
      const { tx, reference } = await livePayment('other-amount')
      await admin('POST', `/payments/${reference}/decide`, { status: 'succeeded' })
      const [logged] = await eventually(async () => {
        const log = await callbackLog(ctx, reference)
        return log.length > 0 && log
      }, STEP_MS)
      assert.deepEqual([logged?.verification, logged?.result], ['verified', 'review'])
      assert.equal((await transaction(tx.uuid)).status, 'pending')

      // The operator's command lists it, with what the acquirer reported.
      const listed = spawnProgram(['payments', 'reviews', '--open'], workerEnv(await postgresUrlOf(ctx)))
      assert.equal(await listed.exited, 0, listed.output())
      const line = listed
        .output()
        .split('\n')
        .find((l) => l.startsWith(tx.uuid))
      assert.ok(line, listed.output())
      assert.match(line, / open {2}live /)
      assert.ok(line.includes(`payment pending ${formatMinor(AMOUNT, 'USD')}`), line)
      assert.ok(line.includes(`reported ${formatMinor(AMOUNT - 100, 'USD')} by acquirer`), line)

      assert.deepEqual(await ledgerEntries(tx.uuid), [])
      assert.equal((await balance()).total, before.total)
      // Nothing to tell the merchant yet: no event waits in the outbox.
      const events = await ctx.db
        .selectFrom('events')
        .select('event')
        .where('aggregate_uuid', '=', tx.uuid)
        .execute()
      assert.deepEqual(events, [])
    }),
  )

  it('the pages raised no error and broke no Content Security Policy', () => {
    assert.deepEqual(pageErrors, [])
    assert.deepEqual(cspViolations, [])
  })
})

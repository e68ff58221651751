import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { before, describe, it } from 'node:test'
import { dashboard, type Session, signedIn } from '../../helpers/dashboard.ts'
import { backends, call, extId, paidTransaction, type TestMerchant } from '../../helpers/harness.ts'
import { newPayout } from '../../helpers/payouts.ts'
import { suiteContext } from '../../helpers/suite.ts'

interface Result {
  kind: string
  id: string
  matched: string
  reference: string
  amount: number | null
  currency: string | null
  status: string | null
  created_at: string
  path: string
}

for (const backend of backends()) {
  describe(`the dashboard's search (${backend})`, () => {
    const ctx = suiteContext(backend)
    let viewer: Session
    const seeded = {
      payment: { uuid: '', external_id: '' },
      yen: { uuid: '' },
      refund: { uuid: '' },
      payout: { uuid: '', external_id: '' },
      event: { id: '', event: '' },
      theirs: { uuid: '', external_id: '' },
      live: { uuid: '', external_id: '' },
    }

    const search = async (q: string, extra = '', mode: 'test' | 'live' = 'test') => {
      const res = await dashboard(ctx, 'GET', `/dashboard/api/search?q=${encodeURIComponent(q)}${extra}`, {
        mode,
        cookie: viewer.cookie,
      })
      assert.equal(res.statusCode, 200, `${q}: ${res.body}`)
      return res.json<{ data: Result[]; truncated: boolean }>()
    }
    const found = async (q: string) => (await search(q)).data.map((r) => [r.kind, r.id, r.matched])

    before(async () => {
      viewer = await signedIn(ctx, 'viewer')
      const as = { merchant: ctx.merchant as TestMerchant }
      const payment = await paidTransaction(ctx, {
        amount: 123456,
        currency: 'USD',
        metadata: { customer_email: 'Buyer@Example.com' },
      })
      seeded.payment = payment
      seeded.yen = await paidTransaction(ctx, { amount: 4321, currency: 'JPY' })
      const refunded = await call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: payment.uuid, amount_minor: 2345 },
        {
          as,
          auth: 'signature',
          idempotencyKey: randomUUID(),
        },
      )
      assert.equal(refunded.statusCode, 201, refunded.body)
      seeded.refund = refunded.json()
      await ctx.db
        .updateTable('refunds')
        .set({ provider_reference: 're_acq_555' })
        .where('uuid', '=', seeded.refund.uuid)
        .execute()
      const payout = await call(
        ctx,
        'POST',
        '/integration/payouts',
        newPayout({
          amount: 777,
          method: 'card',
          destination: { card_number: '4242424242424242', holder_name: 'JANE DOE' },
        }),
        { as, auth: 'signature', idempotencyKey: randomUUID() },
      )
      assert.equal(payout.statusCode, 201, payout.body)
      seeded.payout = payout.json()
      await ctx.db
        .updateTable('payouts')
        .set({ transaction_hash: '0xABCDEF0123' })
        .where('uuid', '=', seeded.payout.uuid)
        .execute()
      // A provider's reference of the payment, as a connector account's hand-over keeps it.
      const at = new Date()
      const account = randomUUID()
      await ctx.db
        .insertInto('connector_accounts')
        .values({
          uuid: account,
          name: `search-${account.slice(0, 8)}`,
          kind: 'http-acquirer',
          mode: 'test',
          status: 'enabled',
          settings: '{}',
          secrets_sealed: null,
          created_at: at,
          updated_at: at,
        } as never)
        .execute()
      await ctx.db
        .insertInto('payment_handovers')
        .values({
          transaction_uuid: seeded.yen.uuid,
          account_uuid: account,
          state: 'handed_over',
          provider_reference: 'acq_pay_77',
          redirect_url: null,
          sync_due_at: null,
          created_at: at,
          updated_at: at,
        })
        .execute()
      const events = await call(ctx, 'GET', `/integration/events?object_uuid=${payment.uuid}`, undefined, {
        as,
      })
      assert.equal(events.statusCode, 200, events.body)
      seeded.event = { id: events.json().data[0].event_id, event: events.json().data[0].event }
      assert.ok(seeded.event.id)
      // Never found: another merchant's payment, and this merchant's live one.
      seeded.theirs = await paidTransaction(ctx, { amount: 123456, currency: 'USD' }, { merchant: ctx.other })
      await ctx.services.merchants.updateMerchant(ctx.merchant.uuid, { settlementHoldSeconds: 0 })
      const live = await call(
        ctx,
        'POST',
        '/integration/transactions',
        { amount: 123456, currency: 'USD', payment_method: 'card', external_id: extId('live') },
        { as: { ...as, mode: 'live' } },
      )
      assert.equal(live.statusCode, 201, live.body)
      seeded.live = live.json()
    })

    it('finds each kind by its ids: ours, the external one, a provider’s reference, a chain hash', async () => {
      const { payment, yen, refund, payout, event } = seeded
      assert.deepEqual(await found(payment.uuid), [['payment', payment.uuid, 'id']])
      assert.deepEqual(await found(payment.uuid.toUpperCase()), [['payment', payment.uuid, 'id']])
      assert.deepEqual(await found(` ${payment.external_id} `), [['payment', payment.uuid, 'external_id']])
      assert.deepEqual(await found(refund.uuid), [['refund', refund.uuid, 'id']])
      assert.deepEqual(await found('re_acq_555'), [['refund', refund.uuid, 'provider_reference']])
      assert.deepEqual(await found('acq_pay_77'), [['payment', yen.uuid, 'provider_reference']])
      assert.deepEqual(await found(payout.uuid), [['payout', payout.uuid, 'id']])
      assert.deepEqual(await found(payout.external_id), [['payout', payout.uuid, 'external_id']])
      assert.deepEqual(await found('0xabcdef0123'), [['payout', payout.uuid, 'provider_reference']])
      assert.deepEqual(await found(event.id), [['event', event.id, 'id']])
    })

    it('labels each result and names the page that shows it', async () => {
      const { payment, refund, payout, event } = seeded
      const [paymentResult] = (await search(payment.uuid)).data
      assert.deepEqual(paymentResult, {
        kind: 'payment',
        id: payment.uuid,
        matched: 'id',
        reference: payment.external_id,
        amount: 123456,
        currency: 'USD',
        status: 'partially_refunded',
        created_at: paymentResult?.created_at,
        path: `/payments/${payment.uuid}`,
      })
      const [refundResult] = (await search(refund.uuid)).data
      assert.deepEqual(
        [
          refundResult?.reference,
          refundResult?.amount,
          refundResult?.currency,
          refundResult?.status,
          refundResult?.path,
        ],
        [payment.external_id, 2345, 'USD', 'succeeded', `/payments/${payment.uuid}`],
      )
      const [payoutResult] = (await search(payout.uuid)).data
      assert.deepEqual(
        [payoutResult?.reference, payoutResult?.amount, payoutResult?.currency, payoutResult?.path],
        [payout.external_id, 777, 'USD', `/payouts/${payout.uuid}`],
      )
      const [eventResult] = (await search(event.id)).data
      assert.deepEqual(
        [eventResult?.reference, eventResult?.amount, eventResult?.status, eventResult?.path],
        [event.event, null, null, `/developers/events?object_uuid=${payment.uuid}`],
      )
    })

    it('finds by an amount in the object’s own currency, an e-mail of the metadata, a card’s last four', async () => {
      const { payment, yen, refund, payout } = seeded
      assert.deepEqual(await found('1234.56'), [['payment', payment.uuid, 'amount']])
      // 4321 is ¥4321, or 43.21 of a currency of two decimals: only the yen payment has it.
      assert.deepEqual(await found('4321'), [['payment', yen.uuid, 'amount']])
      assert.deepEqual(await found('43.21'), [])
      assert.deepEqual(await found('23.45'), [['refund', refund.uuid, 'amount']])
      assert.deepEqual(await found('7.77'), [['payout', payout.uuid, 'amount']])
      assert.deepEqual(await found('buyer@example.COM'), [['payment', payment.uuid, 'email']])
      assert.deepEqual(await found('4242'), [['payout', payout.uuid, 'card_last4']])
    })

    it('finds nothing of another merchant or mode, and nothing for a miss', async () => {
      const { theirs, live } = seeded
      for (const q of [
        theirs.uuid,
        theirs.external_id,
        live.uuid,
        live.external_id,
        'nothing-like-it',
        '99999.99',
      ])
        assert.deepEqual(await search(q), { data: [], truncated: false }, q)
      assert.deepEqual(
        (await search(live.external_id, '', 'live')).data.map((r) => r.id),
        [live.uuid],
      )
    })

    it('answers at most the limit, ids first, then newest first, and says when there was more', async () => {
      for (let i = 0; i < 3; i++) await paidTransaction(ctx, { amount: 55555, currency: 'EUR' })
      const all = await search('555.55')
      assert.equal(all.data.length, 3)
      assert.equal(all.truncated, false)
      const times = all.data.map((r) => r.created_at)
      assert.deepEqual(times, [...times].sort().reverse())
      const two = await search('555.55', '&limit=2')
      assert.deepEqual(two.data, all.data.slice(0, 2))
      assert.equal(two.truncated, true)
    })

    it('refuses bad input with the error envelope, and a caller without a session or mode', async () => {
      for (const query of [
        'q=',
        'q=%20%20',
        `q=${'x'.repeat(201)}`,
        'q=a&limit=0',
        'q=a&limit=21',
        'q=a&other=1',
        '',
      ]) {
        const res = await dashboard(ctx, 'GET', `/dashboard/api/search?${query}`, {
          mode: 'test',
          cookie: viewer.cookie,
        })
        assert.equal(res.statusCode, 422, `${query}: ${res.body}`)
        assert.equal(res.json().error.code, 'validation_failed')
      }
      const noMode = await dashboard(ctx, 'GET', '/dashboard/api/search?q=a', { cookie: viewer.cookie })
      assert.equal(noMode.statusCode, 401, noMode.body)
      const noSession = await dashboard(ctx, 'GET', '/dashboard/api/search?q=a', { mode: 'test' })
      assert.equal(noSession.statusCode, 401, noSession.body)
      // An API key is no page: the search is the dashboard's.
      const byKey = await call(ctx, 'GET', '/dashboard/api/search?q=a')
      assert.equal(byKey.statusCode, 404, byKey.body)
    })
  })
}

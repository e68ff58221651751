import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { afterEach, before, describe, it } from 'node:test'
import { newCallbackSecret, signCallback } from '../../../src/connectors/http-acquirer/signature.ts'
import type { Mode } from '../../../src/db/types.ts'
import { suiteAcquirer } from '../../helpers/acquirer.ts'
import { assertError } from '../../helpers/errors.ts'
import {
  backends,
  call,
  eventually,
  newTransaction,
  paidTransaction,
  type TestMerchant,
} from '../../helpers/harness.ts'
import { newPayout } from '../../helpers/payouts.ts'
import { suiteContext } from '../../helpers/suite.ts'

let keyCounter = 0
const idem = () => `account-${Date.now()}-${keyCounter++}`
/** Far enough ahead that every pending refund and open payout is due for its check. */
const later = () => new Date(Date.now() + 3_600_000)

// A live payment handed to an acquirer (the emulator) is refunded at that acquirer, and a live payout goes to the
// account its payout route names (docs/API.md, Refunds and Payouts); in test mode both stay with the simulator.
for (const backend of backends()) {
  describe(`refunds and payouts at a connector account (${backend})`, () => {
    const ctx = suiteContext(backend, { config: { appEnv: 'production' } })
    let gateway = ''
    before(async () => {
      await ctx.app.listen({ port: 0, host: '127.0.0.1' })
      gateway = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
    })
    const acquirer = suiteAcquirer(ctx, {
      gateway: () => gateway,
      payouts: [{ method: 'usdt_wallet', network: 'TRC20' }],
    })
    // A test that plays a fault at the acquirer leaves it behind: the next one starts with none.
    afterEach(() => acquirer.setFaults({}))

    /** A call to the emulator's API with the account's key, or to its admin API. */
    const emulator = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
      const res = await fetch(`${acquirer.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer sk_${acquirer.account.name}`,
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      assert.ok(res.ok, `${method} ${path}: ${res.status}`)
      return res.json()
    }
    const refundRow = (uuid: string) =>
      ctx.db
        .selectFrom('refunds')
        .select(['status', 'account_uuid', 'provider_reference', 'next_check_at'])
        .where('uuid', '=', uuid)
        .executeTakeFirstOrThrow()
    const payoutRow = (uuid: string) =>
      ctx.db
        .selectFrom('payouts')
        .select(['status', 'account_uuid', 'provider_reference'])
        .where('uuid', '=', uuid)
        .executeTakeFirstOrThrow()
    const available = async (merchant: TestMerchant, mode: Mode) => {
      const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: { merchant, mode } })
      return res.json().data.find((b: { currency: string }) => b.currency === 'USDT').available as number
    }
    const transaction = async (merchant: TestMerchant, uuid: string) =>
      (
        await call(ctx, 'GET', `/integration/transactions/${uuid}`, undefined, {
          as: { merchant, mode: 'live' },
        })
      ).json()

    /**
     * A merchant of its own (`name`) with a live 1000.00 USD card payment, handed to the emulator, paid there (its
     * callback says so), and its settlement made available: the merchant, the payment's uuid and the acquirer's
     * reference.
     */
    const livePaid = async (name: string) => {
      const merchant = await ctx.newMerchant(name)
      const created = await call(
        ctx,
        'POST',
        '/integration/transactions',
        newTransaction({ amount: 100000, currency: 'USD' }),
        { as: { merchant, mode: 'live' } },
      )
      assert.equal(created.statusCode, 201, created.body)
      const { uuid } = created.json()
      const handover = await ctx.services.providers.handovers.find(ctx.db, uuid)
      const reference = handover?.provider_reference as string
      assert.match(reference, /^pay_/)
      await emulator('POST', `/admin/payments/${reference}/decide`, { status: 'succeeded' })
      await eventually(async () => (await transaction(merchant, uuid)).status === 'paid')
      await ctx.services.transactions.settleDue(1000, new Date(Date.now() + 400 * 86_400_000))
      return { m: merchant, uuid, reference }
    }
    const refund = (merchant: TestMerchant, transactionUuid: string, amount: number, mode: Mode = 'live') =>
      call(
        ctx,
        'POST',
        '/integration/refunds',
        { transaction_uuid: transactionUuid, amount_minor: amount },
        { as: { merchant, mode }, auth: 'signature', idempotencyKey: idem() },
      )
    const payout = (merchant: TestMerchant, overrides: Record<string, unknown> = {}, mode: Mode = 'live') =>
      call(ctx, 'POST', '/integration/payouts', newPayout(overrides), {
        as: { merchant, mode },
        auth: 'signature',
        idempotencyKey: idem(),
      })
    /**
     * A callback about `reference`, signed with the account's secret as the acquirer signs it (or with another
     * secret), posted to the account's callback URL.
     */
    const callback = (type: string, reference: string, secret = acquirer.secret) => {
      const body = JSON.stringify({ id: `evt_${idem()}`, type, data: { reference } })
      return ctx.app.inject({
        method: 'POST',
        url: `/providers/${acquirer.account.uuid}/callbacks`,
        headers: {
          'content-type': 'application/json',
          ...signCallback([secret], `msg_${idem()}`, new Date(), body),
        },
        payload: body,
      })
    }

    it('a live refund goes to the account that has the payment, under its reference there, and succeeds', async () => {
      const { m, ...paid } = await livePaid('Account refunds')
      const before = await available(m, 'live')
      const res = await refund(m, paid.uuid, 5000)
      assert.equal(res.statusCode, 201, res.body)
      assert.deepEqual(
        [res.json().status, res.json().amount_minor, res.json().message],
        ['succeeded', 5000, 'Refund accepted by the provider.'],
      )
      const row = await refundRow(res.json().uuid)
      assert.equal(row.account_uuid, acquirer.account.uuid)
      assert.match(row.provider_reference as string, /^re_/)
      // The acquirer has it against the payment it took, once, for that amount.
      const there = await emulator('GET', `/v1/refunds/${row.provider_reference}`)
      assert.deepEqual(there, { reference: row.provider_reference, status: 'succeeded', amount: 5000 })
      assert.equal((await transaction(m, paid.uuid)).status, 'partially_refunded')
      assert.ok((await available(m, 'live')) < before)
    })

    it('a refund the acquirer leaves pending is asked about again there, and its signed callback settles it', async () => {
      const { m, ...paid } = await livePaid('Pending refunds')
      await acquirer.setFaults({ refunds: 'pending' })
      const res = await refund(m, paid.uuid, 2500)
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().status, 'pending')
      const first = await refundRow(res.json().uuid)
      assert.match(first.provider_reference as string, /^re_/)
      // The recheck asks the account for the refund's status: still pending there, so asked again later.
      assert.ok((await ctx.services.refunds.checkDue(100, later())) >= 1)
      const rechecked = await refundRow(res.json().uuid)
      assert.equal(rechecked.status, 'pending')
      assert.ok(
        (rechecked.next_check_at as Date).getTime() > (first.next_check_at as Date).getTime(),
        'the next check is pushed on',
      )
      const applied = await callback('refund.succeeded', first.provider_reference as string)
      assert.equal(applied.statusCode, 200, applied.body)
      assert.equal(applied.json().result, 'applied')
      assert.equal((await refundRow(res.json().uuid)).status, 'succeeded')
      assert.equal((await transaction(m, paid.uuid)).status, 'partially_refunded')
      const again = await callback('refund.failed', first.provider_reference as string)
      assert.equal(again.json().result, 'stale')
      assert.equal((await refundRow(res.json().uuid)).status, 'succeeded')
    })

    it('a callback about a refund or payout whose signature does not verify changes nothing, but has it asked about now', async () => {
      const { m, ...paid } = await livePaid('Hinted')
      const stranger = newCallbackSecret()
      ctx.secrets.push(stranger)
      await acquirer.setFaults({ refunds: 'pending', drop_callbacks: true })
      const refunded = await refund(m, paid.uuid, 1500)
      const refundRef = (await refundRow(refunded.json().uuid)).provider_reference as string
      const forged = await callback('refund.succeeded', refundRef, stranger)
      assertError(forged, 401, 'signature_invalid')
      const hinted = await refundRow(refunded.json().uuid)
      assert.equal(hinted.status, 'pending')
      assert.ok((hinted.next_check_at as Date).getTime() <= Date.now(), 'the check is due now')

      const paidOut = await payout(m)
      const { provider_reference: payoutRef } = await payoutRow(paidOut.json().uuid)
      await emulator('POST', `/admin/payouts/${payoutRef}/decide`, { status: 'completed' })
      // One hint a second per account: the next one is asked about once that second is over.
      const checked = await eventually(
        async () => {
          const res = await callback('payout.completed', payoutRef as string, stranger)
          assertError(res, 401, 'signature_invalid')
          const [logged] = await ctx.db
            .selectFrom('connector_callbacks')
            .select('detail')
            .where('uuid', '=', res.json().error.details.callback_id)
            .execute()
          return logged?.detail.includes("the payout's status is asked from the provider instead")
        },
        5000,
        200,
      )
      assert.ok(checked)
      assert.equal((await payoutRow(paidOut.json().uuid)).status, 'processing')
      // What the provider says when asked is what counts.
      await ctx.services.payouts.checkDue(100, new Date())
      assert.equal((await payoutRow(paidOut.json().uuid)).status, 'completed')
    })

    it('a refund whose hand-over got no answer is handed to the same account again by the recheck', async () => {
      const { m, ...paid } = await livePaid('Unanswered refunds')
      await acquirer.setFaults({ error_rate: 1 })
      const res = await refund(m, paid.uuid, 1000)
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().status, 'pending')
      const { uuid } = res.json()
      assert.deepEqual(await refundRow(uuid).then((r) => [r.account_uuid, r.provider_reference]), [
        acquirer.account.uuid,
        null,
      ])
      await acquirer.setFaults({})
      await ctx.services.refunds.checkDue(100, later())
      const row = await refundRow(uuid)
      assert.equal(row.status, 'succeeded')
      assert.deepEqual(await emulator('GET', `/v1/refunds/${row.provider_reference}`), {
        reference: row.provider_reference,
        status: 'succeeded',
        amount: 1000,
      })
    })

    it('a refund the acquirer fails is failed, and its debit returned', async () => {
      const { m, ...paid } = await livePaid('Failed refunds')
      const before = await available(m, 'live')
      await acquirer.setFaults({ refunds: 'fail' })
      const res = await refund(m, paid.uuid, 5000)
      assert.equal(res.statusCode, 201, res.body)
      assert.deepEqual(
        [res.json().status, res.json().message],
        ['failed', 'The provider refused the refund.'],
      )
      assert.equal((await refundRow(res.json().uuid)).account_uuid, acquirer.account.uuid)
      assert.equal(await available(m, 'live'), before)
      assert.equal((await transaction(m, paid.uuid)).status, 'paid')
    })

    it('a live payout goes to the account of its route, and completes by its callback', async () => {
      const { m } = await livePaid('Account payouts')
      const res = await payout(m)
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().status, 'processing')
      const row = await payoutRow(res.json().uuid)
      assert.equal(row.account_uuid, acquirer.account.uuid)
      assert.match(row.provider_reference as string, /^po_/)
      assert.deepEqual(await emulator('GET', `/v1/payouts/${row.provider_reference}`), {
        reference: row.provider_reference,
        status: 'processing',
        amount: 10000,
      })
      const reserved = await available(m, 'live')
      await emulator('POST', `/admin/payouts/${row.provider_reference}/decide`, { status: 'completed' })
      const done = await eventually<{ failure_reason: string | null }>(async () => {
        const got = await call(ctx, 'GET', `/integration/payouts/${res.json().uuid}`, undefined, {
          as: { merchant: m, mode: 'live' },
        })
        return got.json().status === 'completed' ? got.json() : null
      })
      assert.equal(done.failure_reason, null)
      const logged = await ctx.db
        .selectFrom('connector_callbacks')
        .select(['event_type', 'result'])
        .where('provider_reference', '=', row.provider_reference as string)
        .execute()
      assert.deepEqual(logged, [{ event_type: 'payout.completed', result: 'applied' }])
      // The reservation was spent, not returned.
      assert.equal(await available(m, 'live'), reserved)
    })

    it('a payout whose callback never comes is asked about at the account until it is done', async () => {
      const { m } = await livePaid('Quiet payouts')
      const before = await available(m, 'live')
      await acquirer.setFaults({ drop_callbacks: true })
      const res = await payout(m)
      assert.equal(res.statusCode, 201, res.body)
      const { uuid } = res.json()
      const { provider_reference: reference } = await payoutRow(uuid)
      await ctx.services.payouts.checkDue(100, later())
      assert.equal((await payoutRow(uuid)).status, 'processing')
      await emulator('POST', `/admin/payouts/${reference}/decide`, { status: 'failed' })
      await ctx.services.payouts.checkDue(100, later())
      assert.equal((await payoutRow(uuid)).status, 'failed')
      assert.equal(await available(m, 'live'), before)
    })

    it('a live payout no route takes is refused with 422 no_route, and nothing is reserved', async () => {
      const { m } = await livePaid('Unrouted payouts')
      const before = await available(m, 'live')
      const card = await payout(m, {
        method: 'card',
        destination: { card_number: '4111111111111111', holder_name: 'JANE DOE' },
      })
      const error = assertError(card, 422, 'unsupported_payment_method')
      assert.deepEqual(error.details, { reason: 'no_route' })
      const erc20 = await payout(m, {
        destination: { address: '0x52908400098527886E0F7030069857D2E4169EE7', network: 'ERC20' },
      })
      assert.equal(assertError(erc20, 422, 'unsupported_payment_method').details.reason, 'no_route')
      assert.equal(await available(m, 'live'), before)
    })

    it('in test mode refunds and payouts stay with the simulator', async () => {
      const m = await ctx.newMerchant('Sandbox')
      const paid = await paidTransaction(ctx, { amount: 100000, currency: 'USD' }, { merchant: m })
      const refunded = await refund(m, paid.uuid, 5000, 'test')
      assert.equal(refunded.statusCode, 201, refunded.body)
      assert.equal(refunded.json().status, 'succeeded')
      assert.equal((await refundRow(refunded.json().uuid)).account_uuid, null)
      const paidOut = await payout(m, {}, 'test')
      assert.equal(paidOut.statusCode, 201, paidOut.body)
      const row = await payoutRow(paidOut.json().uuid)
      assert.deepEqual([row.account_uuid, row.status], [null, 'processing'])
      assert.match(row.provider_reference as string, /^sim_po_/)
    })
  })
}

for (const backend of backends()) {
  describe(`the sandbox and a payout at a connector account (${backend})`, () => {
    // Outside production the sandbox takes live keys too, but a payout an account holds is that account's.
    const ctx = suiteContext(backend)
    // Payments stay with the simulator (no payment route), so that the sandbox pays the one that funds the payout.
    suiteAcquirer(ctx, { methods: [], payouts: [{ method: 'usdt_wallet', network: 'TRC20' }] })

    it('a live payout handed to an account cannot be decided by the sandbox: 403, and nothing changes', async () => {
      const m = await ctx.newMerchant('Sandboxed')
      await paidTransaction(ctx, { amount: 100000, currency: 'USD' }, { merchant: m, mode: 'live' })
      await ctx.services.transactions.settleDue(1000, new Date(Date.now() + 400 * 86_400_000))
      const res = await call(ctx, 'POST', '/integration/payouts', newPayout(), {
        as: { merchant: m, mode: 'live' },
        auth: 'signature',
        idempotencyKey: idem(),
      })
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().status, 'processing')
      const { uuid } = res.json()
      for (const simulation of ['completed', 'failed']) {
        const simulated = await call(
          ctx,
          'POST',
          `/integration/sandbox/payouts/${uuid}/${simulation}`,
          undefined,
          {
            as: { merchant: m, mode: 'live' },
          },
        )
        assertError(simulated, 403, 'sandbox_unavailable')
      }
      const row = await ctx.db
        .selectFrom('payouts')
        .select(['status', 'aggregate_version'])
        .where('uuid', '=', uuid)
        .executeTakeFirstOrThrow()
      assert.deepEqual(row, { status: 'processing', aggregate_version: 2 })
    })
  })
}

import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { before, describe, it } from 'node:test'
import type { AccountConnector, ProviderOutcome } from '../../src/connectors/types.ts'
import { attemptsOf, callbackLog, eventNames, handoverOf } from '../api/providers/handover-helpers.ts'
import { backends, call, newTransaction } from '../helpers/harness.ts'
import { newPayout } from '../helpers/payouts.ts'
import { beforeClose, suiteContext } from '../helpers/suite.ts'
import type { KitKind, KitProvider } from './kit.ts'

/**
 * The kit's cases through the gateway, on each backend: an account of the kind at the kind's provider, the
 * default route of card payments of the account's mode to it, and the kind's outcomes reaching the payment by
 * the gateway's own ways in: its callback endpoint (kinds whose provider signs callbacks), status sync (every
 * kind), and the refund status check (kinds that take refunds). No worker runs: each case runs the job it needs,
 * at a time its check is due.
 */
export function gatewayKit(kind: KitKind): void {
  for (const backend of backends())
    describe(`connector kit through the gateway: ${kind.kind} (${backend})`, () => {
      const ctx = suiteContext(backend)
      let provider: KitProvider
      let account: { uuid: string; callbackSecret: string | null }
      /** The connector the gateway built for the account: the one its hand-overs and status sync call. */
      let connector: AccountConnector
      let decide: KitProvider['decide']
      let mode: KitProvider['account']['mode']

      before(async () => {
        provider = await kind.start()
        beforeClose(ctx, () => provider.close())
        mode = provider.account.mode
        const name = `kit-${kind.kind}`
        const added = await ctx.services.providers.accounts.add({
          name,
          kind: kind.kind,
          ...provider.account,
        })
        ctx.secrets.push(...Object.values(provider.account.secrets))
        if (added.callbackSecret) ctx.secrets.push(added.callbackSecret)
        account = { uuid: added.account.uuid, callbackSecret: added.callbackSecret }
        await ctx.services.providers.routes.set(
          { merchantUuid: null, mode, subject: 'payment', method: 'card' },
          [name],
        )
        if (kind.refundsAndPayouts)
          await ctx.services.providers.routes.set(
            { merchantUuid: null, mode, subject: 'payout', method: 'usdt_wallet', network: 'TRC20' },
            [name],
          )
        connector = (await ctx.services.providers.accounts.connector(account.uuid)).connector
        decide = kind.decideIn?.(connector) ?? provider.decide
      })

      /** The payment as its merchant reads it now. */
      const paymentNow = async (uuid: string) => {
        const res = await call(ctx, 'GET', `/integration/transactions/${uuid}`, undefined, { as: { mode } })
        assert.equal(res.statusCode, 200, res.body)
        return res.json()
      }
      /** A card payment made through the merchant API and handed to the account: the payment and its reference. */
      const handedOver = async () => {
        const res = await call(ctx, 'POST', '/integration/transactions', newTransaction(), { as: { mode } })
        assert.equal(res.statusCode, 201, res.body)
        const payment = res.json()
        const handover = await handoverOf(ctx, payment.uuid)
        assert.equal(handover?.state, 'handed_over')
        return { payment, reference: handover.provider_reference as string }
      }
      /** The kinds of the ledger's entries about `uuid` (a payment or a refund), oldest first. */
      const entriesAbout = async (uuid: string) =>
        (
          await ctx.db
            .selectFrom('journal_entries')
            .select('kind')
            .where('reference_uuid', '=', uuid)
            .orderBy('created_at')
            .execute()
        ).map((row) => row.kind)
      /** The ledger's credits of a payment's money (a payment with no hold is settled in the same breath). */
      const creditsOf = async (uuid: string) =>
        (await entriesAbout(uuid)).filter((entry) => entry === 'payment_received')
      /** Status sync, run once at the time the first ask about a payment handed over now is due. */
      const statusSync = () =>
        ctx.services.transactions.syncHandedOver(
          100,
          new Date(Date.now() + (ctx.config.providerSync.scheduleMs[0] ?? 0) + 1000),
        )
      /** The payment, handed over, decided `outcome` at the provider, and told the gateway by status sync. */
      const settledBySync = async (outcome: ProviderOutcome) => {
        const { payment, reference } = await handedOver()
        await decide(reference, outcome)
        // The provider has told nobody yet.
        assert.equal((await paymentNow(payment.uuid)).status, 'pending')
        assert.ok((await statusSync()) >= 1)
        return { payment, reference, now: await paymentNow(payment.uuid) }
      }

      /** Far enough ahead that every pending refund and open payout is due for its check. */
      const later = () => new Date(Date.now() + 3_600_000)
      /** The hold of every paid payment over: their money available. */
      const settleAll = () =>
        ctx.services.transactions.settleDue(1000, new Date(Date.now() + 400 * 86_400_000))

      it('hands a payment routed to the account over once, and records the reference the provider gave', async () => {
        const { payment } = await handedOver()
        assert.equal(payment.status, 'pending')
        const handover = await handoverOf(ctx, payment.uuid)
        assert.equal(handover?.account_uuid, account.uuid)
        const reference = handover?.provider_reference as string
        assert.ok(reference.length > 0)
        assert.deepEqual(await attemptsOf(ctx, payment.uuid), [
          { position: 0, account_uuid: account.uuid, result: 'accepted', provider_reference: reference },
        ])
        // The provider holds it under that reference, for its amount, undecided.
        assert.deepEqual(await connector.paymentStatus(reference), {
          kind: 'known',
          status: 'pending',
          amount: payment.amount,
          currency: payment.currency,
        })
        assert.deepEqual(await eventNames(ctx, payment.uuid), [])
        assert.deepEqual(await entriesAbout(payment.uuid), [])
      })

      if (kind.signedCallbacks)
        it("applies the provider's signed callback at the account's callback URL once", async () => {
          const callbacks = provider.callbacks as NonNullable<KitProvider['callbacks']>
          const { payment, reference } = await handedOver()
          await decide(reference, 'paid')
          const { body, headers } = callbacks.signed(reference, 'paid', {
            secret: account.callbackSecret as string,
            amount: payment.amount,
            currency: payment.currency,
          })
          const post = () =>
            ctx.app.inject({
              method: 'POST',
              url: `/providers/${account.uuid}/callbacks`,
              headers: { 'content-type': 'application/json', ...headers },
              payload: body,
            })
          const first = await post()
          assert.equal(first.statusCode, 200, first.body)
          assert.equal(first.json().result, 'applied')
          const paid = await paymentNow(payment.uuid)
          assert.equal(paid.status, 'paid')
          assert.deepEqual(await creditsOf(payment.uuid), ['payment_received'])
          assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])

          const again = await post()
          assert.equal(again.statusCode, 200, again.body)
          assert.equal(again.json().result, 'duplicate')
          assert.equal((await paymentNow(payment.uuid)).aggregate_version, paid.aggregate_version)
          assert.deepEqual(await creditsOf(payment.uuid), ['payment_received'])
          assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])
          assert.deepEqual(
            (await callbackLog(ctx, reference)).map((row) => [row.verification, row.result]),
            [
              ['verified', 'applied'],
              ['verified', 'duplicate'],
            ],
          )
          // Status sync, asking afterwards, finds the payment settled and leaves it.
          await statusSync()
          assert.equal((await paymentNow(payment.uuid)).aggregate_version, paid.aggregate_version)
          assert.equal((await handoverOf(ctx, payment.uuid))?.sync_due_at, null)
        })

      it('settles a payment paid at the provider, with no callback, by status sync, with its money once', async () => {
        const { payment, now } = await settledBySync('paid')
        assert.equal(now.status, 'paid')
        assert.deepEqual(await creditsOf(payment.uuid), ['payment_received'])
        assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])
        const handover = await handoverOf(ctx, payment.uuid)
        assert.equal(handover?.state, 'final')
        assert.equal(handover?.sync_due_at, null)
        // Asked about no more: a later run changes nothing.
        await statusSync()
        assert.equal((await paymentNow(payment.uuid)).aggregate_version, now.aggregate_version)
        assert.deepEqual(await creditsOf(payment.uuid), ['payment_received'])
      })

      it('settles a payment failed at the provider, with no callback, by status sync', async () => {
        const { payment, now } = await settledBySync('failed')
        assert.equal(now.status, 'failed')
        assert.deepEqual(await entriesAbout(payment.uuid), [])
        assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.failed'])
        const handover = await handoverOf(ctx, payment.uuid)
        assert.equal(handover?.state, 'final')
        assert.equal(handover?.sync_due_at, null)
      })

      if (kind.refundsAndPayouts)
        it('hands a refund of a paid payment to the account, and settles it by its status check', async () => {
          assert.equal(mode, 'live', 'refunds of test payments stay with the sandbox')
          const decideRefund = provider.decideRefund as NonNullable<KitProvider['decideRefund']>
          const { payment } = await settledBySync('paid')
          await settleAll()
          const res = await call(
            ctx,
            'POST',
            '/integration/refunds',
            { transaction_uuid: payment.uuid, amount_minor: 50_000 },
            { as: { mode }, auth: 'signature', idempotencyKey: randomUUID() },
          )
          assert.equal(res.statusCode, 201, res.body)
          assert.equal(res.json().status, 'pending')
          const refundRow = () =>
            ctx.db
              .selectFrom('refunds')
              .select(['status', 'account_uuid', 'provider_reference'])
              .where('uuid', '=', res.json().uuid)
              .executeTakeFirstOrThrow()
          const handed = await refundRow()
          assert.equal(handed.account_uuid, account.uuid)
          assert.ok((handed.provider_reference ?? '').length > 0)
          // Asked before the provider decides, it is still pending.
          await ctx.services.refunds.checkDue(100, later())
          assert.equal((await refundRow()).status, 'pending')
          await decideRefund(handed.provider_reference as string, 'succeeded')
          assert.ok((await ctx.services.refunds.checkDue(100, later())) >= 1)
          assert.deepEqual(await refundRow(), { ...handed, status: 'succeeded' })
          assert.equal((await paymentNow(payment.uuid)).status, 'partially_refunded')
          assert.deepEqual(await entriesAbout(res.json().uuid), ['refund_debited'])
          await ctx.services.refunds.checkDue(100, later())
          assert.deepEqual(await entriesAbout(res.json().uuid), ['refund_debited'])
        })

      if (kind.refundsAndPayouts)
        it('hands a payout routed to the account over, and settles it by its status check', async () => {
          const decidePayout = provider.decidePayout as NonNullable<KitProvider['decidePayout']>
          await settledBySync('paid')
          await settleAll()
          const res = await call(ctx, 'POST', '/integration/payouts', newPayout({ amount: 500 }), {
            as: { mode },
            auth: 'signature',
            idempotencyKey: randomUUID(),
          })
          assert.equal(res.statusCode, 201, res.body)
          assert.equal(res.json().status, 'processing')
          const payoutRow = () =>
            ctx.db
              .selectFrom('payouts')
              .select(['status', 'account_uuid', 'provider_reference'])
              .where('uuid', '=', res.json().uuid)
              .executeTakeFirstOrThrow()
          const handed = await payoutRow()
          assert.equal(handed.account_uuid, account.uuid)
          assert.ok((handed.provider_reference ?? '').length > 0)
          await ctx.services.payouts.checkDue(100, later())
          assert.equal((await payoutRow()).status, 'processing')
          await decidePayout(handed.provider_reference as string, 'completed')
          assert.ok((await ctx.services.payouts.checkDue(100, later())) >= 1)
          assert.deepEqual(await payoutRow(), { ...handed, status: 'completed' })
          assert.deepEqual(await entriesAbout(res.json().uuid), ['payout_reserved', 'payout_completed'])
          await ctx.services.payouts.checkDue(100, later())
          assert.deepEqual(await entriesAbout(res.json().uuid), ['payout_reserved', 'payout_completed'])
        })
    })
}

import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { before, describe, it } from 'node:test'
import type { AccountConnector, ProviderOutcome } from '../../src/connectors/types.ts'
import {
  attemptsOf,
  callbackLog,
  eventNames,
  handedOver,
  handoverOf,
  paymentNow,
} from '../api/providers/handover-helpers.ts'
import { backends, call } from '../helpers/harness.ts'
import { newPayout } from '../helpers/payouts.ts'
import { rowsWhere } from '../helpers/rows.ts'
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

      /** The kinds of the ledger's entries about `uuid` (a payment or a refund), oldest first. */
      const entriesAbout = async (uuid: string) =>
        (
          await rowsWhere(ctx.db, 'journal_entries', { reference_uuid: uuid }, { orderBy: ['created_at'] })
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
      /** The payment as its merchant reads it now. */
      const current = (uuid: string) => paymentNow(ctx, uuid, ctx.merchant, mode)
      /** The payment, handed over, decided `outcome` at the provider, and told the gateway by status sync. */
      const settledBySync = async (outcome: ProviderOutcome) => {
        const { payment, reference } = await handedOver(ctx, {}, mode)
        await decide(reference, outcome)
        // The provider has told nobody yet.
        assert.equal((await current(payment.uuid)).status, 'pending')
        assert.ok((await statusSync()) >= 1)
        return { payment, reference, now: await current(payment.uuid) }
      }

      /** Far enough ahead that every pending refund and open payout is due for its check. */
      const later = () => new Date(Date.now() + 3_600_000)
      /** The hold of every paid payment over: their money available. */
      const settleAll = () =>
        ctx.services.transactions.settleDue(1000, new Date(Date.now() + 400 * 86_400_000))

      it('hands a payment routed to the account over once, and records the reference the provider gave', async () => {
        const { payment } = await handedOver(ctx, {}, mode)
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
          const { payment, reference } = await handedOver(ctx, {}, mode)
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
          const paid = await current(payment.uuid)
          assert.equal(paid.status, 'paid')
          assert.deepEqual(await creditsOf(payment.uuid), ['payment_received'])
          assert.deepEqual(await eventNames(ctx, payment.uuid), ['transaction.paid'])

          const again = await post()
          assert.equal(again.statusCode, 200, again.body)
          assert.equal(again.json().result, 'duplicate')
          assert.equal((await current(payment.uuid)).aggregate_version, paid.aggregate_version)
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
          assert.equal((await current(payment.uuid)).aggregate_version, paid.aggregate_version)
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
        assert.equal((await current(payment.uuid)).aggregate_version, now.aggregate_version)
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

      // A refund and a payout, each handed to the account and settled by its status check once the provider
      // decides it: asked before, it is still open; asked after, it is decided, with its ledger entries, once.
      const handedOut = [
        {
          name: 'hands a refund of a paid payment to the account, and settles it by its status check',
          create: (payment: { uuid: string }) => {
            assert.equal(mode, 'live', 'refunds of test payments stay with the sandbox')
            return call(
              ctx,
              'POST',
              '/integration/refunds',
              { transaction_uuid: payment.uuid, amount_minor: 50_000 },
              { as: { mode }, auth: 'signature', idempotencyKey: randomUUID() },
            )
          },
          table: 'refunds',
          open: 'pending',
          decide: (reference: string) =>
            (provider.decideRefund as NonNullable<KitProvider['decideRefund']>)(reference, 'succeeded'),
          decided: 'succeeded',
          entries: ['refund_debited'],
          payment: 'partially_refunded',
        },
        {
          name: 'hands a payout routed to the account over, and settles it by its status check',
          create: () =>
            call(ctx, 'POST', '/integration/payouts', newPayout({ amount: 500 }), {
              as: { mode },
              auth: 'signature',
              idempotencyKey: randomUUID(),
            }),
          table: 'payouts',
          open: 'processing',
          decide: (reference: string) =>
            (provider.decidePayout as NonNullable<KitProvider['decidePayout']>)(reference, 'completed'),
          decided: 'completed',
          entries: ['payout_reserved', 'payout_completed'],
          payment: 'paid',
        },
      ] as const
      if (kind.refundsAndPayouts)
        for (const out of handedOut)
          it(out.name, async () => {
            const { payment } = await settledBySync('paid')
            await settleAll()
            const res = await out.create(payment)
            assert.equal(res.statusCode, 201, res.body)
            assert.equal(res.json().status, out.open)
            const row = async () => {
              const [found] = await rowsWhere(
                ctx.db,
                out.table,
                { uuid: res.json().uuid },
                { select: ['status', 'account_uuid', 'provider_reference'] },
              )
              assert.ok(found)
              return found
            }
            // Each kind's service is named as its table; its status check runs as if an hour had passed.
            const checkDue = () => ctx.services[out.table].checkDue(100, later())
            const handed = await row()
            assert.equal(handed.account_uuid, account.uuid)
            assert.ok((handed.provider_reference ?? '').length > 0)
            await checkDue()
            assert.equal((await row()).status, out.open)
            await out.decide(handed.provider_reference as string)
            assert.ok((await checkDue()) >= 1)
            assert.deepEqual(await row(), { ...handed, status: out.decided })
            assert.equal((await current(payment.uuid)).status, out.payment)
            assert.deepEqual(await entriesAbout(res.json().uuid), out.entries)
            await checkDue()
            assert.deepEqual(await entriesAbout(res.json().uuid), out.entries)
          })
    })
}

import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildEmulator, parseFaults } from '../../../src/emulator/server.ts'
import { backends, call, eventually, newTransaction } from '../../helpers/harness.ts'
import { beforeClose, suiteContext } from '../../helpers/suite.ts'
import { eventNames } from './handover-helpers.ts'

// The record of a payment's hand-over when two tries of it overlap (docs/OPERATIONS.md, Crashes and recovery).
for (const backend of backends()) {
  describe(`hand-over records, tries that overlap (${backend})`, () => {
    // A lease far shorter than the first account's time-out: status sync takes a live try over while it waits.
    const ctx = suiteContext(backend, {
      config: { providerSync: { scheduleMs: [60_000], graceMs: 3_600_000, handoverLeaseMs: 50 } },
      secrets: ['sk_first', 'sk_second'],
    })
    const emulators: FastifyInstance[] = []
    beforeClose(ctx, () => Promise.all(emulators.map((e) => e.close())))

    /** An emulator, and a live http-acquirer account `name` at it. */
    async function acquirer(name: string, timeoutMs: number, faults: Record<string, unknown>) {
      const emulator = buildEmulator({
        apiKey: `sk_${name}`,
        publicUrl: `http://${name}.test`,
        faults: parseFaults(faults),
      })
      emulators.push(emulator)
      await emulator.listen({ port: 0, host: '127.0.0.1' })
      const base = `http://127.0.0.1:${(emulator.server.address() as AddressInfo).port}`
      const { account } = await ctx.services.providers.accounts.add({
        name,
        kind: 'http-acquirer',
        mode: 'live',
        settings: { base_url: `${base}/v1`, timeout_ms: String(timeoutMs) },
        secrets: { api_key: `sk_${name}` },
      })
      return {
        name,
        uuid: account.uuid,
        async setFaults(given: Record<string, unknown>) {
          const res = await fetch(`${base}/admin/faults`, {
            method: 'PUT',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(given),
          })
          assert.equal(res.status, 200)
        },
        async payments(order: string) {
          const res = await fetch(`${base}/admin/payments?order_id=${order}`)
          return (await res.json()) as { reference: string }[]
        },
      }
    }

    /** A live card payment created (its answer awaited later), once its insert with its first try committed. */
    async function startPayment() {
      const body = newTransaction()
      const created = call(ctx, 'POST', '/integration/transactions', body, { as: { mode: 'live' } })
      const { uuid } = await eventually(
        () =>
          ctx.db
            .selectFrom('transactions')
            .select('uuid')
            .where('external_id', '=', body.external_id)
            .executeTakeFirst(),
        5000,
        5,
      )
      return { uuid, created }
    }
    const route = (accounts: string[]) =>
      ctx.services.providers.routes.set(
        { merchantUuid: null, mode: 'live', subject: 'payment', method: 'card' },
        accounts,
      )

    /**
     * A live payment started on a route of two new accounts, `firstName` then `secondName`: the first never
     * answers a live try (its 1 s time-out ends it), the second (a 2 s time-out) answers at once.
     */
    async function startOnTwo(firstName: string, secondName: string) {
      const first = await acquirer(firstName, 1000, { timeout_rate: 1 })
      const second = await acquirer(secondName, 2000, {})
      await route([first.name, second.name])
      return { first, second, ...(await startPayment()) }
    }

    /** Status sync runs while the live try waits; then the create answers, the payment pending. */
    async function syncWhileWaiting(created: ReturnType<typeof call>) {
      assert.ok(await eventually(async () => (await ctx.services.transactions.syncHandedOver()) > 0))
      const answer = await created
      assert.equal(answer.statusCode, 201, answer.body)
      assert.equal(answer.json().status, 'pending')
    }

    /** The hand-over is `accountUuid`'s under `reference`, after these tries (position, account, result, reference). */
    async function assertHandedOver(
      uuid: string,
      accountUuid: string,
      reference: string,
      tries: [number, string, string, string | null][],
    ) {
      const handover = await ctx.services.providers.handovers.find(ctx.db, uuid)
      assert.deepEqual(
        [handover?.state, handover?.account_uuid, handover?.provider_reference],
        ['handed_over', accountUuid, reference],
      )
      const attempts = await ctx.services.providers.handovers.attempts(uuid)
      assert.deepEqual(
        attempts.map((a) => [a.position, a.account, a.result, a.provider_reference]),
        tries,
      )
    }

    it('a first try that answers after the next account took the payment does not take it back', async () => {
      const { first, second, uuid, created } = await startOnTwo('first', 'second')
      // Status sync's call to the first account, made while the live try waits, with a time-out raised meanwhile,
      // is answered after 2 s: by then the live try has ended and the second account has the payment.
      await first.setFaults({ latency_ms: 2000 })
      await ctx.services.providers.accounts.update('first', { settings: { timeout_ms: '5000' } })
      await syncWhileWaiting(created)

      // Each provider holds one payment; the hand-over is the second's, which the live try handed it to.
      const [atFirst] = await first.payments(uuid)
      const [atSecond] = await second.payments(uuid)
      assert.ok(atFirst && atSecond)
      // What each try ended with: the first took it too, late, and keeps its reference for the record.
      await assertHandedOver(uuid, second.uuid, atSecond.reference, [
        [0, 'first', 'accepted', atFirst.reference],
        [1, 'second', 'accepted', atSecond.reference],
      ])
      // The second provider's word about its payment finds it.
      const found = await ctx.services.providers.handovers.findByReference(
        ctx.db,
        second.uuid,
        atSecond.reference,
      )
      assert.equal(found?.transaction_uuid, uuid)
    })

    it('a live try that ends without an answer after status sync handed the payment over leaves it there', async () => {
      // Status sync's call of the first account, made while the live try waits, is answered in 0.3 s.
      const { first, second, uuid, created } = await startOnTwo('early-first', 'early-second')
      await first.setFaults({ latency_ms: 300 })
      await syncWhileWaiting(created)

      // The payment stays with the first account, which took it; the second was never asked.
      const [atFirst] = await first.payments(uuid)
      assert.ok(atFirst)
      assert.deepEqual(await second.payments(uuid), [])
      await assertHandedOver(uuid, first.uuid, atFirst.reference, [
        [0, 'early-first', 'accepted', atFirst.reference],
      ])
    })

    it('the last try of a route ending without an answer leaves the payment with the account status sync handed it to', async () => {
      // The route's only account never answers the live try (its 1 s time-out ends it); status sync's repeat of
      // the try, made while the live try waits, is answered in 0.3 s: the payment is that account's.
      const lone = await acquirer('lone', 1000, { timeout_rate: 1 })
      await route(['lone'])
      const { uuid, created } = await startPayment()
      await lone.setFaults({ latency_ms: 300 })
      await syncWhileWaiting(created)

      const [atLone] = await lone.payments(uuid)
      assert.ok(atLone)
      await assertHandedOver(uuid, lone.uuid, atLone.reference, [[0, 'lone', 'accepted', atLone.reference]])
      assert.deepEqual(await eventNames(ctx, uuid), [])
    })

    it('a try status sync repeats and the account now refuses passes the payment on to the next account', async () => {
      // While the live try waits on the first account, that account stops taking the gateway's key, so status
      // sync's repeat of the try is refused, and the payment goes on to the second.
      const { first, second, uuid, created } = await startOnTwo('refusing-first', 'refusing-second')
      await ctx.services.providers.accounts.update('refusing-first', { secrets: { api_key: 'sk_revoked' } })
      await syncWhileWaiting(created)

      const [atSecond] = await second.payments(uuid)
      assert.ok(atSecond)
      assert.deepEqual(await first.payments(uuid), [])
      await assertHandedOver(uuid, second.uuid, atSecond.reference, [
        [0, 'refusing-first', 'refused', null],
        [1, 'refusing-second', 'accepted', atSecond.reference],
      ])
      const row = await ctx.db
        .selectFrom('transactions')
        .select('status')
        .where('uuid', '=', uuid)
        .executeTakeFirst()
      assert.equal(row?.status, 'pending')
    })
  })
}

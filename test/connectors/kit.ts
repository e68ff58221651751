import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type {
  AccountConnector,
  PaymentOrder,
  PayoutOrder,
  ProviderOutcome,
  ProviderPaymentStatus,
} from '../../src/connectors/types.ts'
import type { Mode } from '../../src/db/types.ts'
import { gatewayKit } from './kit-gateway.ts'

/**
 * The connector test kit (docs/CONNECTORS.md, Writing a connector kind): what every connector kind must do, run
 * against each registered kind. A kind registers how to make its connector against a provider it can drive;
 * the cases follow from what it declares: a kind that can be made slow gets the time-out case, one whose
 * provider signs callbacks gets the callback cases. Then the kind is tried through the gateway (kit-gateway.ts),
 * with an account of it at the provider.
 */
export interface KitProvider {
  /** The kind's connector, configured against the provider. */
  connector: AccountConnector
  /** The provider decides a payment it holds (a customer paid or declined on its page, say). */
  decide(reference: string, outcome: ProviderOutcome): Promise<void>
  /** The provider decides a payout it holds. */
  decidePayout?(reference: string, outcome: 'completed' | 'failed'): Promise<void>
  /** The provider decides a refund it holds: one that takes refunds holds each pending until then. */
  decideRefund?(reference: string, outcome: 'succeeded' | 'failed'): Promise<void>
  /**
   * An account of the kind at this provider, as the operator adds it (`connectors add`); refunds reach an account
   * in live mode only.
   */
  account: { mode: Mode; settings: Record<string, string>; secrets: Record<string, string> }
  /** A reference the provider never gave. */
  unknownReference: string
  /** What the kind answers about a reference it never gave: `unknown`, or no answer where it cannot tell. */
  unknownAnswer: ProviderPaymentStatus['kind']
  /** The provider stops answering within the connector's time-out (until `restore`), for kinds with `slow`. */
  slow?: { start(): Promise<void>; restore(): Promise<void> }
  /** The provider's signed callback about a payment, and how the gateway verifies and reads it. */
  callbacks?: {
    signed(
      reference: string,
      outcome: ProviderOutcome,
      options?: { at?: Date; secret?: string; amount?: number; currency?: string },
    ): {
      body: string
      headers: Record<string, string>
    }
    verify(body: string, headers: Record<string, string>): { ok: true } | { ok: false; reason: string }
    read(body: string): { reference: string; outcome: ProviderOutcome } | null
    /** A secret of another account (the gateway's account signs with the callback secret it made). */
    otherSecret: string
  }
  close(): Promise<void>
}

export interface KitKind {
  kind: string
  /** Its provider can be made not to answer: the time-out case runs. */
  slow: boolean
  /** Its provider signs callbacks: the callback cases run. */
  signedCallbacks: boolean
  /** It takes refunds and payouts (else it must refuse them, never leave them unknown). */
  refundsAndPayouts: boolean
  start(): Promise<KitProvider>
  /**
   * How the provider decides a payment the gateway handed over through `connector`, the connector the gateway
   * built for the account, when `decide` of the provider `start` made cannot reach it: a provider that lives in
   * its connector (the simulator). Without it, the provider's `decide`.
   */
  decideIn?(connector: AccountConnector): KitProvider['decide']
}

const payout = (): PayoutOrder => ({
  payoutUuid: randomUUID(),
  method: 'card',
  amount: 25_000,
  currency: 'RUB',
  amountUsdtMicro: 2_713_000,
  destination: { card_number: '4111111111111111' },
})

const order = (overrides: Partial<PaymentOrder> = {}): PaymentOrder => ({
  paymentUuid: randomUUID(),
  amount: 150_000,
  grossAmount: 151_875,
  currency: 'RUB',
  method: 'card',
  returnUrl: 'https://gateway.test/pay/token?returned=1',
  description: 'Kit order',
  ...overrides,
})

/** The kit's cases for one kind. */
export function connectorKit(kind: KitKind): void {
  describe(`connector kit: ${kind.kind}`, () => {
    let provider: KitProvider
    before(async () => {
      provider = await kind.start()
    })
    after(() => provider?.close())

    const accepted = async (given = order()) => {
      const answer = await provider.connector.createPayment(given)
      assert.equal(answer.kind, 'accepted', JSON.stringify(answer))
      if (answer.kind !== 'accepted') throw new Error('not accepted')
      assert.ok(answer.reference.length > 0)
      return answer
    }

    it('takes a payment and answers its reference', async () => {
      const answer = await accepted()
      assert.equal(typeof answer.reference, 'string')
      assert.ok(answer.redirectUrl === null || /^https?:\/\//.test(answer.redirectUrl))
    })

    it('hands a payment over once, whatever the number of calls with its id', async () => {
      const given = order()
      const first = await accepted(given)
      const again = await Promise.all([accepted(given), accepted(given)])
      for (const answer of again) assert.equal(answer.reference, first.reference)
      const other = await accepted(order())
      assert.notEqual(other.reference, first.reference)
    })

    it('answers pending until the provider decides, then the outcome with amount and currency', async () => {
      for (const outcome of ['paid', 'failed'] as const) {
        const given = order({ amount: outcome === 'paid' ? 123_456 : 5_000 })
        const { reference } = await accepted(given)
        assert.deepEqual(await provider.connector.paymentStatus(reference), {
          kind: 'known',
          status: 'pending',
          amount: given.amount,
          currency: given.currency,
        })
        await provider.decide(reference, outcome)
        assert.deepEqual(await provider.connector.paymentStatus(reference), {
          kind: 'known',
          status: outcome,
          amount: given.amount,
          currency: given.currency,
        })
      }
    })

    it('says what it knows of a reference it never gave', async () => {
      const status = await provider.connector.paymentStatus(provider.unknownReference)
      assert.equal(status.kind, provider.unknownAnswer)
    })

    if (kind.slow)
      it('gives no answer, never a refusal, when the provider does not answer in time', async () => {
        const slow = provider.slow as NonNullable<KitProvider['slow']>
        await slow.start()
        try {
          const started = Date.now()
          const created = await provider.connector.createPayment(order())
          assert.equal(created.kind, 'no_answer', JSON.stringify(created))
          const status = await provider.connector.paymentStatus(provider.unknownReference)
          assert.equal(status.kind, 'no_answer')
          assert.ok(Date.now() - started < 20_000)
        } finally {
          await slow.restore()
        }
      })

    if (kind.signedCallbacks)
      it('verifies and reads its signed callbacks, and refuses tampered, stale and foreign ones', async () => {
        const callbacks = provider.callbacks as NonNullable<KitProvider['callbacks']>
        const { reference } = await accepted()
        const good = callbacks.signed(reference, 'paid')
        assert.deepEqual(callbacks.verify(good.body, good.headers), { ok: true })
        assert.deepEqual(callbacks.read(good.body), { reference, outcome: 'paid' })
        const tampered = good.body.replace(reference, `${reference}x`)
        assert.equal(callbacks.verify(tampered, good.headers).ok, false)
        const stale = callbacks.signed(reference, 'paid', { at: new Date(Date.now() - 3_600_000) })
        assert.deepEqual(callbacks.verify(stale.body, stale.headers), { ok: false, reason: 'stale' })
        const foreign = callbacks.signed(reference, 'paid', { secret: callbacks.otherSecret })
        assert.deepEqual(callbacks.verify(foreign.body, foreign.headers), { ok: false, reason: 'mismatch' })
        const unsigned: Record<string, string> = {}
        assert.deepEqual(callbacks.verify(good.body, unsigned), { ok: false, reason: 'unsigned' })
        assert.equal(callbacks.read('{"id":1}'), null)
      })

    if (kind.refundsAndPayouts) {
      it('refunds a paid payment once per refund id, and answers the refund as the provider decides it', async () => {
        const { reference } = await accepted()
        await provider.decide(reference, 'paid')
        const given = {
          refundUuid: randomUUID(),
          paymentReference: reference,
          amount: 50_000,
          currency: 'RUB',
        }
        const first = await provider.connector.refund(given)
        assert.equal(first.kind, 'accepted', JSON.stringify(first))
        if (first.kind !== 'accepted') return
        const again = await provider.connector.refund(given)
        assert.deepEqual(again, first)
        assert.deepEqual(await provider.connector.refundStatus(first.reference), {
          kind: 'known',
          status: 'pending',
        })
        await (provider.decideRefund as NonNullable<KitProvider['decideRefund']>)(
          first.reference,
          'succeeded',
        )
        assert.deepEqual(await provider.connector.refundStatus(first.reference), {
          kind: 'known',
          status: 'succeeded',
        })
        assert.equal((await provider.connector.refundStatus(provider.unknownReference)).kind, 'unknown')
      })

      it('pays out once per payout id, and answers the payout as the provider decides it', async () => {
        const given = payout()
        const first = await provider.connector.submitPayout(given)
        assert.equal(first.kind, 'accepted', JSON.stringify(first))
        if (first.kind !== 'accepted') return
        assert.equal(first.status, 'processing')
        assert.deepEqual(await provider.connector.submitPayout(given), first)
        await provider.decidePayout?.(first.reference, 'completed')
        assert.deepEqual(await provider.connector.payoutStatus(first.reference), {
          kind: 'known',
          status: 'completed',
        })
        assert.equal((await provider.connector.payoutStatus(provider.unknownReference)).kind, 'unknown')
      })
    } else
      it('refuses refunds and payouts outright, never leaving them unknown', async () => {
        const { reference } = await accepted()
        const refund = await provider.connector.refund({
          refundUuid: randomUUID(),
          paymentReference: reference,
          amount: 1_000,
          currency: 'RUB',
        })
        assert.equal(refund.kind, 'refused')
        assert.equal((await provider.connector.submitPayout(payout())).kind, 'refused')
        assert.equal((await provider.connector.refundStatus(reference)).kind, 'no_answer')
        assert.equal((await provider.connector.payoutStatus(reference)).kind, 'no_answer')
      })
  })
  gatewayKit(kind)
}

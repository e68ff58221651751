import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Mode } from '../../../src/db/types.ts'
import { backends, call, DEMO_TEST_RATES, type TestMerchant } from '../../helpers/harness.ts'
import { seededRandom } from '../../helpers/random.ts'
import { suiteContext } from '../../helpers/suite.ts'

/**
 * A long random walk over the money-moving operations (docs/API.md: Transactions, Refunds, Payouts, Balances,
 * Rates), against an independent model kept only from what the API answered. Each step's outcome is predicted
 * from the model first (which requests must succeed, which must be refused and why), and the model then follows
 * the answer; at the end every balance must equal the model and `ledger verify` (src/main.ts → ledger.verify())
 * must be clean. Replay a failure with the printed seed: RANDOMIZED_SEED=<seed>.
 */
const SEED = Number(process.env.RANDOMIZED_SEED ?? 20260611)
const OPERATIONS = 600

/** ISO 4217 exponents (docs/API.md, Basics), written out here rather than taken from src. */
const EXPONENT: Record<string, number> = { USD: 2, EUR: 2, RUB: 2, JPY: 0, KWD: 3, USDT: 6 }
const CURRENCIES = Object.keys(DEMO_TEST_RATES)
const PAYMENT_METHODS = ['card', 'p2p_card', 'bank_transfer'] as const
const MODES: Mode[] = ['test', 'live']
const CARDS = ['4111 1111 1111 1111', '5555555555554444']
/** The sandbox provider declines payouts to this card (docs/API.md): the payout is created, then fails. */
const DECLINED_CARD = '4000000000000002'
const TRC20 = 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE'
const ERC20 = '0x52908400098527886E0F7030069857D2E4169EE7'

// Exact arithmetic of the contract, on bigint.
const pow10 = (n: number) => 10n ** BigInt(n)
const halfUp = (a: bigint, b: bigint) => (2n * a + b) / (2n * b)
function rateParts(rate: string) {
  assert.match(rate, /^\d+(\.\d+)?$/)
  const [whole = '0', fraction = ''] = rate.split('.')
  return { units: BigInt(whole + fraction), scale: fraction.length }
}
/** amount in major units of `currency` / rate, in USDT micro, floored or ceiled. */
function toMicro(amountMinor: number, currency: string, rate: string, round: 'floor' | 'ceil'): bigint {
  const { units, scale } = rateParts(rate)
  const numerator = BigInt(amountMinor) * pow10(6 + scale)
  const denominator = pow10(EXPONENT[currency] as number) * units
  return round === 'floor' ? numerator / denominator : (numerator + denominator - 1n) / denominator
}

interface MerchantSetup {
  name: string
  fxMarkupBps: number
  payoutFeeBps: number
  payoutFixedFeeMicro: number
  fees: Partial<Record<(typeof PAYMENT_METHODS)[number], [feeBps: number, shareBps: number]>>
}
const SETUPS: MerchantSetup[] = [
  { name: 'Plain', fxMarkupBps: 0, payoutFeeBps: 0, payoutFixedFeeMicro: 0, fees: {} },
  {
    name: 'Fees',
    fxMarkupBps: 0,
    payoutFeeBps: 150,
    payoutFixedFeeMicro: 1_000_000,
    fees: { card: [250, 10000], p2p_card: [100, 0], bank_transfer: [300, 5000] },
  },
  {
    name: 'Markup',
    fxMarkupBps: 200,
    payoutFeeBps: 75,
    payoutFixedFeeMicro: 0,
    fees: { card: [175, 2500] },
  },
]

type TxStatus = 'pending' | 'paid' | 'failed' | 'expired' | 'partially_refunded' | 'refunded'
type PayoutStatus = 'processing' | 'completed' | 'failed'

interface Account {
  available: bigint
  pending: bigint
  reserved: bigint
}
interface ModelTx {
  uuid: string
  m: number
  mode: Mode
  externalId: string
  amount: number
  currency: string
  fxRate: string
  settlement: bigint
  status: TxStatus
  refunded: number
  credited: boolean
  settled: boolean
}
interface ModelPayout {
  uuid: string
  m: number
  mode: Mode
  externalId: string
  total: bigint
  status: PayoutStatus
}
interface Sent {
  m: number
  mode: Mode
  url: string
  body: Record<string, unknown>
  key: string
  status: number
  text: string
  code: string | null
}
type Response = Awaited<ReturnType<typeof call>>

for (const backend of backends()) {
  describe(`ledger under a random walk of ${OPERATIONS} operations (${backend})`, () => {
    // The sandbox provider completes a payout as soon as the payout job asks about it.
    const ctx = suiteContext(backend, { services: { payouts: { completionMs: 0 } } })

    it(`seed ${SEED}: balances equal the model of the API's answers; ledger verify is clean`, {
      timeout: 180_000,
    }, async (t) => {
      const started = Date.now()
      const random = seededRandom(SEED)
      const float = (lo: number, hi: number) => lo + random() * (hi - lo)
      const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1))
      const chance = (p: number) => random() < p
      const pick = <T>(items: readonly T[]): T => {
        assert.ok(items.length > 0)
        return items[Math.floor(random() * items.length)] as T
      }

      const counts: Record<string, number> = {}
      const count = (name: string) => {
        counts[name] = (counts[name] ?? 0) + 1
      }

      // Merchants, configured by the operator before the walk.
      const merchants: TestMerchant[] = []
      for (const setup of SETUPS) {
        const m = await ctx.newMerchant(setup.name)
        await ctx.services.merchants.updateMerchant(m.uuid, {
          fxMarkupBps: setup.fxMarkupBps,
          payoutFeeBps: setup.payoutFeeBps,
          payoutFixedFeeMicro: setup.payoutFixedFeeMicro,
        })
        for (const [method, [feeBps, shareBps]] of Object.entries(setup.fees))
          await ctx.services.merchants.setFee(m.uuid, method, feeBps, shareBps)
        merchants.push(m)
      }
      // Each merchant's rates, as the API states them.
      const rates: Record<string, { pay_in_rate: string; payout_rate: string }>[] = []
      for (const m of merchants) {
        const res = await call(ctx, 'GET', '/integration/rates', undefined, { as: { merchant: m } })
        assert.equal(res.statusCode, 200, res.body)
        rates.push(Object.fromEntries(res.json().data.map((r: { currency: string }) => [r.currency, r])))
      }

      const accounts = new Map<string, Account>()
      const account = (m: number, mode: Mode) => {
        const key = `${m}:${mode}`
        let a = accounts.get(key)
        if (!a) {
          a = { available: 0n, pending: 0n, reserved: 0n }
          accounts.set(key, a)
        }
        return a
      }
      const txs: ModelTx[] = []
      const payouts: ModelPayout[] = []
      const sent: Sent[] = []
      let serial = 0

      const as = (m: number, mode: Mode) => ({ merchant: merchants[m] as TestMerchant, mode })
      const expectOk = (res: Response, status: number, what: string) => {
        assert.ok(res.statusCode < 500, `${what}: ${res.statusCode} ${res.body}`)
        assert.equal(res.statusCode, status, `${what}: ${res.body}`)
      }
      const expectError = (res: Response, status: number, code: string, what: string) => {
        assert.equal(res.statusCode, status, `${what}: expected ${code}, got ${res.body}`)
        assert.equal(res.json().error.code, code, `${what}: ${res.body}`)
      }
      const signedPost = async (m: number, mode: Mode, url: string, body: Record<string, unknown>) => {
        const key = `walk-${serial++}`
        const res = await call(ctx, 'POST', url, body, {
          as: as(m, mode),
          auth: 'signature',
          idempotencyKey: key,
        })
        assert.ok(res.statusCode < 500, `${url}: ${res.statusCode} ${res.body}`)
        sent.push({
          m,
          mode,
          url,
          body,
          key,
          status: res.statusCode,
          text: res.body,
          code: res.statusCode >= 400 ? res.json().error.code : null,
        })
        return res
      }
      const checkBalance = async (m: number, mode: Mode, where: string) => {
        const res = await call(ctx, 'GET', '/integration/balances', undefined, { as: as(m, mode) })
        expectOk(res, 200, 'balances')
        const usdt = res.json().data.find((b: { currency: string }) => b.currency === 'USDT')
        const a = account(m, mode)
        assert.deepEqual(
          {
            available: usdt.available,
            pending: usdt.pending,
            reserved: usdt.reserved,
            total: usdt.total,
          },
          {
            available: Number(a.available),
            pending: Number(a.pending),
            reserved: Number(a.reserved),
            total: Number(a.available + a.pending + a.reserved),
          },
          `merchant ${m} ${mode} after ${where}`,
        )
        assert.ok(usdt.available >= 0 && usdt.pending >= 0 && usdt.reserved >= 0)
      }

      /** A payout amount in `currency` worth about `micro` USDT at the merchant's payout rate. */
      const payoutAmountFor = (m: number, currency: string, micro: number) => {
        const rate = Number(rates[m]?.[currency]?.payout_rate)
        return Math.max(1, Math.floor((micro / 1e6) * rate * 10 ** (EXPONENT[currency] as number)))
      }
      /** A payout's total (docs/API.md, Payouts), from the API's payout rate and the merchant's configured fees. */
      const payoutTotal = (m: number, amount: number, currency: string) => {
        const setup = SETUPS[m] as MerchantSetup
        const usdt = toMicro(amount, currency, rates[m]?.[currency]?.payout_rate as string, 'ceil')
        const fee = halfUp(usdt * BigInt(setup.payoutFeeBps), 10000n) + BigInt(setup.payoutFixedFeeMicro)
        return { usdt, fee, total: usdt + fee }
      }
      const getQuote = async (m: number, mode: Mode, amount: number, currency: string, method: string) => {
        count('quote')
        const res = await call(
          ctx,
          'GET',
          `/integration/payouts/quote?amount=${amount}&currency=${currency}&method=${method}`,
          undefined,
          { as: as(m, mode) },
        )
        expectOk(res, 200, 'quote')
        const quote = res.json()
        const own = payoutTotal(m, amount, currency)
        assert.deepEqual(
          [quote.amount_usdt_micro, quote.fee_usdt_micro, quote.payout_usdt_amount_micro],
          [Number(own.usdt), Number(own.fee), Number(own.total)],
          `quote of ${amount} ${currency}`,
        )
        return quote as { quote_id: string; payout_usdt_amount_micro: number }
      }

      // ——— The operations ———

      async function createTransaction() {
        const m = int(0, merchants.length - 1)
        const mode = pick(MODES)
        const currency = pick(CURRENCIES)
        const method = pick(PAYMENT_METHODS)
        const rate = rates[m]?.[currency]?.pay_in_rate as string
        const amount = chance(0.1)
          ? int(1, 500)
          : Math.max(1, Math.round(float(1, 2500) * Number(rate) * 10 ** (EXPONENT[currency] as number)))
        const same = txs.filter((tx) => tx.m === m)
        // Now and then an external_id again: a conflict in its own mode, allowed in the other one.
        const reused = same.length && chance(0.06) ? pick(same) : null
        const externalId = reused ? reused.externalId : `walk-tx-${serial++}`
        const res = await call(
          ctx,
          'POST',
          '/integration/transactions',
          { amount, currency, payment_method: method, external_id: externalId, description: 'Random walk' },
          { as: as(m, mode) },
        )
        if (reused && txs.some((tx) => tx.m === m && tx.mode === mode && tx.externalId === externalId)) {
          count('create: duplicate external_id (409)')
          expectError(res, 409, 'conflict', 'duplicate external_id')
          return
        }
        count('create')
        expectOk(res, 201, 'create')
        const tx = res.json()
        // Fees and settlement (docs/API.md, Transactions), recomputed independently.
        const [feeBps, shareBps] = SETUPS[m]?.fees[method] ?? [0, 10000]
        const fee = halfUp(BigInt(amount) * BigInt(feeBps), 10000n)
        const merchantPart = halfUp(fee * BigInt(shareBps), 10000n)
        const gross = BigInt(amount) + (fee - merchantPart)
        const net = gross - fee
        assert.deepEqual(
          [tx.fee_amount, tx.gross_amount, tx.net_amount, tx.fx_rate, tx.status, tx.mode],
          [Number(fee), Number(gross), Number(net), rate, 'pending', mode],
        )
        assert.equal(BigInt(tx.settlement_amount), toMicro(Number(net), currency, rate, 'floor'))
        txs.push({
          uuid: tx.uuid,
          m,
          mode,
          externalId,
          amount,
          currency,
          fxRate: tx.fx_rate,
          settlement: BigInt(tx.settlement_amount),
          status: 'pending',
          refunded: 0,
          credited: false,
          settled: false,
        })
      }

      async function simulateTransaction() {
        const pending = txs.filter((tx) => tx.status === 'pending')
        const tx = pending.length && chance(0.6) ? pick(pending) : pick(txs)
        const r = random()
        const simulation =
          r < 0.4 ? 'paid' : r < 0.6 ? 'failed' : r < 0.75 ? 'expired' : ('failed-then-paid' as const)
        const before = tx.status
        const reopenable = before === 'pending' || before === 'failed' || before === 'expired'
        let expected: TxStatus = before
        if (simulation === 'paid' || simulation === 'failed-then-paid')
          expected = reopenable ? 'paid' : before
        else if (before === 'pending') expected = simulation
        count(`sandbox ${simulation} (${expected === before ? 'unchanged' : 'applied'})`)
        const res = await call(
          ctx,
          'POST',
          `/integration/sandbox/transactions/${tx.uuid}/${simulation}`,
          undefined,
          { as: as(tx.m, tx.mode) },
        )
        expectOk(res, 200, `sandbox ${simulation} on ${before}`)
        const body = res.json()
        assert.equal(body.status, expected, `sandbox ${simulation} on ${before}`)
        assert.equal(BigInt(body.settlement_amount), tx.settlement)
        if (expected === 'paid' && before !== 'paid') {
          // The money arrived, once: pending until the hold ends (none in test mode).
          assert.equal(tx.credited, false)
          tx.credited = true
          const a = account(tx.m, tx.mode)
          if (tx.mode === 'test') {
            assert.equal(body.settle_available_at, body.paid_at)
            a.available += tx.settlement
            tx.settled = true
          } else {
            assert.equal(Date.parse(body.settle_available_at) - Date.parse(body.paid_at), 86400_000)
            a.pending += tx.settlement
          }
        }
        tx.status = expected
      }

      async function refund() {
        const refundable = txs.filter((tx) => tx.status === 'paid' || tx.status === 'partially_refunded')
        const tx = refundable.length && chance(0.8) ? pick(refundable) : pick(txs)
        const remaining = tx.amount - tx.refunded
        const r = random()
        const amount =
          r < 0.3
            ? undefined
            : r < 0.75
              ? int(1, Math.max(1, remaining))
              : r < 0.9
                ? remaining + int(1, tx.amount)
                : int(1, Math.max(1, Math.ceil(remaining / 10)))
        const body = {
          transaction_uuid: tx.uuid,
          ...(amount !== undefined && { amount_minor: amount }),
          ...(chance(0.3) && { reason: 'Random walk refund' }),
        }
        const res = await signedPost(tx.m, tx.mode, '/integration/refunds', body)
        if (tx.status !== 'paid' && tx.status !== 'partially_refunded') {
          count('refund: invalid_state (409)')
          return expectError(res, 409, 'invalid_state', `refund of a ${tx.status} transaction`)
        }
        const asked = amount ?? remaining
        if (asked > remaining) {
          count('refund: exceeds the amount (422)')
          expectError(res, 422, 'refund_exceeds_amount', 'refund')
          assert.equal(res.json().error.details.refundable_minor, remaining)
          return
        }
        // The refund's settlement debit is ceil(amount in major units / the transaction's rate) (docs/API.md, Refunds).
        const debit = toMicro(asked, tx.currency, tx.fxRate, 'ceil')
        const a = account(tx.m, tx.mode)
        if (a.available < debit) {
          count('refund: insufficient_balance (422)')
          return expectError(res, 422, 'insufficient_balance', `refund debit ${debit} of ${a.available}`)
        }
        count(amount === undefined ? 'refund: the rest (201)' : 'refund: partial or exact (201)')
        expectOk(res, 201, 'refund')
        const refunded = res.json()
        tx.refunded += asked
        assert.deepEqual(
          [refunded.status, refunded.amount_minor, refunded.cumulative_refunded_minor, refunded.currency],
          ['succeeded', asked, tx.refunded, tx.currency],
        )
        a.available -= debit
        tx.status = tx.refunded === tx.amount ? 'refunded' : 'partially_refunded'
      }

      async function payout() {
        const m = int(0, merchants.length - 1)
        const mode = chance(0.6) ? 'test' : 'live'
        const a = account(m, mode)
        const currency = pick(CURRENCIES)
        const method = chance(0.45) ? 'card' : 'usdt_wallet'
        const declined = method === 'card' && chance(0.2)
        const destination =
          method === 'card'
            ? { card_number: declined ? DECLINED_CARD : pick(CARDS), holder_name: 'Jane Doe' }
            : chance(0.5)
              ? { address: TRC20, network: 'TRC20' }
              : { address: ERC20, network: 'ERC20' }
        const r = random()
        const available = Number(a.available)
        const micro =
          r < 0.45 && available > 1_000_000
            ? float(0.02, 0.5) * available
            : r < 0.7
              ? available * float(1.01, 1.5) + 1_000_000
              : float(1, 500) * 1e6
        const amount = payoutAmountFor(m, currency, micro)

        // How the figures are fixed: now, or by a quote (own and fresh, someone else's, stale, or mismatched).
        const q = random()
        let quoteId: string | undefined
        let quoteProblem: 'quote_expired' | 'validation_failed' | null = null
        let total = payoutTotal(m, amount, currency).total
        if (q < 0.3) {
          const quote = await getQuote(m, mode, amount, currency, method)
          quoteId = quote.quote_id
          total = BigInt(quote.payout_usdt_amount_micro)
        } else if (q < 0.35) {
          // A quote made by another merchant, or by the same one in the other mode.
          const other = chance(0.5) ? (m + 1) % merchants.length : m
          const otherMode = other === m ? (mode === 'test' ? 'live' : 'test') : mode
          quoteId = (await getQuote(other, otherMode, amount, currency, method)).quote_id
          quoteProblem = 'quote_expired'
        } else if (q < 0.4) {
          quoteId = (await getQuote(m, mode, amount, currency, method)).quote_id
          await ctx.db
            .updateTable('payout_quotes')
            .set({ expires_at: new Date(Date.now() - 1000) })
            .where('uuid', '=', quoteId)
            .execute()
          quoteProblem = 'quote_expired'
        } else if (q < 0.43) {
          quoteId = (await getQuote(m, mode, amount + 1, currency, method)).quote_id
          quoteProblem = 'validation_failed'
        }
        const own = payouts.filter((p) => p.m === m && p.mode === mode)
        const reused = own.length && chance(0.04) ? pick(own) : null
        const externalId = reused ? reused.externalId : `walk-po-${serial++}`
        const res = await signedPost(m, mode, '/integration/payouts', {
          external_id: externalId,
          amount,
          currency,
          method,
          destination,
          ...(quoteId && { quote_id: quoteId }),
          ...(chance(0.2) && { metadata: { walk: String(serial) } }),
        })
        if (quoteProblem) {
          count(`payout: ${quoteProblem} (422)`)
          return expectError(res, 422, quoteProblem, 'payout with a quote that does not apply')
        }
        if (reused) {
          count('payout: duplicate external_id (409)')
          return expectError(res, 409, 'conflict', 'payout with a used external_id')
        }
        if (a.available < total) {
          count('payout: insufficient_balance (422)')
          return expectError(res, 422, 'insufficient_balance', `payout of ${total} from ${a.available}`)
        }
        expectOk(res, 201, 'payout')
        const body = res.json()
        assert.equal(BigInt(body.payout_usdt_amount_micro), total)
        assert.equal(body.mode, mode)
        assert.equal(body.quote_id, quoteId ?? null)
        if (declined) {
          // Reserved and released at once: the money is where it was.
          count('payout: created, declined by the provider (201 failed)')
          assert.equal(body.status, 'failed')
        } else {
          count(`payout: created ${method}${quoteId ? ' with a quote' : ''} (201)`)
          assert.equal(body.status, 'processing')
          a.available -= total
          a.reserved += total
        }
        payouts.push({ uuid: body.uuid, m, mode, externalId, total, status: body.status })
      }

      async function simulatePayout() {
        const open = payouts.filter((p) => p.status === 'processing')
        const p = open.length && chance(0.65) ? pick(open) : pick(payouts)
        const outcome = chance(0.5) ? 'completed' : 'failed'
        const applies = p.status === 'processing'
        count(`sandbox payout ${outcome} (${applies ? 'applied' : `on ${p.status}: unchanged`})`)
        const res = await call(ctx, 'POST', `/integration/sandbox/payouts/${p.uuid}/${outcome}`, undefined, {
          as: as(p.m, p.mode),
        })
        expectOk(res, 200, `sandbox payout ${outcome}`)
        assert.equal(res.json().status, applies ? outcome : p.status)
        if (applies) settlePayout(p, outcome)
      }
      function settlePayout(p: ModelPayout, outcome: 'completed' | 'failed') {
        const a = account(p.m, p.mode)
        a.reserved -= p.total
        if (outcome === 'failed') a.available += p.total
        p.status = outcome
      }

      async function settlementJob() {
        count('settlement job')
        const due = txs.filter((tx) => tx.credited && !tx.settled)
        const future = new Date(Date.now() + 2 * 86400_000)
        let settled = 0
        for (;;) {
          const n = await ctx.services.transactions.settleDue(100, future)
          if (n === 0) break
          settled += n
        }
        assert.equal(settled, due.length, 'the settlement job moved every live payment past its hold')
        for (const tx of due) {
          assert.equal(tx.mode, 'live')
          const a = account(tx.m, tx.mode)
          a.pending -= tx.settlement
          a.available += tx.settlement
          tx.settled = true
        }
        for (const m of merchants.keys()) await checkBalance(m, 'live', 'the settlement job')
      }

      async function payoutJob() {
        count('payout job')
        const open = payouts.filter((p) => p.status === 'processing')
        const future = new Date(Date.now() + 3600_000)
        const checked = await ctx.services.payouts.checkDue(1000, future)
        assert.equal(checked, open.length, 'the payout job checked every open payout')
        // What the job did, as the API now reports it.
        for (const p of open) {
          const res = await call(ctx, 'GET', `/integration/payouts/${p.uuid}`, undefined, {
            as: as(p.m, p.mode),
          })
          expectOk(res, 200, 'get payout')
          assert.equal(res.json().status, 'completed')
          settlePayout(p, 'completed')
        }
      }

      async function replay() {
        const candidates = sent.filter(
          (s) =>
            s.status === 201 ||
            [
              'insufficient_balance',
              'refund_exceeds_amount',
              'invalid_state',
              'quote_expired',
              'conflict',
            ].includes(s.code ?? ''),
        )
        const s = pick(candidates)
        if (chance(0.2)) {
          count('replay: same key, another body (422)')
          const res = await call(
            ctx,
            'POST',
            s.url,
            s.url === '/integration/refunds'
              ? { ...s.body, reason: 'changed' }
              : { ...s.body, metadata: { changed: 'yes' } },
            { as: as(s.m, s.mode), auth: 'signature', idempotencyKey: s.key },
          )
          return expectError(res, 422, 'idempotency_key_reused', 'replay with another body')
        }
        count(`replay: ${s.status}${s.code ? ` ${s.code}` : ''}`)
        const res = await call(ctx, 'POST', s.url, s.body, {
          as: as(s.m, s.mode),
          auth: 'signature',
          idempotencyKey: s.key,
        })
        assert.equal(res.statusCode, s.status)
        assert.equal(res.body, s.text)
        assert.equal(res.headers['idempotent-replayed'], 'true')
      }

      // ——— The walk ———
      for (let i = 0; i < 12; i++) await createTransaction()
      for (let step = 0; step < OPERATIONS; step++) {
        const r = random()
        if (r < 0.22 || txs.length === 0) await createTransaction()
        else if (r < 0.46) await simulateTransaction()
        else if (r < 0.62) await refund()
        else if (r < 0.78) await payout()
        else if (r < 0.87) {
          if (payouts.length) await simulatePayout()
          else await payout()
        } else if (r < 0.9) await settlementJob()
        else if (r < 0.92) await payoutJob()
        else if (r < 0.96 && sent.length) await replay()
        else {
          count('balance check')
          await checkBalance(int(0, merchants.length - 1), pick(MODES), `step ${step}`)
        }
      }

      // ——— The end: every balance equals the model, the ledger verifies ———
      for (const m of merchants.keys()) {
        for (const mode of MODES) {
          await checkBalance(m, mode, 'the walk')
          const kept = await ctx.db
            .selectFrom('ledger_accounts')
            .select(['kind', 'balance'])
            .where('merchant_uuid', '=', (merchants[m] as TestMerchant).uuid)
            .where('mode', '=', mode)
            .where('currency', '=', 'USDT')
            .execute()
          const byKind = Object.fromEntries(kept.map((row) => [row.kind, BigInt(row.balance)]))
          const a = account(m, mode)
          assert.deepEqual(
            [byKind.available ?? 0n, byKind.pending ?? 0n, byKind.reserved ?? 0n],
            [a.available, a.pending, a.reserved],
          )
          // Statuses too, page by page through the lists.
          for (const [path, model] of [
            ['/integration/transactions', txs],
            ['/integration/payouts', payouts],
          ] as const) {
            const seen = new Map<string, string>()
            let cursor: string | null = null
            do {
              const url: string = `${path}?per_page=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
              const page = await call(ctx, 'GET', url, undefined, { as: as(m, mode) })
              expectOk(page, 200, url)
              for (const item of page.json().data) seen.set(item.uuid, item.status)
              cursor = page.json().meta.next_cursor
            } while (cursor)
            const expected = new Map<string, string>(
              (model as (ModelTx | ModelPayout)[])
                .filter((x) => x.m === m && x.mode === mode)
                .map((x) => [x.uuid, x.status]),
            )
            assert.deepEqual(seen, expected, `${path} of merchant ${m} in ${mode} mode`)
          }
        }
      }
      const report = await ctx.services.ledger.verify()
      assert.deepEqual(
        { ok: report.ok, mismatches: report.mismatches, unbalanced: report.unbalanced },
        { ok: true, mismatches: [], unbalanced: [] },
      )
      assert.ok(report.entries > 0)

      const operations = Object.entries(counts)
        .filter(([name]) => name !== 'quote')
        .reduce((s, [, n]) => s + n, 0)
      assert.ok(operations >= 500, `${operations} operations`)
      t.diagnostic(
        `seed ${SEED}, ${backend}: ${operations} operations (+${counts.quote ?? 0} quotes) in ${Date.now() - started} ms, ${report.entries} journal entries`,
      )
      for (const [name, n] of Object.entries(counts).sort()) t.diagnostic(`  ${name}: ${n}`)
      const final = [...accounts.entries()].map(
        ([key, a]) => `${key} available ${a.available} pending ${a.pending} reserved ${a.reserved}`,
      )
      t.diagnostic(`final balances: ${final.join('; ')}`)
    })
  })
}

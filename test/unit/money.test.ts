import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  applyMarkupDown,
  applyMarkupUp,
  computeFees,
  convertCeil,
  convertFloor,
  currencyExponent,
  divCeil,
  divFloor,
  divideRates,
  divRoundHalfUp,
  formatDecimal,
  formatMinor,
  isKnownCurrency,
  isPositiveDecimal,
  parseDecimal,
  payoutFigures,
} from '../../src/lib/money.ts'

const MAX_AMOUNT = 100000000000

/**
 * computeFees(amount, fee bps, merchant's share in bps) gives exactly: the fee, the merchant's part of it, the
 * customer's part, the gross and net amounts, and who pays.
 */
function assertFees(
  args: Parameters<typeof computeFees>,
  [fee, merchantPart, customerPart, gross, net, payer]: [number, number, number, number, number, string],
): void {
  assert.deepEqual(computeFees(...args), {
    fee_amount: fee,
    merchant_fee_merchant_amount: merchantPart,
    merchant_fee_customer_amount: customerPart,
    gross_amount: gross,
    net_amount: net,
    fee_payer: payer,
  })
}

/** payoutFigures(...) gives exactly these USDT micro figures: the amount sent, the fee, and their total debited. */
function assertFigures(
  args: Parameters<typeof payoutFigures>,
  [amount, fee, total]: [number, number, number],
): void {
  assert.deepEqual(payoutFigures(...args), {
    amount_usdt_micro: amount,
    fee_usdt_micro: fee,
    payout_usdt_amount_micro: total,
  })
}

/** `rate` marked up (applyMarkupUp) and down (applyMarkupDown) by `bps`: exactly `up` and `down`. */
function assertMarkups(rate: string, bps: number, up: string, down: string): void {
  assert.equal(applyMarkupUp(rate, bps), up)
  assert.equal(applyMarkupDown(rate, bps), down)
}

/** The same conversion rounded down (convertFloor) and up (convertCeil): `floor` and `ceil`. */
function assertConverts(args: Parameters<typeof convertFloor>, floor: number, ceil: number): void {
  assert.equal(convertFloor(...args), floor)
  assert.equal(convertCeil(...args), ceil)
}

describe('currencyExponent', () => {
  it('follows ISO 4217, with USDT in micro units', () => {
    assert.equal(currencyExponent('USD'), 2)
    assert.equal(currencyExponent('EUR'), 2)
    assert.equal(currencyExponent('RUB'), 2)
    assert.equal(currencyExponent('JPY'), 0)
    assert.equal(currencyExponent('KWD'), 3)
    // IDR has exponent 2 in ISO 4217 even though rupiah cents are not used in practice.
    assert.equal(currencyExponent('IDR'), 2)
    assert.equal(currencyExponent('USDT'), 6)
  })

  it('refuses an unknown code', () => {
    assert.throws(() => currencyExponent('XYZ'), /unknown currency/)
  })

  it('knows ISO codes and USDT only', () => {
    for (const code of ['USD', 'USDT']) assert.equal(isKnownCurrency(code), true, code)
    for (const code of ['XYZ', 'usd', '']) assert.equal(isKnownCurrency(code), false, code)
  })
})

describe('integer division with named rounding', () => {
  // Each case: a and b, then a / b by divFloor (towards negative infinity), divCeil (towards positive infinity) and
  // divRoundHalfUp (halves away from zero).
  const cases: [bigint, bigint, bigint, bigint, bigint][] = [
    [7n, 2n, 3n, 4n, 4n],
    [6n, 2n, 3n, 3n, 3n],
    [5n, 2n, 2n, 3n, 3n],
    [3n, 2n, 1n, 2n, 2n],
    [1n, 3n, 0n, 1n, 0n],
    [4n, 3n, 1n, 2n, 1n],
    [5n, 3n, 1n, 2n, 2n],
    [4999n, 10000n, 0n, 1n, 0n],
    [5000n, 10000n, 0n, 1n, 1n],
    [0n, 5n, 0n, 0n, 0n],
    [-1n, 3n, -1n, 0n, 0n],
    [-7n, 2n, -4n, -3n, -4n],
    [-6n, 2n, -3n, -3n, -3n],
    [-5n, 2n, -3n, -2n, -3n],
    [-3n, 2n, -2n, -1n, -2n],
    [-4n, 3n, -2n, -1n, -1n],
    [-5n, 3n, -2n, -1n, -2n],
  ]
  for (const [a, b, floor, ceil, halfUp] of cases)
    it(`${a} / ${b}: floor ${floor}, ceil ${ceil}, half up ${halfUp}`, () => {
      assert.equal(divFloor(a, b), floor)
      assert.equal(divCeil(a, b), ceil)
      assert.equal(divRoundHalfUp(a, b), halfUp)
    })
})

describe('computeFees', () => {
  it('splits the fee between merchant and customer (a worked example of docs/API.md)', () => {
    assertFees([150000, 250, 5000], [3750, 1875, 1875, 151875, 148125, 'split'])
  })

  it('merchant pays all: gross is the amount, net is amount minus fee', () => {
    assertFees([10000, 300, 10000], [300, 300, 0, 10000, 9700, 'merchant'])
  })

  it('customer pays all: gross carries the fee, net is the amount', () => {
    assertFees([10000, 300, 0], [300, 0, 300, 10300, 10000, 'customer'])
  })

  it('rounds the fee half up at the boundary', () => {
    // 1 × 5000 / 10000 = 0.5 → 1; 1 × 4999 / 10000 = 0.4999 → 0
    assert.equal(computeFees(1, 5000, 10000).fee_amount, 1)
    assert.equal(computeFees(1, 4999, 10000).fee_amount, 0)
    // 3 × 5000 / 10000 = 1.5 → 2; 101 × 50 / 10000 = 0.505 → 1; 99 × 50 / 10000 = 0.495 → 0
    assert.equal(computeFees(3, 5000, 10000).fee_amount, 2)
    assert.equal(computeFees(101, 50, 10000).fee_amount, 1)
    assert.equal(computeFees(99, 50, 10000).fee_amount, 0)
  })

  it('rounds the merchant part half up and gives the customer the rest', () => {
    // fee 1, merchant half = 0.5 → 1, customer 0
    assertFees([1, 5000, 5000], [1, 1, 0, 1, 0, 'split'])
    // fee 3, merchant 1/3 (3333 bps) = 0.9999 → 1, customer 2
    assertFees([100, 300, 3333], [3, 1, 2, 102, 99, 'split'])
    // fee 3, merchant 4999 bps = 1.4997 → 1; 5000 bps = 1.5 → 2
    assert.equal(computeFees(100, 300, 4999).merchant_fee_merchant_amount, 1)
    assert.equal(computeFees(100, 300, 5000).merchant_fee_merchant_amount, 2)
  })

  it('zero fee leaves gross and net equal to the amount', () => {
    assertFees([12345, 0, 10000], [0, 0, 0, 12345, 12345, 'merchant'])
  })

  it('is exact for the largest amount and the largest fee', () => {
    assertFees([MAX_AMOUNT, 10000, 0], [MAX_AMOUNT, 0, MAX_AMOUNT, 2 * MAX_AMOUNT, MAX_AMOUNT, 'customer'])
    const odd = computeFees(MAX_AMOUNT - 1, 333, 5001)
    // (10^11 − 1) × 333 / 10000 = 3329999999.9667 → 3330000000
    assert.equal(odd.fee_amount, 3330000000)
    assert.equal(odd.merchant_fee_merchant_amount + odd.merchant_fee_customer_amount, odd.fee_amount)
    assert.equal(odd.gross_amount - odd.net_amount, odd.fee_amount)
  })

  it('always keeps the parts consistent', () => {
    for (const amount of [1, 2, 7, 99, 101, 12345, 150000, 999999999]) {
      for (const feeBps of [0, 1, 49, 50, 250, 9999, 10000]) {
        for (const share of [0, 1, 3333, 5000, 9999, 10000]) {
          const f = computeFees(amount, feeBps, share)
          assert.equal(f.merchant_fee_merchant_amount + f.merchant_fee_customer_amount, f.fee_amount)
          assert.equal(f.gross_amount, amount + f.merchant_fee_customer_amount)
          assert.equal(f.net_amount, f.gross_amount - f.fee_amount)
          assert.ok(f.merchant_fee_customer_amount >= 0 && f.merchant_fee_merchant_amount >= 0)
        }
      }
    }
  })
})

describe('convertFloor / convertCeil', () => {
  // Each case: what it shows, the conversion's arguments (amount, currency, rate, currency), and what it gives
  // rounded down (convertFloor) and up (convertCeil).
  const cases: [string, Parameters<typeof convertFloor>, number, number][] = [
    // 1481.25 / 92.15 = 16.07433532… USDT
    [
      'converts RUB to USDT micro units (a worked example of docs/API.md)',
      [148125, 'RUB', '92.15', 'USDT'],
      16074335,
      16074336,
    ],
    // 10000 / 151.2 = 66.137566137… USDT
    ['handles JPY (exponent 0)', [10000, 'JPY', '151.2', 'USDT'], 66137566, 66137567],
    // 1 USDT at 0.0066 USDT per yen = 151.51… JPY
    ['handles JPY (exponent 0), from USDT', [1000000, 'USDT', '0.0066', 'JPY'], 151, 152],
    // 1.000 KWD / 0.307 = 3.25732899… USDT
    ['handles KWD (exponent 3)', [1000, 'KWD', '0.307', 'USDT'], 3257328, 3257329],
    // 1 USDT → KWD at 3.257 USDT per KWD: 0.30703… KWD
    ['handles KWD (exponent 3), from USDT', [1000000, 'USDT', '3.257', 'KWD'], 307, 308],
    // 0.29 / 0.01 = 29 exactly; as doubles it is 28.999999999999996
    ['is exact where binary floating point is not', [29, 'USD', '0.01', 'USD'], 2900, 2900],
    ['is exact where binary floating point is not, into USDT', [100, 'USD', '1', 'USDT'], 1000000, 1000000],
    // 10^9 RUB / 92.15 = 10851871.947911014… USDT
    [
      'stays exact at the largest amount, in RUB',
      [MAX_AMOUNT, 'RUB', '92.15', 'USDT'],
      10851871947911,
      10851871947912,
    ],
    // 10^11 JPY / 151.2 = 661375661.375661… USDT
    [
      'stays exact at the largest amount, in JPY',
      [MAX_AMOUNT, 'JPY', '151.2', 'USDT'],
      661375661375661,
      661375661375662,
    ],
    // 10^8 KWD / 0.307 = 325732899.0228013… USDT
    [
      'stays exact at the largest amount, in KWD',
      [MAX_AMOUNT, 'KWD', '0.307', 'USDT'],
      325732899022801,
      325732899022802,
    ],
    // 10^9 USD at 1 = 10^15 micro USDT, below 2^53
    ['stays exact at the largest amount, in USD', [MAX_AMOUNT, 'USD', '1', 'USDT'], 10 ** 15, 10 ** 15],
  ]
  for (const [name, args, floor, ceil] of cases) it(name, () => assertConverts(args, floor, ceil))

  it('floor and ceil agree on exact results and differ by one otherwise', () => {
    const amountsAt = { '3': [1, 300], '92.15': [12345], '0.000000000007': [7] }
    for (const [rate, amounts] of Object.entries(amountsAt))
      for (const amount of amounts) {
        const down = convertFloor(amount, 'USD', rate, 'USDT')
        const up = convertCeil(amount, 'USD', rate, 'USDT')
        assert.ok(up - down === 0 || up - down === 1, `${amount} @ ${rate}`)
      }
    assertConverts([300, 'USD', '3', 'USD'], 100, 100)
  })
})

describe('markups and cross rates', () => {
  it('applyMarkupUp and applyMarkupDown multiply by (1 ± bps/10000) exactly, up to their edges', () => {
    assertMarkups('92.15', 150, '93.53225', '90.76775')
    assertMarkups('92.15', 0, '92.15', '92.15')
    assertMarkups('1', 10000, '2', '0')
    assertMarkups('0.307', 1, '0.3070307', '0.3069693')
    // JPY: 151.2 × 1.01 = 152.712; 151.2 × 0.99 = 149.688
    assertMarkups('151.2', 100, '152.712', '149.688')
    // 1 bps on rate 1 (USDT-like): 1.0001 and 0.9999
    assertMarkups('1', 1, '1.0001', '0.9999')
    // 9999 bps: 92.15 × 1.9999 = 184.290785; 92.15 × 0.0001 = 0.009215
    assertMarkups('92.15', 9999, '184.290785', '0.009215')
    // the smallest operator rate: 10^−12 × 1.0001 = 1.0001 × 10^−12, × 0.9999 = 0.9999 × 10^−12; × 1.9999 and
    // × 0.0001 = 10^−16 (exact, beyond 12 digits)
    assertMarkups('0.000000000001', 1, '0.0000000000010001', '0.0000000000009999')
    assertMarkups('0.000000000001', 9999, '0.0000000000019999', '0.0000000000000001')
    // the largest operator rate doubled: 999999999999.999999999999 × 2 = 1999999999999.999999999998; halved to 0
    assertMarkups('999999999999.999999999999', 10000, '1999999999999.999999999998', '0')
  })

  it('divideRates gives a / b to 12 decimals, half up', () => {
    // 92.15 / 0.92 = 100.16304347826086956…
    assert.equal(divideRates('92.15', '0.92'), '100.163043478261')
    assert.equal(divideRates('1', '3'), '0.333333333333')
    assert.equal(divideRates('2', '3'), '0.666666666667')
    assert.equal(divideRates('92.15', '92.15'), '1')
    assert.equal(divideRates('1', '8', 2), '0.13')
    assert.equal(divideRates('1', '8', 3), '0.125')
    assert.equal(divideRates('151.2', '1'), '151.2')
    // At the 12th decimal: 10^−12 / 2 = 0.0000000000005 → half up → 0.000000000001
    assert.equal(divideRates('0.000000000001', '2'), '0.000000000001')
    // 10^−12 / 2.000000000001 = 4.99999999999750… × 10^−13 → just below half → 0
    assert.equal(divideRates('0.000000000001', '2.000000000001'), '0')
  })
})

describe('parseDecimal / formatDecimal', () => {
  it('parses plain decimals into units and scale', () => {
    assert.deepEqual(parseDecimal('92.15'), { units: 9215n, scale: 2 })
    assert.deepEqual(parseDecimal('0'), { units: 0n, scale: 0 })
    assert.deepEqual(parseDecimal('0.307'), { units: 307n, scale: 3 })
    assert.deepEqual(parseDecimal('1.50'), { units: 150n, scale: 2 })
    assert.deepEqual(parseDecimal('0.000000000001'), { units: 1n, scale: 12 })
    assert.deepEqual(parseDecimal('999999999999.999999999999'), {
      units: 999999999999999999999999n,
      scale: 12,
    })
  })

  it('refuses anything but a plain non-negative decimal', () => {
    for (const text of ['', '01', '1.', '.5', '-1', '+1', '1e5', ' 1', '1 ', '1,5', 'NaN']) {
      assert.throws(() => parseDecimal(text), /not a decimal/, JSON.stringify(text))
    }
  })

  it('isPositiveDecimal is true only above zero', () => {
    for (const text of ['0.000000000001', '92.15']) assert.equal(isPositiveDecimal(text), true, text)
    for (const text of ['0', '0.000', '-1', 'abc']) assert.equal(isPositiveDecimal(text), false, text)
    // Operator input is bounded to 12 digits either side; derived rates may carry more (parseDecimal takes them).
    for (const text of ['1.0000000000001', '1000000000000'])
      assert.equal(isPositiveDecimal(text), false, text)
    assert.deepEqual(parseDecimal('1.0000000000001'), { units: 10000000000001n, scale: 13 })
  })

  it('formats the shortest plain string', () => {
    assert.equal(formatDecimal({ units: 921500n, scale: 4 }), '92.15')
    assert.equal(formatDecimal({ units: 0n, scale: 3 }), '0')
    assert.equal(formatDecimal({ units: 5n, scale: 3 }), '0.005')
    assert.equal(formatDecimal({ units: 100n, scale: 0 }), '100')
    assert.equal(formatDecimal({ units: 100n, scale: 2 }), '1')
    assert.equal(formatDecimal({ units: -5n, scale: 2 }), '-0.05')
    assert.equal(formatDecimal({ units: -12345n, scale: 2 }), '-123.45')
  })

  it('round-trips', () => {
    for (const text of ['0', '1', '92.15', '0.307', '151.2', '0.000000000001', '123456789012.5']) {
      assert.equal(formatDecimal(parseDecimal(text)), text)
    }
  })
})

describe('formatMinor', () => {
  // Each case: an amount in minor units, its currency, and how it is written: exactly the currency's exponent of
  // digits after the point, and the sign of a negative amount.
  const cases: [number, string, string][] = [
    [54259360, 'USDT', '54.259360 USDT'],
    [16074335, 'USDT', '16.074335 USDT'],
    [1, 'USDT', '0.000001 USDT'],
    [5, 'USD', '0.05 USD'],
    [150, 'USD', '1.50 USD'],
    [0, 'USD', '0.00 USD'],
    [1000, 'JPY', '1000 JPY'],
    [0, 'JPY', '0 JPY'],
    [1, 'KWD', '0.001 KWD'],
    [1500, 'KWD', '1.500 KWD'],
    [MAX_AMOUNT, 'IDR', '1000000000.00 IDR'],
    [-150, 'USD', '-1.50 USD'],
    [-1, 'USDT', '-0.000001 USDT'],
  ]
  for (const [minor, currency, written] of cases)
    it(`${minor} ${currency} is ${written}`, () => assert.equal(formatMinor(minor, currency), written))
})

describe('derived rates carry more digits than operator input', () => {
  it('a markup on a 12-decimal cross rate stays exact and converts', () => {
    const cross = divideRates('92.15', '0.92')
    const marked = applyMarkupUp(cross, 100)
    assert.equal(marked, '101.16467391304361')
    // floor(1500.00 RUB / 101.16467391304361 RUB per EUR) in cents = 1482
    assert.equal(convertFloor(150000, 'RUB', marked, 'EUR'), 1482)
  })
})

describe('payoutFigures (docs/API.md, Payouts)', () => {
  // amount_usdt_micro = ceil(amount in major units / payout rate) in USDT micro;
  // fee = round_half_up(amount_usdt_micro × payout_fee_bps / 10000) + payout_fixed_fee_micro; total = the sum.

  // Each case: what it shows, payoutFigures' arguments (amount, currency, payout rate, fee bps, fixed fee micro),
  // and the figures it gives (amount_usdt_micro, fee_usdt_micro, payout_usdt_amount_micro), worked out above it.
  const cases: [string, Parameters<typeof payoutFigures>, [number, number, number]][] = [
    // 100.00 USD / 1 = 100 USDT = 100000000 micro; fee 100000000 × 100 / 10000 = 1000000 (exact) + 1000000 fixed
    // = 2000000; total 100000000 + 2000000 = 102000000
    ['USD at rate 1', [10000, 'USD', '1', 100, 1000000], [100000000, 2000000, 102000000]],
    // payout rate = 92.15 × (1 − 150/10000) = 92.15 × 0.985 = 90.76775
    // 1500.00 RUB / 90.76775 = 16.5256933216919…  USDT; check: 90.76775 × 16.525693 = 1499.99997080075 < 1500
    // < 90.76775 × 16.525694 = 1500.0000615685, so ceil = 16.525694 USDT = 16525694 micro
    // fee: 16525694 × 100 / 10000 = 165256.94 → 165257, + 500000 fixed = 665257; total 16525694 + 665257 = 17190951
    [
      'RUB at the payout rate derived from a 150 bps markup',
      [150000, 'RUB', '90.76775', 100, 500000],
      [16525694, 665257, 17190951],
    ],
    // 460.75 RUB / 92.15 = 5 exactly (92.15 × 5 = 460.75) → 5000000 micro, no ceil step
    // fee: 5000000 × 150 / 10000 = 75000 exactly; total 5075000
    ['an exact division is not rounded', [46075, 'RUB', '92.15', 150, 0], [5000000, 75000, 5075000]],
    // 1.00 USD / 3 = 0.333333(3) USDT = 333333.33… micro → 333334
    ['rounds the USDT amount up: a third of a micro', [100, 'USD', '3', 0, 0], [333334, 0, 333334]],
    // 1.00 USD / 0.999999999999 = 1.000000000001000… USDT = 1000000.000001… micro → 1000001 (one micro more)
    [
      'rounds the USDT amount up by one micro for the smallest excess',
      [100, 'USD', '0.999999999999', 0, 0],
      [1000001, 0, 1000001],
    ],
    // 1 JPY / 999999999999.999999999999 ≈ 10^−12 USDT = 0.000001 micro: ceil never sends nothing → 1 micro;
    // fee 1 × 10000 / 10000 = 1; total 2
    [
      'rounds the USDT amount up: never nothing',
      [1, 'JPY', '999999999999.999999999999', 10000, 0],
      [1, 1, 2],
    ],
    // 0.01 USD / 8 = 0.00125 USDT = 1250 micro (exact); fee 1250 × 4 / 10000 = 0.5 → 1; total 1251
    ['rounds a fee of exactly half a micro up', [1, 'USD', '8', 4, 0], [1250, 1, 1251]],
    // 15000 micro USDT at rate 1; fee 15000 × 1 / 10000 = 1.5 → 2; total 15002
    ['rounds a fee of exactly half a micro up, in USDT', [15000, 'USDT', '1', 1, 0], [15000, 2, 15002]],
    // 3 JPY / 200.0134 = 0.0149989950673… USDT; check: 200.0134 × 0.014998 = 2.9998009732 < 3
    // < 200.0134 × 0.014999 = 3.0000009866, so ceil = 14999 micro; fee 14999 × 1 / 10000 = 1.4999 → 1; total 15000
    ['rounds a fee just below half a micro down', [3, 'JPY', '200.0134', 1, 0], [14999, 1, 15000]],
    // 14999 micro USDT at rate 1; fee 14999 / 10000 = 1.4999 → 1 (one micro less in the amount, one less fee)
    ['rounds a fee just below half a micro down, in USDT', [14999, 'USDT', '1', 1, 0], [14999, 1, 15000]],
    // payout rate = 151.2 × (1 − 100/10000) = 151.2 × 0.99 = 149.688
    // 10000 JPY / 149.688 = 66.8056223611779… USDT; check: 149.688 × 66.805622 = 9999.999945936 < 10000
    // < 149.688 × 66.805623 = 10000.000095624, so ceil = 66805623 micro
    // fee: 66805623 × 150 / 10000 = 1002084.345 → 1002084, + 1000000 = 2002084; total 66805623 + 2002084 = 68807707
    ['JPY (exponent 0)', [10000, 'JPY', '149.688', 150, 1000000], [66805623, 2002084, 68807707]],
    // 1.000 KWD / 0.307 = 3.25732899… USDT = 3257328.99… micro → 3257329
    // fee: 3257329 × 250 / 10000 = 81433.225 → 81433; total 3257329 + 81433 = 3338762
    ['KWD (exponent 3)', [1000, 'KWD', '0.307', 250, 0], [3257329, 81433, 3338762]],
    // 5.000000 USDT / 1 = 5000000 micro; fee 5000000 × 100 / 10000 = 50000 + 1000000 = 1050000; total 6050000
    ['USDT itself (rate 1, exponent 6)', [5000000, 'USDT', '1', 100, 1000000], [5000000, 1050000, 6050000]],
    // 1 micro USDT → 1 micro; fee 1 × 9999 / 10000 = 0.9999 → 1; total 2
    ['USDT itself: its smallest amount', [1, 'USDT', '1', 9999, 0], [1, 1, 2]],
    // 10^9 RUB / 90.76775 = 11017128.8811279336… USDT; check: 90.76775 × 11017128.881127 = 999999999.99991525425
    // < 10^9 < 90.76775 × 11017128.881128 = 1000000000.000006022, so ceil = 11017128881128 micro
    // fee: 11017128881128 × 150 / 10000 = 165256933216.92 → 165256933217, + 1000000 = 165257933217
    // total 11017128881128 + 165257933217 = 11182386814345
    [
      'is exact at the largest amount, in RUB',
      [MAX_AMOUNT, 'RUB', '90.76775', 150, 1000000],
      [11017128881128, 165257933217, 11182386814345],
    ],
    // 10^11 JPY / 149.688 = 668056223.61177916… USDT → ceil 668056223611780 micro
    // fee: 668056223611780 × 150 / 10000 = 10020843354176.7 → 10020843354177, + 1000000 = 10020844354177
    // total 668056223611780 + 10020844354177 = 678077067965957
    [
      'is exact at the largest amount, in JPY',
      [MAX_AMOUNT, 'JPY', '149.688', 150, 1000000],
      [668056223611780, 10020844354177, 678077067965957],
    ],
    // 10^9 USD / 1 = 10^15 micro; fee 10^15 × 10000 / 10000 = 10^15; total 2 × 10^15 (< 2^53 − 1)
    [
      'is exact at the largest amount, in USD',
      [MAX_AMOUNT, 'USD', '1', 10000, 0],
      [10 ** 15, 10 ** 15, 2 * 10 ** 15],
    ],
  ]
  for (const [name, args, figures] of cases) it(name, () => assertFigures(args, figures))

  it('is null when the total would exceed 2^53 − 1', () => {
    // 1.00 USD / 0.000000000001 = 10^12 USDT = 10^18 micro > 2^53 − 1 = 9007199254740991
    assert.equal(payoutFigures(100, 'USD', '0.000000000001', 0, 0), null)
    // 10^9 USD / 0.125 = 8 × 10^9 USDT = 8 × 10^15 micro (< 2^53 − 1 on its own)
    // fee 1000 bps: 8 × 10^14 → total 8.8 × 10^15 ≤ 9007199254740991: returned
    assertFigures([MAX_AMOUNT, 'USD', '0.125', 1000, 0], [8 * 10 ** 15, 8 * 10 ** 14, 8800000000000000])
    // fee 1500 bps: 1.2 × 10^15 → total 9.2 × 10^15 > 9007199254740991: null (the fee alone tips it over)
    assert.equal(payoutFigures(MAX_AMOUNT, 'USD', '0.125', 1500, 0), null)
    // The exact edge: 10^11 micro USDT + fixed 9007099254740991 = 9007199254740991 = 2^53 − 1 → returned; one more → null
    assertFigures(
      [MAX_AMOUNT, 'USDT', '1', 0, 9007099254740991],
      [MAX_AMOUNT, 9007099254740991, Number.MAX_SAFE_INTEGER],
    )
    assert.equal(payoutFigures(MAX_AMOUNT, 'USDT', '1', 0, 9007099254740992), null)
  })
})

describe('the rounding rules of docs/API.md (Transactions, Refunds, Payouts, Rates): boundary cases', () => {
  it('settlement floors: a sub-micro excess is dropped, a sub-micro shortfall costs one micro', () => {
    // 1.00 USD / 0.999999999999 = 1000000.000001… micro → floor 1000000 (ceil 1000001)
    assertConverts([100, 'USD', '0.999999999999', 'USDT'], 1000000, 1000001)
    // 1.00 USD / 1.000000000001 = 0.999999999999000… USDT = 999999.999999… micro → floor 999999 (ceil 1000000)
    assertConverts([100, 'USD', '1.000000000001', 'USDT'], 999999, 1000000)
    // 1 JPY / 999999999999.999999999999 ≈ 10^−6 micro → floor 0 (ceil 1)
    assertConverts([1, 'JPY', '999999999999.999999999999', 'USDT'], 0, 1)
  })

  it('settlement of the smallest JPY and KWD amounts', () => {
    // 1 JPY / 151.2 = 0.0066137566… USDT = 6613.7566… micro → floor 6613, ceil 6614
    assertConverts([1, 'JPY', '151.2', 'USDT'], 6613, 6614)
    // 0.001 KWD / 0.307 = 0.0032573289… USDT = 3257.3289… micro → floor 3257, ceil 3258
    assertConverts([1, 'KWD', '0.307', 'USDT'], 3257, 3258)
  })

  it('USDT settled in USDT at rate "1" is the identity, up to the largest amount', () => {
    // x micro / 1 = x micro
    assertConverts([16074335, 'USDT', '1', 'USDT'], 16074335, 16074335)
    assertConverts([MAX_AMOUNT, 'USDT', '1', 'USDT'], MAX_AMOUNT, MAX_AMOUNT)
  })

  it('refund debits round up', () => {
    // a partial refund of 500.00 RUB at 92.15: 5.42593597… USDT = 5425935.97… micro → ceil 5425936 (floor 5425935)
    assertConverts([50000, 'RUB', '92.15', 'USDT'], 5425935, 5425936)
    // an exact refund: 460.75 RUB / 92.15 = 5 USDT → 5000000 both ways
    assert.equal(convertCeil(46075, 'RUB', '92.15', 'USDT'), 5000000)
    // largest KWD: 10^8 KWD / 0.307 = 325732899.0228013… USDT → ceil 325732899022802 micro
    assert.equal(convertCeil(MAX_AMOUNT, 'KWD', '0.307', 'USDT'), 325732899022802)
  })

  it('pay-in rate with a markup, then settle down and refund up', () => {
    // pay_in = 92.15 × (1 + 150/10000) = 92.15 × 1.015 = 93.53225
    assert.equal(applyMarkupUp('92.15', 150), '93.53225')
    // net 1481.25 RUB / 93.53225 = 15.83678356930… USDT → settle floor 15836783, refund ceil 15836784
    assertConverts([148125, 'RUB', '93.53225', 'USDT'], 15836783, 15836784)
  })

  it('fee rounding and the split at their edges', () => {
    // 44999 × 1 / 10000 = 4.4999 → 4; 45000 × 1 / 10000 = 4.5 → 5 (JPY-sized amounts)
    assert.equal(computeFees(44999, 1, 10000).fee_amount, 4)
    assert.equal(computeFees(45000, 1, 10000).fee_amount, 5)
    // share 1 bps: merchant 100 × 1 / 10000 = 0.01 → 0, customer 100; still a split
    assertFees([10000, 100, 1], [100, 0, 100, 10100, 10000, 'split'])
    // share 9999 bps: merchant 100 × 9999 / 10000 = 99.99 → 100, customer 0; still a split
    assertFees([10000, 100, 9999], [100, 100, 0, 10000, 9900, 'split'])
    // largest amount, 1 bps, half split: fee 10^11 / 10000 = 10^7; merchant 5 × 10^6, customer 5 × 10^6;
    // gross 10^11 + 5 × 10^6 = 100005000000; net 100005000000 − 10^7 = 99995000000
    assertFees([MAX_AMOUNT, 1, 5000], [10000000, 5000000, 5000000, 100005000000, 99995000000, 'split'])
  })
})

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
} from '../../src/lib/money.ts'

const MAX_AMOUNT = 100000000000

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
    assert.equal(isKnownCurrency('USD'), true)
    assert.equal(isKnownCurrency('USDT'), true)
    assert.equal(isKnownCurrency('XYZ'), false)
    assert.equal(isKnownCurrency('usd'), false)
    assert.equal(isKnownCurrency(''), false)
  })
})

describe('integer division with named rounding', () => {
  it('divFloor rounds towards negative infinity', () => {
    assert.equal(divFloor(7n, 2n), 3n)
    assert.equal(divFloor(6n, 2n), 3n)
    assert.equal(divFloor(-7n, 2n), -4n)
    assert.equal(divFloor(-6n, 2n), -3n)
    assert.equal(divFloor(-1n, 3n), -1n)
    assert.equal(divFloor(0n, 5n), 0n)
  })

  it('divCeil rounds towards positive infinity', () => {
    assert.equal(divCeil(7n, 2n), 4n)
    assert.equal(divCeil(6n, 2n), 3n)
    assert.equal(divCeil(1n, 3n), 1n)
    assert.equal(divCeil(-7n, 2n), -3n)
    assert.equal(divCeil(-6n, 2n), -3n)
    assert.equal(divCeil(0n, 5n), 0n)
  })

  it('divRoundHalfUp rounds halves away from zero', () => {
    assert.equal(divRoundHalfUp(5n, 2n), 3n)
    assert.equal(divRoundHalfUp(3n, 2n), 2n)
    assert.equal(divRoundHalfUp(4n, 3n), 1n)
    assert.equal(divRoundHalfUp(5n, 3n), 2n)
    assert.equal(divRoundHalfUp(4999n, 10000n), 0n)
    assert.equal(divRoundHalfUp(5000n, 10000n), 1n)
    assert.equal(divRoundHalfUp(-5n, 2n), -3n)
    assert.equal(divRoundHalfUp(-3n, 2n), -2n)
    assert.equal(divRoundHalfUp(-4n, 3n), -1n)
    assert.equal(divRoundHalfUp(-5n, 3n), -2n)
    assert.equal(divRoundHalfUp(0n, 7n), 0n)
  })
})

describe('computeFees', () => {
  it('splits the fee between merchant and customer (contract §6.1 example)', () => {
    assert.deepEqual(computeFees(150000, 250, 5000), {
      fee_amount: 3750,
      merchant_fee_merchant_amount: 1875,
      merchant_fee_customer_amount: 1875,
      gross_amount: 151875,
      net_amount: 148125,
      fee_payer: 'split',
    })
  })

  it('merchant pays all: gross is the amount, net is amount minus fee', () => {
    assert.deepEqual(computeFees(10000, 300, 10000), {
      fee_amount: 300,
      merchant_fee_merchant_amount: 300,
      merchant_fee_customer_amount: 0,
      gross_amount: 10000,
      net_amount: 9700,
      fee_payer: 'merchant',
    })
  })

  it('customer pays all: gross carries the fee, net is the amount', () => {
    assert.deepEqual(computeFees(10000, 300, 0), {
      fee_amount: 300,
      merchant_fee_merchant_amount: 0,
      merchant_fee_customer_amount: 300,
      gross_amount: 10300,
      net_amount: 10000,
      fee_payer: 'customer',
    })
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
    const half = computeFees(1, 5000, 5000)
    assert.equal(half.fee_amount, 1)
    assert.equal(half.merchant_fee_merchant_amount, 1)
    assert.equal(half.merchant_fee_customer_amount, 0)
    assert.equal(half.gross_amount, 1)
    assert.equal(half.net_amount, 0)
    // fee 3, merchant 1/3 (3333 bps) = 0.9999 → 1, customer 2
    const third = computeFees(100, 300, 3333)
    assert.equal(third.fee_amount, 3)
    assert.equal(third.merchant_fee_merchant_amount, 1)
    assert.equal(third.merchant_fee_customer_amount, 2)
    assert.equal(third.gross_amount, 102)
    assert.equal(third.net_amount, 99)
    // fee 3, merchant 4999 bps = 1.4997 → 1; 5000 bps = 1.5 → 2
    assert.equal(computeFees(100, 300, 4999).merchant_fee_merchant_amount, 1)
    assert.equal(computeFees(100, 300, 5000).merchant_fee_merchant_amount, 2)
  })

  it('zero fee leaves gross and net equal to the amount', () => {
    const fees = computeFees(12345, 0, 10000)
    assert.equal(fees.fee_amount, 0)
    assert.equal(fees.gross_amount, 12345)
    assert.equal(fees.net_amount, 12345)
  })

  it('is exact for the largest amount and the largest fee', () => {
    const fees = computeFees(MAX_AMOUNT, 10000, 0)
    assert.equal(fees.fee_amount, MAX_AMOUNT)
    assert.equal(fees.gross_amount, 2 * MAX_AMOUNT)
    assert.equal(fees.net_amount, MAX_AMOUNT)
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
  it('converts RUB to USDT micro units (contract §6.1 example)', () => {
    // 1481.25 / 92.15 = 16.07433532… USDT
    assert.equal(convertFloor(148125, 'RUB', '92.15', 'USDT'), 16074335)
    assert.equal(convertCeil(148125, 'RUB', '92.15', 'USDT'), 16074336)
  })

  it('handles JPY (exponent 0)', () => {
    // 10000 / 151.2 = 66.137566137… USDT
    assert.equal(convertFloor(10000, 'JPY', '151.2', 'USDT'), 66137566)
    assert.equal(convertCeil(10000, 'JPY', '151.2', 'USDT'), 66137567)
    // 1 USDT at 0.0066 USDT per yen = 151.51… JPY
    assert.equal(convertFloor(1000000, 'USDT', '0.0066', 'JPY'), 151)
    assert.equal(convertCeil(1000000, 'USDT', '0.0066', 'JPY'), 152)
  })

  it('handles KWD (exponent 3)', () => {
    // 1.000 KWD / 0.307 = 3.25732899… USDT
    assert.equal(convertFloor(1000, 'KWD', '0.307', 'USDT'), 3257328)
    assert.equal(convertCeil(1000, 'KWD', '0.307', 'USDT'), 3257329)
    // 1 USDT → KWD at 3.257 USDT per KWD: 0.30703… KWD
    assert.equal(convertFloor(1000000, 'USDT', '3.257', 'KWD'), 307)
    assert.equal(convertCeil(1000000, 'USDT', '3.257', 'KWD'), 308)
  })

  it('is exact where binary floating point is not', () => {
    // 0.29 / 0.01 = 29 exactly; as doubles it is 28.999999999999996
    assert.equal(convertFloor(29, 'USD', '0.01', 'USD'), 2900)
    assert.equal(convertCeil(29, 'USD', '0.01', 'USD'), 2900)
    assert.equal(convertFloor(100, 'USD', '1', 'USDT'), 1000000)
    assert.equal(convertCeil(100, 'USD', '1', 'USDT'), 1000000)
  })

  it('stays exact at the largest amount', () => {
    // 10^9 RUB / 92.15 = 10851871.947911014… USDT
    assert.equal(convertFloor(MAX_AMOUNT, 'RUB', '92.15', 'USDT'), 10851871947911)
    assert.equal(convertCeil(MAX_AMOUNT, 'RUB', '92.15', 'USDT'), 10851871947912)
    // 10^11 JPY / 151.2 = 661375661.375661… USDT
    assert.equal(convertFloor(MAX_AMOUNT, 'JPY', '151.2', 'USDT'), 661375661375661)
    assert.equal(convertCeil(MAX_AMOUNT, 'JPY', '151.2', 'USDT'), 661375661375662)
    // 10^8 KWD / 0.307 = 325732899.0228013… USDT
    assert.equal(convertFloor(MAX_AMOUNT, 'KWD', '0.307', 'USDT'), 325732899022801)
    // 10^9 USD at 1 = 10^15 micro USDT, below 2^53
    assert.equal(convertFloor(MAX_AMOUNT, 'USD', '1', 'USDT'), 10 ** 15)
  })

  it('floor and ceil agree on exact results and differ by one otherwise', () => {
    for (const [amount, rate] of [
      [1, '3'],
      [300, '3'],
      [12345, '92.15'],
      [7, '0.000000000007'],
    ] as const) {
      const down = convertFloor(amount, 'USD', rate, 'USDT')
      const up = convertCeil(amount, 'USD', rate, 'USDT')
      assert.ok(up - down === 0 || up - down === 1, `${amount} @ ${rate}`)
    }
    assert.equal(convertFloor(300, 'USD', '3', 'USD'), 100)
    assert.equal(convertCeil(300, 'USD', '3', 'USD'), 100)
  })
})

describe('markups and cross rates', () => {
  it('applyMarkupUp multiplies by (1 + bps/10000) exactly', () => {
    assert.equal(applyMarkupUp('92.15', 150), '93.53225')
    assert.equal(applyMarkupUp('92.15', 0), '92.15')
    assert.equal(applyMarkupUp('1', 10000), '2')
    assert.equal(applyMarkupUp('0.307', 1), '0.3070307')
  })

  it('applyMarkupDown multiplies by (1 − bps/10000) exactly', () => {
    assert.equal(applyMarkupDown('92.15', 150), '90.76775')
    assert.equal(applyMarkupDown('92.15', 0), '92.15')
    assert.equal(applyMarkupDown('1', 10000), '0')
    assert.equal(applyMarkupDown('0.307', 1), '0.3069693')
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
    assert.equal(isPositiveDecimal('0.000000000001'), true)
    assert.equal(isPositiveDecimal('92.15'), true)
    assert.equal(isPositiveDecimal('0'), false)
    assert.equal(isPositiveDecimal('0.000'), false)
    assert.equal(isPositiveDecimal('-1'), false)
    assert.equal(isPositiveDecimal('abc'), false)
    // Operator input is bounded to 12 digits either side; derived rates may carry more (parseDecimal takes them).
    assert.equal(isPositiveDecimal('1.0000000000001'), false)
    assert.equal(isPositiveDecimal('1000000000000'), false)
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
  it('shows exactly the currency exponent', () => {
    assert.equal(formatMinor(54259360, 'USDT'), '54.259360 USDT')
    assert.equal(formatMinor(16074335, 'USDT'), '16.074335 USDT')
    assert.equal(formatMinor(1, 'USDT'), '0.000001 USDT')
    assert.equal(formatMinor(5, 'USD'), '0.05 USD')
    assert.equal(formatMinor(150, 'USD'), '1.50 USD')
    assert.equal(formatMinor(0, 'USD'), '0.00 USD')
    assert.equal(formatMinor(1000, 'JPY'), '1000 JPY')
    assert.equal(formatMinor(0, 'JPY'), '0 JPY')
    assert.equal(formatMinor(1, 'KWD'), '0.001 KWD')
    assert.equal(formatMinor(1500, 'KWD'), '1.500 KWD')
    assert.equal(formatMinor(MAX_AMOUNT, 'IDR'), '1000000000.00 IDR')
  })

  it('keeps the sign of negative amounts', () => {
    assert.equal(formatMinor(-150, 'USD'), '-1.50 USD')
    assert.equal(formatMinor(-1, 'USDT'), '-0.000001 USDT')
  })
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

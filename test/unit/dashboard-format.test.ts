import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  change,
  inSettlement,
  money,
  payoutFigures,
  prettyJson,
  rounded,
  toMajorText,
  toMinor,
} from '../../dashboard/src/format.ts'

describe("the dashboard's amounts", () => {
  it('writes minor units exactly, in each currency’s own digits', () => {
    assert.equal(money(150000, 'RUB'), '1,500.00 RUB')
    assert.equal(money(5, 'RUB'), '0.05 RUB')
    assert.equal(money(0, 'RUB'), '0 RUB')
    assert.equal(money(0, 'USDT'), '0 USDT')
    assert.equal(money(-1, 'USDT'), '−0.000001 USDT')
    assert.equal(money(1_000_000_000_010, 'USDT'), '1,000,000.00001 USDT')
    assert.equal(money(-1234, 'EUR'), '−12.34 EUR')
    assert.equal(money(1500, 'JPY'), '1,500 JPY')
    assert.equal(money(1234, 'KWD'), '1.234 KWD')
    assert.equal(money(16277807, 'USDT'), '16.277807 USDT')
    // Past 2^53 / 100 a float division would round; the text is made from the integer's digits.
    assert.equal(money(9007199254740991, 'RUB'), '90,071,992,547,409.91 RUB')
  })

  it('reads what a person types back into minor units, or refuses it', () => {
    assert.equal(toMinor('12.5', 'RUB'), 1250)
    assert.equal(toMinor(' 12,50 ', 'RUB'), 1250)
    assert.equal(toMinor('400', 'RUB'), 40000)
    assert.equal(toMinor('0.05', 'RUB'), 5)
    assert.equal(toMinor('1500', 'JPY'), 1500)
    assert.equal(toMinor('1.5', 'JPY'), null)
    assert.equal(toMinor('1.001', 'RUB'), null)
    for (const bad of ['', 'abc', '-1', '1e3', '1.2.3', '12 00']) assert.equal(toMinor(bad, 'RUB'), null, bad)
  })

  it('fills a form field with what it shows, and reads it back to the same amount', () => {
    for (const [minor, currency] of [
      [150000, 'RUB'],
      [123456789, 'RUB'],
      [7, 'JPY'],
      [1234, 'KWD'],
    ] as const) {
      const text = toMajorText(minor, currency)
      assert.doesNotMatch(text, /,/)
      assert.equal(toMinor(text, currency), minor)
    }
  })
})

describe("the dashboard's payout figures", () => {
  it('drops only the zeros USDT trails past two digits, and keeps every digit that counts', () => {
    assert.equal(money(25000000, 'USDT'), '25.00 USDT')
    assert.equal(money(1250000, 'USDT'), '1.25 USDT')
    assert.equal(money(26250000, 'USDT'), '26.25 USDT')
    assert.equal(money(16277807, 'USDT'), '16.277807 USDT')
    assert.equal(money(1234500, 'USDT'), '1.2345 USDT')
    assert.equal(money(150000, 'RUB'), '1,500.00 RUB')
    assert.equal(money(1500, 'JPY'), '1,500 JPY')
  })

  it('names what the recipient gets, the fee and the total debited, not the total as the amount paid out', () => {
    const usdt = { amount: 25000000, currency: 'USDT', amount_usdt_micro: 25000000 }
    const figures = { fee_usdt_micro: 1250000, payout_usdt_amount_micro: 26250000 }
    assert.deepEqual(payoutFigures({ method: 'usdt_wallet', ...usdt, ...figures }), {
      recipient: '25.00 USDT',
      fee: '1.25 USDT',
      total: '26.25 USDT',
    })
    // A card is paid in its own currency; a wallet in USDT whatever currency the amount was asked in.
    const rub = { amount: 250000, currency: 'RUB', amount_usdt_micro: 27130000, ...figures }
    assert.equal(payoutFigures({ method: 'card', ...rub }).recipient, '2,500.00 RUB (27.13 USDT)')
    assert.equal(payoutFigures({ method: 'usdt_wallet', ...rub }).recipient, '27.13 USDT (2,500.00 RUB)')
  })
})

describe("the home page's figures", () => {
  it('converts to the settlement currency at a pay-in rate, in its minor units', () => {
    assert.equal(inSettlement(150000, 'RUB', 'USDT', '93.75'), 16_000_000)
    assert.equal(inSettlement(150000, 'USDT', 'USDT', '1'), 150000)
    assert.equal(inSettlement(1500, 'JPY', 'USD', '150'), 1000)
    assert.equal(inSettlement(100, 'RUB', 'USDT', '0'), 0)
    assert.equal(inSettlement(100, 'RUB', 'USDT', 'not a rate'), 0)
  })

  it('rounds an estimate to hundredths', () => {
    assert.equal(money(rounded(633_973_630, 'USDT'), 'USDT'), '633.97 USDT')
    assert.equal(money(rounded(1_234_567, 'RUB'), 'RUB'), '12,345.67 RUB')
    assert.equal(money(rounded(1_500, 'JPY'), 'JPY'), '1,500 JPY')
  })

  it('says how a figure changed from the previous period', () => {
    assert.equal(change(120, 100), '+20.0\u00a0%')
    assert.equal(change(97, 100), '−3.0\u00a0%')
    assert.equal(change(100, 100), 'no change')
    assert.equal(change(5, 0), 'new')
    assert.equal(change(0, 0), 'no change')
  })
})

describe("the dashboard's JSON bodies", () => {
  it('lays JSON out two spaces to a level, every digit kept, and leaves other text alone', () => {
    assert.equal(
      prettyJson('{"a":1,"b":[true,null,{}],"c":{"d":"x, {y}: \\"z\\""},"e":[]}'),
      '{\n  "a": 1,\n  "b": [\n    true,\n    null,\n    {}\n  ],\n  "c": {\n    "d": "x, {y}: \\"z\\""\n  },\n  "e": []\n}',
    )
    assert.equal(prettyJson('{"amount":12345678901234567890}'), '{\n  "amount": 12345678901234567890\n}')
    assert.equal(prettyJson('{ "a" : [ 1 , 2 ] }'), '{\n  "a": [\n    1,\n    2\n  ]\n}')
    assert.equal(prettyJson('OK'), 'OK')
    assert.equal(prettyJson('<html>{"a":1}</html>'), '<html>{"a":1}</html>')
    assert.equal(prettyJson('"text"'), '"text"')
  })
})

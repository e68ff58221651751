import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { money, toMajorText, toMinor } from '../../dashboard/src/format.ts'

describe("the dashboard's amounts", () => {
  it('writes minor units exactly, in each currency’s own digits', () => {
    assert.equal(money(150000, 'RUB'), '1,500.00 RUB')
    assert.equal(money(5, 'RUB'), '0.05 RUB')
    assert.equal(money(0, 'RUB'), '0.00 RUB')
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

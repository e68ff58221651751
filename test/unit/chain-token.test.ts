import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decodeFunctionData, erc20Abi, maxUint256 } from 'viem'
import {
  minorToTokenUnits,
  tokenUnitsToMinor,
  transferCalldata,
  USDT_EXPONENT,
} from '../../src/chain/token.ts'
import { seededRandom } from '../helpers/random.ts'

describe('token units', () => {
  it('are the micro units of USDT for a 6-decimal token', () => {
    assert.equal(USDT_EXPONENT, 6)
    assert.equal(minorToTokenUnits(25_000_000, 6), 25_000_000n)
    assert.equal(tokenUnitsToMinor(25_000_000n, 6), 25_000_000n)
    assert.equal(minorToTokenUnits(0, 6), 0n)
  })

  it('scale up exactly for a token with more decimals', () => {
    assert.equal(minorToTokenUnits(1, 18), 1_000_000_000_000n)
    assert.equal(minorToTokenUnits(Number.MAX_SAFE_INTEGER, 18), 9_007_199_254_740_991_000_000_000_000n)
    assert.equal(tokenUnitsToMinor(3_000_000_000_000n, 18), 3n)
    assert.equal(tokenUnitsToMinor(10n ** 40n, 18), 10n ** 28n)
  })

  it('refuse a fraction of the smaller unit', () => {
    assert.throws(() => tokenUnitsToMinor(1_000_000_000_001n, 18), RangeError)
    assert.throws(() => tokenUnitsToMinor(999_999_999_999n, 18), RangeError)
    // a 2-decimal token cannot carry a micro unit, nor anything under a cent
    assert.equal(minorToTokenUnits(1_230_000, 2), 123n)
    assert.throws(() => minorToTokenUnits(1_230_001, 2), RangeError)
    assert.throws(() => minorToTokenUnits(5_000, 2), RangeError)
    assert.equal(tokenUnitsToMinor(123n, 2), 1_230_000n)
  })

  it('refuse negative amounts, fractional numbers and bad digit counts', () => {
    assert.throws(() => minorToTokenUnits(-1, 6), RangeError)
    assert.throws(() => minorToTokenUnits(-1n, 18), RangeError)
    assert.throws(() => tokenUnitsToMinor(-1n, 6), RangeError)
    assert.throws(() => minorToTokenUnits(1.5, 6), RangeError)
    assert.throws(() => minorToTokenUnits(Number.MAX_SAFE_INTEGER + 1, 6), RangeError)
    assert.throws(() => minorToTokenUnits(Number.NaN, 6), RangeError)
    assert.throws(() => minorToTokenUnits(1, -1), RangeError)
    assert.throws(() => minorToTokenUnits(1, 6.5), RangeError)
    assert.throws(() => tokenUnitsToMinor(1n, 6, 37), RangeError)
  })

  it('go there and back unchanged (seeded)', () => {
    const random = seededRandom(20261207)
    for (let i = 0; i < 500; i++) {
      const minor = BigInt(Math.floor(random() * 2 ** 53))
      const decimals = 6 + Math.floor(random() * 13)
      assert.equal(tokenUnitsToMinor(minorToTokenUnits(minor, decimals), decimals), minor)
    }
  })
})

describe('transferCalldata', () => {
  const to = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'

  it('is transfer(address,uint256) with the destination and the amount', () => {
    const data = transferCalldata(to, 25_000_000n)
    assert.equal(data.slice(0, 10), '0xa9059cbb')
    assert.equal(data.length, 2 + 8 + 64 + 64)
    assert.equal(data.slice(10, 74), `${'0'.repeat(24)}${to.slice(2).toLowerCase()}`)
    assert.equal(BigInt(`0x${data.slice(74)}`), 25_000_000n)
    const decoded = decodeFunctionData({ abi: erc20Abi, data })
    assert.equal(decoded.functionName, 'transfer')
    assert.deepEqual(decoded.args, [to, 25_000_000n])
    assert.equal(BigInt(`0x${transferCalldata(to, maxUint256).slice(74)}`), maxUint256)
  })

  it('refuses an amount that is not a positive uint256', () => {
    for (const amount of [0n, -1n, maxUint256 + 1n])
      assert.throws(() => transferCalldata(to, amount), RangeError, String(amount))
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AppError } from '../../src/http/errors.ts'
import { checkDestination, maskCardNumber } from '../../src/modules/payouts/destination.ts'

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const TRC20 = 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE' // T + 33 base58 characters
const ERC20 = '0x52908400098527886E0F7030069857D2E4169EE7' // 0x + 40 hex digits
const VISA = '4111111111111111'

/**
 * Asserts `fn` throws a 422 validation_failed whose errors are exactly `fields` (each `destination.<field>`),
 * and that nothing serialised from it carries any of `secrets`.
 */
function assertRefused(fn: () => unknown, fields: string[], secrets: string[] = []) {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof AppError, String(error))
    assert.equal(error.code, 'validation_failed')
    assert.equal(error.status, 422)
    assert.deepEqual(Object.keys(error.errors ?? {}).sort(), fields.map((f) => `destination.${f}`).sort())
    for (const messages of Object.values(error.errors ?? {})) assert.ok(messages.length > 0)
    const json = JSON.stringify({
      code: error.code,
      message: error.message,
      details: error.details,
      errors: error.errors,
      all: error,
    })
    for (const secret of secrets) assert.ok(!json.includes(secret), `${secret} leaked in ${json}`)
    return true
  })
}

describe('checkDestination: usdt_wallet', () => {
  it('accepts a TRC20 address', () => {
    const checked = checkDestination('usdt_wallet', { address: TRC20, network: 'TRC20' })
    assert.deepEqual(checked.shown, { address: TRC20, network: 'TRC20' })
    assert.deepEqual(checked.order, { address: TRC20, network: 'TRC20' })
    assert.equal(checked.cardBrand, null)
    assert.match(checked.walletUuid ?? '', UUID_V7)
  })

  it('accepts an ERC20 address', () => {
    const checked = checkDestination('usdt_wallet', { network: 'ERC20', address: ERC20 })
    assert.deepEqual(checked.shown, { address: ERC20, network: 'ERC20' })
    assert.equal(checked.cardBrand, null)
    assert.match(checked.walletUuid ?? '', UUID_V7)
    // lower-case hex is an address too
    const lower = ERC20.toLowerCase()
    assert.equal(checkDestination('usdt_wallet', { network: 'ERC20', address: lower }).shown.address, lower)
  })

  it('refuses an unknown network', () => {
    assertRefused(() => checkDestination('usdt_wallet', { address: TRC20, network: 'BEP20' }), ['network'])
    assertRefused(() => checkDestination('usdt_wallet', { address: TRC20, network: 'trc20' }), ['network'])
  })

  it("refuses the other network's address", () => {
    assertRefused(() => checkDestination('usdt_wallet', { address: ERC20, network: 'TRC20' }), ['address'])
    assertRefused(() => checkDestination('usdt_wallet', { address: TRC20, network: 'ERC20' }), ['address'])
  })

  it('refuses malformed addresses', () => {
    // 0x + 39 hex; 0x + 40 with a non-hex g; T + 32; T + 33 with a 0 (not base58)
    assertRefused(
      () => checkDestination('usdt_wallet', { address: ERC20.slice(0, -1), network: 'ERC20' }),
      ['address'],
    )
    assertRefused(
      () => checkDestination('usdt_wallet', { address: `${ERC20.slice(0, -1)}g`, network: 'ERC20' }),
      ['address'],
    )
    assertRefused(
      () => checkDestination('usdt_wallet', { address: TRC20.slice(0, -1), network: 'TRC20' }),
      ['address'],
    )
    assertRefused(
      () => checkDestination('usdt_wallet', { address: `${TRC20.slice(0, -1)}0`, network: 'TRC20' }),
      ['address'],
    )
    assertRefused(() => checkDestination('usdt_wallet', { address: '', network: 'TRC20' }), ['address'])
  })

  it('refuses an ERC20 address whose mixed case breaks its checksum, and the zero address', () => {
    // The EIP-55 form of the address, then one letter's case flipped.
    const checksummed = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
    assert.equal(
      checkDestination('usdt_wallet', { network: 'ERC20', address: checksummed }).shown.address,
      checksummed,
    )
    const flipped = checksummed.replace('aAeb', 'aaeb')
    assertRefused(() => checkDestination('usdt_wallet', { network: 'ERC20', address: flipped }), ['address'])
    assert.throws(
      () => checkDestination('usdt_wallet', { network: 'ERC20', address: flipped }),
      (error: AppError) => /checksum/.test(String(error.errors?.['destination.address'])),
    )
    assertRefused(
      () => checkDestination('usdt_wallet', { network: 'ERC20', address: `0x${'0'.repeat(40)}` }),
      ['address'],
    )
  })

  it('refuses missing fields, each named', () => {
    assertRefused(() => checkDestination('usdt_wallet', {}), ['address', 'network'])
    assertRefused(() => checkDestination('usdt_wallet', { network: 'TRC20' }), ['address'])
    assertRefused(() => checkDestination('usdt_wallet', { address: TRC20 }), ['network'])
  })

  it('refuses an unknown field, and a card field on a wallet', () => {
    assertRefused(
      () => checkDestination('usdt_wallet', { address: TRC20, network: 'TRC20', memo: 'x' }),
      ['memo'],
    )
    assertRefused(
      () => checkDestination('usdt_wallet', { address: TRC20, network: 'TRC20', card_number: VISA }),
      ['card_number'],
      [VISA],
    )
  })
})

describe('checkDestination: card', () => {
  /** A card with this number (held by Jane Doe) is refused on card_number, and none of `secrets` is echoed. */
  const assertCardNumberRefused = (cardNumber: string, secrets?: string[]) =>
    assertRefused(
      () => checkDestination('card', { card_number: cardNumber, holder_name: 'Jane Doe' }),
      ['card_number'],
      secrets,
    )

  it('accepts a visa, masks it for display and keeps the digits for the provider only', () => {
    const checked = checkDestination('card', { card_number: VISA, holder_name: 'JANE DOE' })
    assert.deepEqual(checked.shown, { card_number: '411111******1111', holder_name: 'JANE DOE' })
    assert.deepEqual(checked.order, { card_number: VISA, holder_name: 'JANE DOE' })
    assert.equal(checked.cardBrand, 'visa')
    assert.equal(checked.walletUuid, null)
    assert.ok(!JSON.stringify(checked.shown).includes(VISA))
  })

  it('accepts spaces and hyphens, and trims the holder name', () => {
    for (const cardNumber of ['4111 1111 1111 1111', '4111-1111-1111-1111', ' 4111-1111 1111-1111 ']) {
      const checked = checkDestination('card', { card_number: cardNumber, holder_name: '  Jane Doe ' })
      assert.deepEqual(checked.shown, { card_number: '411111******1111', holder_name: 'Jane Doe' })
      assert.deepEqual(checked.order, { card_number: VISA, holder_name: 'Jane Doe' })
      assert.equal(checked.cardBrand, 'visa')
    }
  })

  it('accepts Luhn-valid numbers of 12 and 19 digits of no known brand', () => {
    // 990000000002: from the right, 2 (kept) + 0s + 9 doubled = 18 → 9 + 9 (kept) = 20, a multiple of 10
    const twelve = checkDestination('card', { card_number: '990000000002', holder_name: 'A B' })
    assert.deepEqual(twelve.shown, { card_number: '990000**0002', holder_name: 'A B' })
    assert.equal(twelve.cardBrand, 'unknown')
    // 9900000000000000002 (19): 2 (kept) + 0s + 9 at position 18 doubled → 9 + 9 at position 19 kept = 20
    const nineteen = checkDestination('card', { card_number: '9900000000000000002', holder_name: 'A B' })
    assert.deepEqual(nineteen.shown, { card_number: '990000*********0002', holder_name: 'A B' })
    assert.equal(nineteen.order.card_number, '9900000000000000002')
    assert.equal(nineteen.cardBrand, 'unknown')
  })

  it('refuses a Luhn-invalid number without echoing it', () => {
    // 4111111111111112: the visa test number with the check digit off by one → sum 31, not a multiple of 10
    assertCardNumberRefused('4111111111111112', ['4111111111111112', '411111', '1112'])
    assertCardNumberRefused('4111 1111 1111 1112', ['4111 1111 1111 1112', '4111111111111112'])
  })

  it('refuses 11 and 20 digits even when they pass the Luhn check', () => {
    // 99000000002 (11): 2 + 9 doubled (position 10) → 9 + 9 = 20; 99000000000000000002 (20): the same sum
    assertCardNumberRefused('99000000002', ['99000000002'])
    assertCardNumberRefused('99000000000000000002', ['99000000000000000002'])
  })

  it('refuses characters other than digits, spaces and hyphens', () => {
    assertCardNumberRefused('4111.1111.1111.1111', ['4111.1111.1111.1111'])
    assertCardNumberRefused('')
  })

  it('refuses an empty or too long holder name, and never echoes the valid card number', () => {
    assertRefused(
      () => checkDestination('card', { card_number: VISA, holder_name: '' }),
      ['holder_name'],
      [VISA],
    )
    assertRefused(
      () => checkDestination('card', { card_number: VISA, holder_name: '   ' }),
      ['holder_name'],
      [VISA],
    )
    assertRefused(
      () => checkDestination('card', { card_number: VISA, holder_name: 'x'.repeat(101) }),
      ['holder_name'],
      [VISA],
    )
    // a card number typed into the name field
    assertRefused(
      () => checkDestination('card', { card_number: VISA, holder_name: VISA }),
      ['holder_name'],
      [VISA],
    )
    // exactly 100 characters is allowed
    const longest = checkDestination('card', { card_number: VISA, holder_name: 'x'.repeat(100) })
    assert.equal(longest.shown.holder_name, 'x'.repeat(100))
  })

  it('reports every problem at once', () => {
    assertRefused(
      () => checkDestination('card', { card_number: '4111111111111112', holder_name: '' }),
      ['card_number', 'holder_name'],
      ['4111111111111112'],
    )
  })

  it('refuses missing fields and unknown fields, each named', () => {
    assertRefused(() => checkDestination('card', {}), ['card_number', 'holder_name'])
    assertRefused(() => checkDestination('card', { card_number: VISA }), ['holder_name'], [VISA])
    assertRefused(() => checkDestination('card', { holder_name: 'Jane Doe' }), ['card_number'])
    assertRefused(
      () => checkDestination('card', { card_number: VISA, holder_name: 'Jane Doe', cvv: '123' }),
      ['cvv'],
      [VISA],
    )
    assertRefused(
      () => checkDestination('card', { card_number: VISA, holder_name: 'Jane Doe', network: 'TRC20' }),
      ['network'],
      [VISA],
    )
  })
})

describe('maskCardNumber', () => {
  it('keeps the first six and the last four digits', () => {
    // 12 digits: 6 shown + 2 hidden + 4 shown
    assert.equal(maskCardNumber('123456789012'), '123456**9012')
    // 16 digits: 6 + 6 hidden + 4
    assert.equal(maskCardNumber('1234567890123456'), '123456******3456')
    assert.equal(maskCardNumber(VISA), '411111******1111')
    // 19 digits: 6 + 9 hidden + 4
    assert.equal(maskCardNumber('1234567890123456789'), '123456*********6789')
  })
})

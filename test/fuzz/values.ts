/**
 * The fuzz's random draws: the seed every request's stream comes from, the small helpers that draw from a
 * stream, and the hostile values a mutation puts in a body field, a query, a cursor or a path.
 */

import { Entries, Raw, RawBytes } from './json.ts'
import type { FuzzContext } from './targets.ts'

export const SEED = Number(process.env.FUZZ_SEED ?? 0x5eedf022) >>> 0

export type Rng = () => number
export const pick = <T>(r: Rng, list: readonly T[]): T => list[Math.floor(r() * list.length)] as T
export const int = (r: Rng, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1))
export const chance = (r: Rng, p: number) => r() < p
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
export const randomText = (r: Rng, length: number, alphabet = ALNUM) =>
  Array.from({ length }, () => alphabet[Math.floor(r() * alphabet.length)]).join('')
export const hex = (r: Rng, length: number) => randomText(r, length, '0123456789abcdef')
const randomUuid = (r: Rng) =>
  `${hex(r, 8)}-${hex(r, 4)}-4${hex(r, 3)}-${pick(r, ['8', '9', 'a', 'b'])}${hex(r, 3)}-${hex(r, 12)}`
const b64url = (text: string) => Buffer.from(text).toString('base64url')
/** Percent-encodes the UTF-8 bytes of a text (a lone surrogate, which encodeURIComponent refuses, as U+FFFD). */
export const pct = (text: string) =>
  [...Buffer.from(text)]
    .map((b) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('')

// ---------------------------------------------------------------------------------------------------------
// Hostile values.

export const NUMBERS =
  '1e309 -1e309 -0 0 -1 1 9007199254740993 9007199254740992 -9007199254740993 1e-7 100.0 1.5 1E2 1e+2 0.1e1 5e-324 100000000000 100000000001 123456789012345678901234567890 -9223372036854775809 9223372036854775808 2147483648 4294967296 604800 604801 1e21'.split(
    ' ',
  )
/** Not JSON at all: the body stops parsing. */
const BROKEN_NUMBERS = ['NaN', 'Infinity', '-Infinity', '0x10', '+1', '.5', '01', '1.', '1e', '--1', '١٢٣']
const UNICODE = [
  '\u202eevil\u202c',
  'مرحبا بالعالم',
  'שלום',
  '😀💸',
  '👨‍👩‍👧‍👦',
  'e\u0301\u0301\u0301\u0301',
  'Z̸̢͓̈́a̶̲͠l̷̰̿g̶̣͝o̸͚̊',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  'x\ud83d',
  '\ufeff',
  '\u2028\u2029',
  '\u200b\u200d',
  'İıß',
  '\uffff',
  '\u{10ffff}',
  'ＲＵＢ',
  '\u0085\u001b[31m',
  '\t\n\r',
]
const INJECTION = [
  "' OR '1'='1",
  "'; DROP TABLE transactions;--",
  '" OR ""="',
  '\\',
  '%',
  '_',
  '%00',
  '%%',
  ['$', '{jndi:ldap://127.0.0.1/a}'].join(''),
  '{{7*7}}',
  '<script>alert(1)</script>',
  '../../../../etc/passwd',
  '..\\..\\windows\\win.ini',
  '{"$gt":""}',
  "'||pg_sleep(10)--",
  'a\r\nX-Injected: 1',
]
const PLAIN_STRINGS = [
  '',
  ' ',
  '100',
  '1e309',
  '-0',
  'null',
  'true',
  '[]',
  '{}',
  'RUB',
  'rub',
  ' RUB',
  'RUB\n',
]

/** A string of a length around a bound: 40/64/100/128/255/500/2048, or far beyond. */
export function longString(r: Rng): string {
  const length = pick(r, [41, 65, 101, 129, 256, 501, 2049, 5000, 20_000, 70_000])
  return randomText(r, length, pick(r, [ALNUM, 'é', '😀', 'a\u0301', ' ']))
}
export const unicodeString = (r: Rng) =>
  chance(r, 0.7) ? pick(r, UNICODE) : `${pick(r, UNICODE)}${randomText(r, int(r, 1, 20))}${pick(r, UNICODE)}`

/** Byte sequences that are not UTF-8: lone surrogates (CESU-8), overlong forms, stray continuation bytes. */
export const BAD_BYTES = [
  [0xed, 0xa0, 0x80],
  [0xed, 0xbf, 0xbf],
  [0x61, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80],
  [0xff],
  [0xfe, 0xff],
  [0xc0, 0xaf],
  [0xe0, 0x80, 0xaf],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xe2, 0x82],
  [0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0x00],
  [0x0a],
]

export const deepArray = (depth: number) => new Raw(`${'['.repeat(depth)}${']'.repeat(depth)}`)
export const deepObject = (depth: number) => new Raw(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)

/** A value of a JSON type chosen first (number, string, boolean, null, array, object), then a hostile one of it. */
export function hostileValue(r: Rng): unknown {
  switch (pick(r, ['number', 'number', 'string', 'string', 'boolean', 'null', 'array', 'object', 'broken'])) {
    case 'number':
      return new Raw(pick(r, NUMBERS))
    case 'string':
      return pick(r, [
        () => pick(r, PLAIN_STRINGS),
        () => pick(r, INJECTION),
        () => unicodeString(r),
        () => longString(r),
        () => new RawBytes([0x61, ...pick(r, BAD_BYTES)]),
      ])()
    case 'boolean':
      return chance(r, 0.5)
    case 'null':
      return null
    case 'array':
      return pick(r, [
        () => [],
        () => [1],
        () => ['a', 'b'],
        () => [null],
        () => Array.from({ length: int(r, 100, 5000) }, (_, i) => i),
        () => deepArray(int(r, 10, 5000)),
      ])()
    case 'object':
      return pick(r, [
        () => ({}),
        () => ({ a: 'b' }),
        () => ({ value: 100 }),
        () => new Entries([['__proto__', { polluted: true }]]),
        () => ({ constructor: { prototype: { polluted: true } } }),
        () => Object.fromEntries(Array.from({ length: int(r, 21, 500) }, (_, i) => [`k${i}`, 'v'])),
        () => deepObject(int(r, 10, 5000)),
      ])()
    default:
      return new Raw(pick(r, BROKEN_NUMBERS))
  }
}

const URLS = [
  'http://127.0.0.1:9/hooks',
  'https://shop.example/hooks',
  'javascript:alert(1)',
  'file:///etc/passwd',
  'ftp://127.0.0.1/x',
  'http://',
  'https://',
  '//shop.example/x',
  'http://[::1]:9/',
  'http://user:pass@127.0.0.1:9/',
  'HTTP://127.0.0.1:9/',
  'https://例え.テスト/',
  'http://127.0.0.1:9/a b',
  'http://127.0.0.1:9/\r\nX-Injected: 1',
  `https://shop.example/${'a'.repeat(2030)}`,
  `https://shop.example/${'a'.repeat(2100)}`,
  'http://0x7f000001:9/',
  'http://169.254.169.254/latest/meta-data/',
  'data:text/html,<script>alert(1)</script>',
]

/** Plausible but wrong (or right) values a merchant might send per field. */
export function alternative(r: Rng, field: string, ctx: FuzzContext): unknown {
  switch (field) {
    case 'amount':
    case 'amount_minor':
    case 'overlap_seconds':
      return new Raw(pick(r, NUMBERS))
    case 'currency':
      return pick(r, ['RUB', 'USD', 'EUR', 'JPY', 'KWD', 'USDT', 'GBP', 'XXX', 'rub', 'RUBB', 'RU', '', '💵'])
    case 'payment_method':
      return pick(r, ['card', 'p2p_card', 'bank_transfer', 'CARD', 'crypto', 'usdt_wallet', ''])
    case 'method':
      return pick(r, ['usdt_wallet', 'card', 'USDT_WALLET', 'bank_transfer', 'p2p_card', ''])
    case 'external_id':
      return pick(r, [
        'a'.repeat(64),
        'a'.repeat(65),
        'a b',
        'ä',
        '.',
        ':-_.',
        '',
        ctx.existingExternalId,
        `fz-${randomText(r, 10)}`,
      ])
    case 'transaction_uuid':
    case 'quote_id':
      return pick(r, [
        randomUuid(r),
        ctx.pendingTxUuid,
        ctx.pendingTxUuid.toUpperCase(),
        '00000000-0000-0000-0000-000000000000',
        'ffffffff-ffff-ffff-ffff-ffffffffffff',
        `${ctx.pendingTxUuid}x`,
        ctx.pendingTxUuid.replaceAll('-', ''),
        `{${ctx.pendingTxUuid}}`,
      ])
    case 'callback_url':
    case 'success_url':
    case 'fail_url':
    case 'url':
      return pick(r, URLS)
    case 'events':
      return pick(r, [
        [],
        ['transaction.paid'],
        ['transaction.paid', 'transaction.paid'],
        ['webhook.test'],
        ['nope'],
        Array.from({ length: 20 }, () => 'transaction.paid'),
        'transaction.paid',
      ])
    case 'enabled':
      return pick(r, [true, false, 'true', 1, 0, null])
    case 'destination':
      return hostileMap(r, true)
    case 'metadata':
      return hostileMap(r, false)
    default:
      return hostileValue(r)
  }
}

/** A metadata or destination map that breaks one of its bounds (20/10 keys, key ≤ 40, value ≤ 500/200, no NUL). */
function hostileMap(r: Rng, destination: boolean): unknown {
  const base: [string, unknown][] = destination
    ? pick(r, [
        [
          ['address', 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE'],
          ['network', 'TRC20'],
        ],
        [
          ['card_number', '4111111111111111'],
          ['holder_name', 'A. Smith'],
        ],
      ] as [string, unknown][][])
    : [['order', 'A-1001']]
  const pairs = [...base]
  switch (int(r, 0, 11)) {
    case 0:
      for (let i = 0; i < int(r, 11, 60); i++) pairs.push([`k${i}`, 'v'])
      break
    case 1:
      pairs.push([randomText(r, int(r, 41, 500)), 'v'])
      break
    case 2:
      pairs.push(['', 'v'])
      break
    case 3:
      pairs.push([pick(r, ['a\u0000b', '\u0000']), 'v'])
      break
    case 4:
      pairs.push(['note', hostileValue(r)])
      break
    case 5:
      pairs.push(['note', randomText(r, pick(r, [201, 501, 5000]))])
      break
    case 6:
      pairs.push(['note', 'a\u0000b'])
      break
    case 7:
      pairs.push([pick(r, ['__proto__', 'constructor']), { polluted: true }])
      break
    case 8:
      pairs.push([unicodeString(r), unicodeString(r)])
      break
    case 9:
      if (destination) {
        const field = pick(r, ['address', 'network', 'card_number', 'holder_name'])
        pairs.push([
          field,
          pick(r, [
            '4111111111111112',
            '4111 1111 1111 1111',
            '4'.repeat(200),
            '0000000000000000',
            'trc20',
            'BTC',
            'ERC20',
            '',
            'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE\u0000',
            '0x0000000000000000000000000000000000000000',
          ]),
        ])
      } else pairs.push(['order', 'B-2002'])
      break
    case 10:
      return pick(r, [[], 'map', 42, null, deepObject(int(r, 10, 3000))])
    default:
      pairs.length = 0
  }
  return new Entries(pairs)
}

// ---------------------------------------------------------------------------------------------------------
// Hostile query values, cursors, path segments, content types and broken JSON text.

const QUERY_VALUES = [
  '',
  '0',
  '-1',
  '101',
  '1.5',
  '1e2',
  '1e309',
  'abc',
  '99999999999999999999',
  '%20',
  '%00',
  '%zz',
  '%',
  '%E0%A4%A',
  '%ED%A0%80',
  '%F0%9F%92%A9',
  '%C0%AF',
  '%2e%2e%2f',
  'a%26b%3Dc',
  "'%20OR%201=1--",
  'paid,paid',
  'PAID',
  'paid,',
  ',',
  'pending,paid,failed,expired,partially_refunded,refunded,pending',
  'card',
  'RUB',
  '2026-02-30',
  '2026-13-01',
  '0000-01-01',
  '275760-09-13',
  '-000001-01-01',
  '2026-01-01T25:00:00Z',
  '2026-01-01T00:00:00.000+14:00',
  '9999-12-31',
  '1970-01-01',
  'now',
  pct('\u202e😀'),
  pct('\\%_'),
  '٣',
  'true',
  'null',
  '[]',
  '{}',
]

export function queryValue(r: Rng): string {
  if (chance(r, 0.7)) return pick(r, QUERY_VALUES)
  if (chance(r, 0.5)) return pct(pick(r, [...UNICODE, ...INJECTION]))
  return pick(r, [randomText(r, int(r, 100, 101)), randomText(r, int(r, 500, 600)), randomText(r, 10_000)])
}

/** Cursors that do not decode, decode to nonsense, or were issued under other filters. */
export function badCursor(r: Rng, fc: FuzzContext): string {
  const real = pick(r, fc.cursors)
  const decoded = JSON.parse(Buffer.from(real, 'base64url').toString('utf8')) as unknown[]
  const forge = (...parts: unknown[]) => b64url(JSON.stringify(parts))
  return pick(r, [
    () => real.slice(0, int(r, 1, real.length - 1)),
    () => `${real}${pick(r, ['x', '=', '==', '.', '%00', '%zz'])}`,
    () => real.split('').reverse().join(''),
    () => Buffer.from(real, 'base64url').toString('base64'),
    () => encodeURIComponent(Buffer.from(real, 'base64url').toString('base64')),
    () => randomText(r, int(r, 1, 600), `${ALNUM}-_`),
    () => forge('n', '0000-01-01T00:00:00.000Z', decoded[2], decoded[3]),
    () => forge('p', '+275760-09-13T00:00:00.000Z', decoded[2], decoded[3]),
    () => forge('n', '9999-12-31T23:59:59.999Z', decoded[2], decoded[3]),
    () => forge('n', '2026-02-30T00:00:00.000Z', decoded[2], decoded[3]),
    () => forge('x', decoded[1], decoded[2], decoded[3]),
    () => forge('n', decoded[1], "' OR 1=1--", decoded[3]),
    () => forge('n', decoded[1], decoded[2], 'deadbeefdeadbeef'),
    () => b64url(`["n",1e309,${JSON.stringify(decoded[2])},${JSON.stringify(decoded[3])}]`),
    () => forge(decoded[0], decoded[1], decoded[2]),
    () => forge(...decoded, 'extra'),
    () => b64url(JSON.stringify({ direction: 'next', uuid: decoded[2] })),
    () => b64url('{"__proto__":{"polluted":true}}'),
    () => b64url('null'),
    () => b64url(`${'['.repeat(300)}${']'.repeat(300)}`),
    () => b64url('\u0000'),
    () => Buffer.from([0xed, 0xa0, 0x80, 0xff]).toString('base64url'),
    () => '',
  ])()
}

/** Path segments that name nothing, or try to climb out of the route. */
export function hostileSegment(r: Rng, current: string): string {
  return pick(r, [
    () => '..',
    () => '%2e%2e',
    () => '..%2f..%2fpackage.json',
    () => '..%5c..%5cpackage.json',
    () => '%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    () => '%252e%252e%252f',
    () => '%2F',
    () => '%00',
    () => `${current}%00`,
    () => '%zz',
    () => '%',
    () => '%ED%A0%80',
    () => '%C0%AF',
    () => '%F0%9F%92%A9',
    () => pct(pick(r, UNICODE)),
    () => pct(pick(r, INJECTION)),
    () => 'a'.repeat(int(r, 190, 210)),
    () => 'a'.repeat(5000),
    () => current.toUpperCase(),
    () => `${current}x`,
    () => current.slice(0, -1),
    () => '00000000-0000-0000-0000-000000000000',
    () => randomUuid(r),
    () => ';',
    () => '*',
    () => '~',
    () => 'checkout.css%3F',
    () => 'checkout.js',
    () => '.env',
    () => '',
  ])()
}

export const METHODS = 'GET POST PUT PATCH DELETE OPTIONS HEAD TRACE PROPFIND CONNECT SEARCH'.split(' ')
export const NON_JSON_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/octet-stream',
  'image/png',
]
export const ODD_JSON_TYPES = [
  'APPLICATION/JSON',
  'application/json;charset=utf-8',
  'application/json; charset=latin1',
  'application/json; charset="utf-16"',
  'application/json, text/plain',
  'application/jsonx',
  'application/json-patch+json',
  'text/json',
  '',
  ' ',
  '*/*',
  'application/json\r\nX-Injected: 1',
  `application/json; ${'a=b;'.repeat(2000)}`,
  'ключ/json',
]

export function breakJson(r: Rng, text: string): { payload: string; always: boolean } {
  return pick(r, [
    () => ({ payload: text.slice(0, int(r, 1, Math.max(1, text.length - 1))), always: text.length > 1 }),
    () => ({ payload: `${text}${pick(r, ['x', '}', ',', ']', '\u0000', ' {}'])}`, always: true }),
    () => ({ payload: text.replace('"', "'"), always: text.includes('"') }),
    () => ({ payload: text.replace(/}$/, ',}'), always: text.length > 2 }),
    () => ({ payload: `/* comment */${text}`, always: true }),
    () => ({ payload: text.replace(':', '='), always: text.includes(':') }),
    () => ({ payload: `{${text}`, always: true }),
    () => ({ payload: text.replace(/"([a-z_]+)":/, '$1:'), always: /"[a-z_]+":/.test(text) }),
    () => ({
      payload: pick(r, ['nul', 'tru', 'undefined', '{', '[', '"', "{'a':1}", '{"a":1}}']),
      always: true,
    }),
    () => ({ payload: `\ufeff${text}`, always: false }),
    () => ({ payload: `\n\t ${text} \n`, always: false }),
  ])()
}

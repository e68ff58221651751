import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { sign } from '../../src/http/auth.ts'
import { ERROR_STATUS } from '../../src/http/errors.ts'
import type { Sender } from '../../src/modules/webhooks/delivery.ts'
import { createTransaction, SECURITY_ROUTES } from '../api/security/routes.ts'
import { backends, call, createTestContext, injectToEnd, type TestContext } from '../helpers/harness.ts'
import { seededRandom } from '../helpers/random.ts'

/**
 * The fuzz pass: generated malformed and hostile requests against every route of the app, authenticated
 * (X-Api-Key, or X-Signature with an Idempotency-Key where money moves) most of the time so that they get past
 * authentication into validation and the handlers, and with broken credentials the rest of the time.
 *
 * Invariants, over every request: no status ≥ 500, no request left unanswered after 5 s, every error is the one
 * envelope (docs/API.md, Errors) with a code from the closed list and its own status, no stack trace, SQL text or file
 * content in a reply, no injected response header. After the run: the ledger still verifies, no Idempotency-Key
 * is left running, and no request refused by authentication or validation kept its key (docs/API.md, Idempotency).
 *
 * - FUZZ_SEED: the generator's seed (default below; any integer, decimal or 0x hex).
 * - FUZZ_COUNT: requests per backend (default 1500 for CI; the full pass is FUZZ_COUNT=10000).
 * - FUZZ_ONLY: comma-separated request indices to replay alone (each request draws from its own seeded stream,
 *   so request #i is the same whatever ran before it).
 * - FUZZ_DEBUG: print the unmutated requests that were refused anyway (to keep the generator honest).
 */
const SEED = Number(process.env.FUZZ_SEED ?? 0x5eedf022) >>> 0
const COUNT = Number(process.env.FUZZ_COUNT ?? 1500)
const ONLY = process.env.FUZZ_ONLY ? process.env.FUZZ_ONLY.split(',').map((s) => Number(s.trim())) : null
const HANG_MS = 5000
const BODY_LIMIT = 64 * 1024

type Rng = () => number
const pick = <T>(r: Rng, list: readonly T[]): T => list[Math.floor(r() * list.length)] as T
const int = (r: Rng, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1))
const chance = (r: Rng, p: number) => r() < p
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const randomText = (r: Rng, length: number, alphabet = ALNUM) =>
  Array.from({ length }, () => alphabet[Math.floor(r() * alphabet.length)]).join('')
const hex = (r: Rng, length: number) => randomText(r, length, '0123456789abcdef')
const randomUuid = (r: Rng) =>
  `${hex(r, 8)}-${hex(r, 4)}-4${hex(r, 3)}-${pick(r, ['8', '9', 'a', 'b'])}${hex(r, 3)}-${hex(r, 12)}`
const b64url = (text: string) => Buffer.from(text).toString('base64url')
/** Percent-encodes the UTF-8 bytes of a text (a lone surrogate, which encodeURIComponent refuses, as U+FFFD). */
const pct = (text: string) =>
  [...Buffer.from(text)]
    .map((b) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('')

// ---------------------------------------------------------------------------------------------------------
// JSON with what JSON.stringify cannot write: raw number text, duplicate and __proto__ keys, invalid UTF-8.

/** Written into the JSON text as is: `1e309`, `-0`, `9007199254740993`, or something that breaks the JSON. */
class Raw {
  constructor(readonly text: string) {}
}
/** An object as a list of pairs: keys may repeat, and `__proto__` is an own key. */
class Entries {
  constructor(readonly pairs: [string, unknown][]) {}
}
/** A JSON string whose content is these bytes, not necessarily UTF-8. */
class RawBytes {
  constructor(readonly bytes: number[]) {}
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype

function toJson(value: unknown, bytes: Buffer[]): string {
  if (value instanceof Raw) return value.text
  if (value instanceof RawBytes) return `"\u0000${bytes.push(Buffer.from(value.bytes)) - 1}\u0000"`
  if (value instanceof Entries)
    return `{${value.pairs.map(([k, v]) => `${JSON.stringify(k)}:${toJson(v, bytes)}`).join(',')}}`
  if (Array.isArray(value)) return `[${value.map((v) => toJson(v, bytes)).join(',')}]`
  if (isPlainObject(value)) return toJson(new Entries(Object.entries(value)), bytes)
  if (value === undefined) return 'null'
  return JSON.stringify(value)
}

/** The body as sent: text, or bytes when it holds RawBytes (each stands between two U+0000 markers). */
function serialize(value: unknown): string | Buffer {
  const bytes: Buffer[] = []
  const text = toJson(value, bytes)
  if (!bytes.length) return text
  return Buffer.concat(
    text.split('\u0000').map((part, i) => (i % 2 ? (bytes[Number(part)] as Buffer) : Buffer.from(part))),
  )
}

const pairsOf = (body: unknown): [string, unknown][] =>
  body instanceof Entries ? [...body.pairs] : isPlainObject(body) ? Object.entries(body) : []

// ---------------------------------------------------------------------------------------------------------
// Hostile values.

const NUMBERS =
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
function longString(r: Rng): string {
  const length = pick(r, [41, 65, 101, 129, 256, 501, 2049, 5000, 20_000, 70_000])
  return randomText(r, length, pick(r, [ALNUM, 'é', '😀', 'a\u0301', ' ']))
}
const unicodeString = (r: Rng) =>
  chance(r, 0.7) ? pick(r, UNICODE) : `${pick(r, UNICODE)}${randomText(r, int(r, 1, 20))}${pick(r, UNICODE)}`

/** Byte sequences that are not UTF-8: lone surrogates (CESU-8), overlong forms, stray continuation bytes. */
const BAD_BYTES = [
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

const deepArray = (depth: number) => new Raw(`${'['.repeat(depth)}${']'.repeat(depth)}`)
const deepObject = (depth: number) => new Raw(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)

/** A value of a JSON type chosen first (number, string, boolean, null, array, object), then a hostile one of it. */
function hostileValue(r: Rng): unknown {
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
function alternative(r: Rng, field: string, ctx: FuzzContext): unknown {
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
// Targets: every route of the app, with a valid request to start from.

interface Target {
  name: string
  method: string
  segments: string[]
  /** Indices of `segments` that are path parameters. */
  params: number[]
  query: string
  queryFields: string[]
  /** A valid body (fresh unique fields on every call). */
  body?: () => unknown
  bodyFields: string[]
  auth: 'none' | 'key' | 'signature'
  idempotency?: 'optional' | 'required'
}

const OPTIONAL_FIELDS: Record<string, string[]> = {
  'POST /integration/transactions': ['description', 'metadata', 'callback_url', 'success_url', 'fail_url'],
  'POST /integration/refunds': ['reason'],
  'POST /integration/payouts': ['quote_id', 'metadata', 'callback_url'],
  'PUT /integration/webhook': ['enabled'],
  'POST /integration/webhook/secret/rotate': ['overlap_seconds'],
}
const QUERY_FIELDS: Record<string, string[]> = {
  'GET /integration/transactions': [
    'cursor',
    'per_page',
    'status',
    'payment_method',
    'currency',
    'date_from',
    'date_to',
    'search',
  ],
  'GET /integration/payouts': ['cursor', 'per_page', 'status', 'method', 'currency'],
  'GET /integration/webhook/deliveries': ['cursor', 'per_page', 'status', 'event'],
  'GET /integration/payouts/quote': ['amount', 'currency', 'method'],
}

interface FuzzContext {
  ctx: TestContext
  targets: Target[]
  cursors: string[]
  existingExternalId: string
  pendingTxUuid: string
  revoked: { key_id: string; secret: string }
}

function targetOf(
  name: string,
  url: string,
  auth: Target['auth'],
  extra: Partial<Pick<Target, 'body' | 'idempotency'>> = {},
): Target {
  const [method = 'GET', template = '/'] = name.split(' ')
  const [path = '/', query = ''] = url.split('?')
  const segments = path.slice(1).split('/')
  const params = template
    .slice(1)
    .split('/')
    .flatMap((segment, i) => (segment.startsWith('{') ? [i] : []))
  const base = extra.body?.()
  return {
    name,
    method,
    segments,
    params,
    query,
    queryFields: QUERY_FIELDS[name] ?? [],
    bodyFields: [
      ...new Set([...Object.keys(isPlainObject(base) ? base : {}), ...(OPTIONAL_FIELDS[name] ?? [])]),
    ],
    auth,
    ...extra,
  }
}

async function buildTargets(ctx: TestContext): Promise<FuzzContext> {
  const targets: Target[] = []
  for (const route of SECURITY_ROUTES) {
    const resource = await route.setup(ctx, ctx.merchant, 'test')
    targets.push(
      targetOf(route.name, route.url(resource), route.auth, {
        ...(route.body && { body: () => route.body?.(resource) }),
        ...(route.idempotency && { idempotency: route.idempotency }),
      }),
    )
  }
  const page = await createTransaction(ctx, ctx.merchant, 'test', { payment_method: 'card' })
  const paymentUrl: string = (
    await call(ctx, 'GET', `/integration/transactions/${page.uuid}`).then((res) => res.json())
  ).payment_url
  const token = new URL(paymentUrl).pathname.split('/').pop() as string
  targets.push(
    targetOf('GET /integration/health', '/integration/health', 'none'),
    targetOf('GET /integration/openapi.json', '/integration/openapi.json', 'none'),
    targetOf('GET /docs', '/docs', 'none'),
    targetOf('GET /docs/json', '/docs/json', 'none'),
    targetOf('GET /docs/static/{file}', '/docs/static/index.html', 'none'),
    targetOf('GET /pay/{token}', `/pay/${token}`, 'none'),
    targetOf('GET /pay/{token}/status', `/pay/${token}/status`, 'none'),
    targetOf('POST /pay/{token}/simulate/paid', `/pay/${token}/simulate/paid`, 'none'),
    targetOf('POST /pay/{token}/simulate/failed', `/pay/${token}/simulate/failed`, 'none'),
    targetOf('GET /pay/assets/{name}', '/pay/assets/checkout.css', 'none'),
  )

  // Real cursors, to truncate, tamper with and replay under other filters.
  for (let i = 0; i < 3; i++) await createTransaction(ctx, ctx.merchant, 'test')
  const cursors: string[] = []
  for (const list of [
    '/integration/transactions',
    '/integration/payouts',
    '/integration/webhook/deliveries',
  ]) {
    const first = (await call(ctx, 'GET', `${list}?per_page=1`)).json()
    if (!first.meta?.next_cursor) continue
    cursors.push(first.meta.next_cursor)
    const second = (await call(ctx, 'GET', `${list}?per_page=1&cursor=${first.meta.next_cursor}`)).json()
    if (second.meta?.prev_cursor) cursors.push(second.meta.prev_cursor)
  }
  assert.ok(cursors.length >= 2, 'the lists have cursors to fuzz with')

  const revoked = await ctx.services.merchants.createKey(ctx.merchant.uuid, 'test')
  assert.ok(revoked)
  ctx.secrets.push(revoked.secret)
  await ctx.services.merchants.revokeKey(revoked.key_id)
  const pending = await createTransaction(ctx, ctx.merchant, 'test')
  return {
    ctx,
    targets,
    cursors,
    existingExternalId: pending.external_id,
    pendingTxUuid: pending.uuid,
    revoked,
  }
}

// ---------------------------------------------------------------------------------------------------------
// Requests: a valid one per target, then one to three mutations.

type Credentials =
  | { kind: 'none' }
  | { kind: 'apiKey'; value: string | string[] }
  | {
      kind: 'signature'
      key: { key_id: string; secret: string }
      tamper?: 'expired' | 'future' | 'body' | 'url' | 'idempotency' | 'method' | 'secret' | 'many'
      apiKey?: string
    }
  | { kind: 'rawSignature'; value: string | string[]; apiKey?: string }

interface Draft {
  index: number
  target: Target
  method: string
  segments: string[]
  query: string
  body: unknown
  /** Sent as is, instead of the serialized body. */
  payload?: string | Buffer
  /** undefined: application/json when there is a payload; null: no Content-Type at all. */
  contentType?: string | string[] | null
  headers: Record<string, string | string[]>
  credentials: Credentials
  idempotencyKey?: string | string[]
  /** The key is this request's own, well-formed and used nowhere else: checked against the store afterwards. */
  uniqueKey: boolean
  tags: string[]
  expect?: number
  forbid?: number
}

const hasBody = (d: Draft) => d.target.method === 'POST' || d.target.method === 'PUT'

function setField(d: Draft, name: string, value: unknown) {
  const pairs = pairsOf(d.body).filter(([k]) => k !== name)
  pairs.push([name, value])
  d.body = new Entries(pairs)
}
const fieldOf = (r: Rng, d: Draft) =>
  d.target.bodyFields.length && chance(r, 0.9) ? pick(r, d.target.bodyFields) : pick(r, ['amount', 'x'])

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

function queryValue(r: Rng): string {
  if (chance(r, 0.7)) return pick(r, QUERY_VALUES)
  if (chance(r, 0.5)) return pct(pick(r, [...UNICODE, ...INJECTION]))
  return pick(r, [randomText(r, int(r, 100, 101)), randomText(r, int(r, 500, 600)), randomText(r, 10_000)])
}

/** Cursors that do not decode, decode to nonsense, or were issued under other filters. */
function badCursor(r: Rng, fc: FuzzContext): string {
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
function hostileSegment(r: Rng, current: string): string {
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

const METHODS = 'GET POST PUT PATCH DELETE OPTIONS HEAD TRACE PROPFIND CONNECT SEARCH'.split(' ')
const NON_JSON_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/octet-stream',
  'image/png',
]
const ODD_JSON_TYPES = [
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

function breakJson(r: Rng, text: string): { payload: string; always: boolean } {
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

interface Mutator {
  name: string
  weight: number
  applies(d: Draft): boolean
  apply(r: Rng, d: Draft, fc: FuzzContext): void
}

const MUTATORS: Mutator[] = [
  {
    name: 'field-type',
    weight: 6,
    applies: hasBody,
    apply: (r, d) => setField(d, fieldOf(r, d), hostileValue(r)),
  },
  {
    name: 'field-alternative',
    weight: 4,
    applies: hasBody,
    apply: (r, d, fc) => {
      const field = fieldOf(r, d)
      setField(d, field, alternative(r, field, fc))
    },
  },
  {
    name: 'field-number',
    weight: 3,
    applies: hasBody,
    apply: (r, d) => setField(d, fieldOf(r, d), new Raw(pick(r, NUMBERS))),
  },
  {
    name: 'field-unicode',
    weight: 3,
    applies: hasBody,
    apply: (r, d) => setField(d, fieldOf(r, d), unicodeString(r)),
  },
  {
    name: 'field-long',
    weight: 2,
    applies: hasBody,
    apply: (r, d) => setField(d, fieldOf(r, d), longString(r)),
  },
  {
    name: 'field-bytes',
    weight: 2,
    applies: hasBody,
    apply: (r, d) => setField(d, fieldOf(r, d), new RawBytes([0x61, ...pick(r, BAD_BYTES), 0x62])),
  },
  {
    name: 'field-remove',
    weight: 2,
    applies: hasBody,
    apply: (r, d) => {
      const pairs = pairsOf(d.body)
      if (pairs.length) pairs.splice(int(r, 0, pairs.length - 1), 1)
      d.body = new Entries(pairs)
    },
  },
  {
    name: 'field-unknown',
    weight: 2,
    applies: hasBody,
    apply: (r, d) =>
      setField(
        d,
        pick(r, [
          'x',
          'Amount',
          'amount ',
          '',
          'status',
          'uuid',
          'merchant_uuid',
          'mode',
          'constructor',
          'toString',
          'hasOwnProperty',
          unicodeString(r),
        ]),
        hostileValue(r),
      ),
  },
  {
    name: 'duplicate-key',
    weight: 2,
    applies: hasBody,
    apply: (r, d) => {
      const pairs = pairsOf(d.body)
      const field = fieldOf(r, d)
      const extra: [string, unknown] = [field, hostileValue(r)]
      if (chance(r, 0.5)) pairs.unshift(extra)
      else pairs.push(extra)
      d.body = new Entries(pairs)
    },
  },
  {
    name: 'prototype-pollution',
    weight: 2,
    applies: hasBody,
    apply: (r, d) => {
      const poison = pick(r, [
        new Entries([['__proto__', { polluted: true }]]),
        { constructor: { prototype: { polluted: true } } },
      ])
      if (chance(r, 0.5)) {
        const pairs = pairsOf(d.body)
        pairs.splice(
          int(r, 0, pairs.length),
          0,
          ...(poison instanceof Entries ? poison.pairs : pairsOf(poison)),
        )
        d.body = new Entries(pairs)
      } else setField(d, pick(r, ['metadata', 'destination', 'x']), poison)
    },
  },
  {
    name: 'whole-body',
    weight: 2,
    applies: hasBody,
    apply: (r, d) => {
      d.body = pick(r, [
        () => [],
        () => [d.body],
        () => 'text',
        () => new Raw(pick(r, NUMBERS)),
        () => null,
        () => true,
        () => ({}),
        () => deepArray(int(r, 100, 30_000)),
        () => deepObject(int(r, 100, 10_000)),
      ])()
    },
  },
  {
    name: 'broken-json',
    weight: 3,
    applies: hasBody,
    apply: (r, d) => {
      const text = serialize(d.body ?? {}).toString()
      const broken = breakJson(r, text)
      d.payload = broken.payload
      if (broken.always) d.expect = 400
    },
  },
  {
    name: 'empty-body',
    weight: 1,
    applies: hasBody,
    apply: (r, d) => {
      d.payload = pick(r, ['', ' ', '\n', '\r\n\t '])
    },
  },
  {
    name: 'oversize',
    weight: 2,
    applies: hasBody,
    apply: (r, d) => {
      const text = serialize(d.body ?? {}).toString()
      const over = chance(r, 0.5) ? int(r, 1, 64) : int(r, 1, 300_000)
      if (chance(r, 0.2)) {
        // Exactly at the limit: must be read, never 413.
        d.payload = `${text}${' '.repeat(Math.max(0, BODY_LIMIT - Buffer.byteLength(text)))}`
        d.forbid = 413
      } else if (chance(r, 0.5)) {
        d.payload = `${text}${' '.repeat(BODY_LIMIT - Buffer.byteLength(text) + over)}`
        d.expect = 413
      } else {
        setField(d, 'description', randomText(r, BODY_LIMIT + over, pick(r, ['a', 'é', '😀'])))
        d.expect = 413
      }
    },
  },
  {
    name: 'content-type',
    weight: 2,
    applies: hasBody,
    apply: (r, d) => {
      if (chance(r, 0.5)) {
        d.contentType = pick(r, NON_JSON_TYPES)
        d.payload = d.payload ?? serialize(d.body ?? { a: 1 })
        d.expect = 415
      } else
        d.contentType = pick(r, [...ODD_JSON_TYPES, null, ['application/json', 'text/plain']] as (
          | string
          | string[]
          | null
        )[])
    },
  },
  {
    name: 'content-length',
    weight: 1,
    applies: hasBody,
    apply: (r, d) => {
      d.headers['content-length'] = pick(r, ['0', '1', '999999', '65537', '-1', 'abc', '1e3', '00010', ' 5'])
    },
  },
  {
    name: 'body-on-get',
    weight: 1,
    applies: (d) => !hasBody(d),
    apply: (r, d) => {
      d.payload = pick(r, ['{"a":1}', '{broken', 'x'.repeat(70_000), ''])
      if (chance(r, 0.5)) d.contentType = pick(r, ['text/plain', 'application/json'])
    },
  },
  {
    name: 'query-value',
    weight: 4,
    applies: () => true,
    apply: (r, d) => {
      const name =
        d.target.queryFields.length && chance(r, 0.8)
          ? pick(r, d.target.queryFields)
          : pick(r, [
              'x',
              '__proto__',
              'constructor',
              'constructor[prototype]',
              'toString',
              'per_page[]',
              'a[b]',
              '',
              pct('ключ'),
            ])
      const pairs = d.query ? d.query.split('&').filter((p) => !p.startsWith(`${name}=`)) : []
      pairs.push(`${name}=${queryValue(r)}`)
      d.query = pairs.join('&')
    },
  },
  {
    name: 'query-array',
    weight: 2,
    applies: (d) => d.target.queryFields.length > 0,
    apply: (r, d) => {
      const name = pick(r, d.target.queryFields)
      const values = Array.from({ length: int(r, 2, 5) }, () => (chance(r, 0.5) ? queryValue(r) : 'paid'))
      d.query = [d.query, ...values.map((v) => `${name}=${v}`)].filter(Boolean).join('&')
    },
  },
  {
    name: 'query-raw',
    weight: 1,
    applies: () => true,
    apply: (r, d) => {
      d.query = pick(r, [
        '&&&',
        '=',
        '==',
        '%zz=1',
        'per_page',
        ';',
        '?',
        '#frag',
        `x=${'a'.repeat(10_000)}`,
        Array.from({ length: 500 }, (_, i) => `p${i}=1`).join('&'),
        '%E0%A4%A=1',
        'a=%ED%A0%80',
        'cursor&cursor&cursor',
      ])
    },
  },
  {
    name: 'cursor',
    weight: 3,
    applies: (d) => d.target.queryFields.includes('cursor'),
    apply: (r, d, fc) => {
      const pairs = d.query.split('&').filter((p) => p && !p.startsWith('cursor='))
      // A real cursor under other filters is refused too.
      if (chance(r, 0.2))
        pairs.push(pick(r, ['status=paid', 'per_page=7', 'currency=USD', 'event=webhook.test']))
      pairs.push(`cursor=${chance(r, 0.15) ? pick(r, fc.cursors) : badCursor(r, fc)}`)
      d.query = pairs.join('&')
    },
  },
  {
    name: 'per-page',
    weight: 2,
    applies: (d) => d.target.queryFields.includes('per_page'),
    apply: (r, d) => {
      const pairs = d.query.split('&').filter((p) => p && !p.startsWith('per_page='))
      for (let i = 0; i < (chance(r, 0.2) ? 2 : 1); i++)
        pairs.push(
          `per_page=${pick(r, ['0', '-1', '101', '100', '1', '1.5', '1e2', 'abc', '', '99999999999999999999', '1e309', '%205', '5%20', '0x10', '%00', '٣', '+5', '05'])}`,
        )
      d.query = pairs.join('&')
    },
  },
  {
    name: 'path-param',
    weight: 4,
    applies: (d) => d.target.params.length > 0,
    apply: (r, d) => {
      const at = pick(r, d.target.params)
      d.segments[at] = hostileSegment(r, d.segments[at] ?? '')
    },
  },
  {
    name: 'path-shape',
    weight: 1,
    applies: () => true,
    apply: (r, d) => {
      pick(r, [
        () => d.segments.push(''),
        () => d.segments.push(pick(r, ['x', '..', '%2e%2e', 'status', 'h2h', 'paid'])),
        () => d.segments.splice(int(r, 0, d.segments.length), 0, ''),
        () => d.segments.pop(),
        () => {
          d.segments = d.segments.map((s) => s.toUpperCase())
        },
        () => {
          const last = d.segments.length - 1
          d.segments[last] = `${d.segments[last]};jsessionid=x`
        },
        () => {
          d.segments = [d.segments.join('%2F')]
        },
      ])()
    },
  },
  {
    name: 'method',
    weight: 2,
    applies: () => true,
    apply: (r, d) => {
      d.method = pick(r, METHODS)
    },
  },
  {
    name: 'idempotency-key',
    weight: 2,
    applies: (d) => d.target.method === 'POST',
    apply: (r, d) => {
      d.uniqueKey = false
      d.idempotencyKey = pick(r, [
        () => '',
        () => ' ',
        () => 'a'.repeat(256),
        () => 'k'.repeat(10_000),
        () => 'a\r\nX-Injected: 1',
        () => 'ключ',
        () => '\t',
        () => 'a\u0000',
        () => '\u007f',
        () => [`fz-${SEED}-${d.index}`, 'second'],
        () => `fz-${SEED}-${int(r, 0, Math.max(0, d.index - 1))}`,
        () => {
          d.uniqueKey = true
          return `fz-${SEED}-${d.index}-`.padEnd(255, 'k')
        },
      ])()
    },
  },
  {
    name: 'request-id',
    weight: 1,
    applies: () => true,
    apply: (r, d) => {
      d.headers['x-request-id'] = pick(r, [
        () => 'r'.repeat(1000),
        () => 'r'.repeat(128),
        () => 'r'.repeat(129),
        () => 'abc\r\nSet-Cookie: session=x',
        () => 'abc\r\nX-Injected: 1',
        () => 'ключ',
        () => '',
        () => ['one', 'two'],
        () => '<script>',
        () => 'a b',
      ])()
    },
  },
  {
    name: 'header-injection',
    weight: 1,
    applies: () => true,
    apply: (r, d) => {
      const name = pick(r, [
        'accept',
        'user-agent',
        'x-forwarded-for',
        'origin',
        'referer',
        'cookie',
        'x-custom',
      ])
      d.headers[name] = pick(r, [
        'a\r\nX-Injected: 1',
        'a\nX-Injected: 1',
        'a\rX-Injected: 1',
        'ключ',
        '\u0000',
        'x'.repeat(20_000),
        '😀',
      ])
    },
  },
  {
    name: 'junk-headers',
    weight: 1,
    applies: () => true,
    apply: (r, d) => {
      const [name, value] = pick(r, [
        ['accept', 'application/xml'],
        ['accept', 'text/html'],
        ['host', 'evil.example'],
        ['host', ''],
        ['x-forwarded-for', '127.0.0.1, ::1, nonsense'],
        ['x-forwarded-proto', 'gopher'],
        ['x-http-method-override', 'DELETE'],
        ['content-encoding', 'gzip'],
        ['content-encoding', 'br, deflate'],
        ['transfer-encoding', 'chunked'],
        ['expect', '100-continue'],
        ['accept-encoding', 'gzip;q=1e309'],
        ['range', 'bytes=0-1,1-2,2-3'],
        ['if-none-match', '*'],
        ['authorization', 'Bearer sk_test_nothing'],
      ] as [string, string][])
      d.headers[name] = value
    },
  },
]

function chooseCredentials(r: Rng, d: Draft, fc: FuzzContext): Credentials {
  const { merchant, other } = fc.ctx
  const t = d.target
  if (t.auth === 'none')
    return chance(r, 0.85) ? { kind: 'none' } : { kind: 'apiKey', value: pick(r, ['garbage', 'sk_test_x']) }
  const mode = chance(r, 0.1) ? 'live' : 'test'
  const key = merchant.keys[mode]
  if (chance(r, 0.75)) {
    if (t.auth === 'signature' || chance(r, 0.5)) return { kind: 'signature', key }
    return { kind: 'apiKey', value: key.secret }
  }
  d.tags.push('credentials')
  const now = Math.floor(Date.now() / 1000)
  const v1 = hex(r, 64)
  return pick(r, [
    (): Credentials => ({ kind: 'none' }),
    (): Credentials => ({ kind: 'apiKey', value: `sk_test_${randomText(r, 43)}` }),
    (): Credentials => ({ kind: 'apiKey', value: fc.revoked.secret }),
    (): Credentials => ({ kind: 'apiKey', value: '' }),
    (): Credentials => ({ kind: 'apiKey', value: 'k'.repeat(10_000) }),
    (): Credentials => ({ kind: 'apiKey', value: `${key.secret}\u0000` }),
    (): Credentials => ({ kind: 'apiKey', value: 'ключ' }),
    (): Credentials => ({ kind: 'apiKey', value: [key.secret, 'second'] }),
    (): Credentials => ({ kind: 'apiKey', value: key.key_id }),
    // A valid key of another merchant: authenticated, but sees none of this merchant's resources.
    (): Credentials => ({ kind: 'apiKey', value: other.keys.test.secret }),
    // A valid X-Api-Key on a money route is signature_required.
    (): Credentials => ({ kind: 'apiKey', value: key.secret }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'expired' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'future' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'body' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'url' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'idempotency' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'method' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'secret' }),
    (): Credentials => ({ kind: 'signature', key, tamper: 'many' }),
    (): Credentials => ({ kind: 'signature', key: fc.revoked }),
    (): Credentials => ({ kind: 'signature', key: { key_id: key.key_id, secret: other.keys.test.secret } }),
    // A valid X-Api-Key does not rescue a broken X-Signature.
    (): Credentials => ({ kind: 'signature', key, tamper: 'body', apiKey: key.secret }),
    (): Credentials => ({
      kind: 'rawSignature',
      value: pick(r, [
        '',
        'garbage',
        'key_id=,t=,v1=',
        `key_id=${key.key_id}`,
        `key_id=${key.key_id},t=abc,v1=${v1}`,
        `key_id=${key.key_id},t=${now},v1=zz`,
        `key_id=${key.key_id},t=99999999999999999999,v1=${v1}`,
        `key_id=${key.key_id},t=999999999999,v1=${v1}`,
        `key_id=${key.key_id},t=-1,v1=${v1}`,
        `key_id=${key.key_id},t=1e9,v1=${v1}`,
        `t=${now},v1=${v1}`,
        `key_id=${key.key_id},t=${now},v1=${v1.slice(1)}`,
        `key_id=${key.key_id};t=${now};v1=${v1}`,
        `key_id=${'k'.repeat(10_000)},t=${now},v1=${v1}`,
        `key_id=' OR 1=1--,t=${now},v1=${v1}`,
        `key_id=mk_test_\u0000,t=${now},v1=${v1}`,
        `key_id=ключ,t=${now},v1=${v1}`,
        `key_id=${key.key_id},t=${now},v0=${v1}`,
        `key_id=${key.key_id},t=${now},${Array.from({ length: 9 }, () => `v1=${v1}`).join(',')}`,
        `key_id=${key.key_id},t=${now},t=${now},v1=${v1}`,
        `key_id=${key.key_id},t=${now},v1=${v1}\r\nX-Injected: 1`,
        '=,=,=',
        ',,,,',
      ]),
    }),
    (): Credentials => ({ kind: 'rawSignature', value: ['garbage', 'more'], apiKey: key.secret }),
  ])()
}

function generate(index: number, fc: FuzzContext): Draft {
  const r = seededRandom((SEED ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0)
  const target = pick(r, fc.targets)
  const d: Draft = {
    index,
    target,
    method: target.method,
    segments: [...target.segments],
    query: target.query,
    body: target.body?.(),
    headers: {},
    credentials: { kind: 'none' },
    uniqueKey: false,
    tags: [],
  }
  d.credentials = chooseCredentials(r, d, fc)
  if (target.idempotency === 'required' || (target.idempotency === 'optional' && chance(r, 0.5))) {
    d.idempotencyKey = `fz-${SEED}-${index}`
    d.uniqueKey = true
  }
  if (!chance(r, 0.07)) {
    const applicable = MUTATORS.filter((m) => m.applies(d))
    const total = applicable.reduce((sum, m) => sum + m.weight, 0)
    const times = chance(r, 0.6) ? 1 : chance(r, 0.75) ? 2 : 3
    for (let i = 0; i < times; i++) {
      let roll = r() * total
      let mutator = applicable[0] as Mutator
      for (const candidate of applicable) {
        mutator = candidate
        roll -= candidate.weight
        if (roll < 0) break
      }
      mutator.apply(r, d, fc)
      d.tags.push(mutator.name)
    }
  }
  // An expectation holds only for a request whose one change is the one that sets it.
  if (d.tags.length !== 1 || d.method !== target.method) {
    delete d.expect
    delete d.forbid
  }
  if (!d.tags.length) d.tags.push('valid')
  return d
}

interface Sent {
  options: InjectOptions & { url: string; headers: Record<string, string | string[]> }
  /** Printable, with credentials named rather than shown. */
  describe(): string
}

function finalize(d: Draft): Sent {
  const path = `/${d.segments.join('/')}`
  const url = d.query ? `${path}?${d.query}` : path
  const payload = d.payload ?? (d.body === undefined ? undefined : serialize(d.body))
  const headers: Record<string, string | string[]> = {}
  if (d.contentType === undefined) {
    if (payload !== undefined) headers['content-type'] = 'application/json'
  } else if (d.contentType !== null) headers['content-type'] = d.contentType
  if (d.idempotencyKey !== undefined) headers['idempotency-key'] = d.idempotencyKey
  Object.assign(headers, d.headers)

  const c = d.credentials
  let credentialNote: string = c.kind
  if (c.kind === 'apiKey') headers['x-api-key'] = c.value
  if (c.kind === 'rawSignature') {
    headers['x-signature'] = c.value
    if (c.apiKey) headers['x-api-key'] = c.apiKey
  }
  if (c.kind === 'signature') {
    // What the server sees as the URL: light-my-request sends it WHATWG-normalized.
    const sent = new URL(url, 'http://localhost')
    const signedUrl = c.tamper === 'url' ? `${sent.pathname}x${sent.search}` : sent.pathname + sent.search
    const now = Math.floor(Date.now() / 1000)
    const t = c.tamper === 'expired' ? now - 301 : c.tamper === 'future' ? now + 301 : now
    const key = Array.isArray(d.idempotencyKey) ? (d.idempotencyKey[0] ?? '') : (d.idempotencyKey ?? '')
    const body = payload ?? ''
    const v1 = sign(
      c.tamper === 'secret' ? `${c.key.secret}x` : c.key.secret,
      t,
      c.tamper === 'method' ? (d.method === 'GET' ? 'POST' : 'GET') : d.method,
      signedUrl,
      c.tamper === 'idempotency' ? `${key}x` : key,
      c.tamper === 'body' ? Buffer.concat([Buffer.from(body), Buffer.from(' ')]) : body,
    )
    const entries = c.tamper === 'many' ? [...Array.from({ length: 8 }, () => '0'.repeat(64)), v1] : [v1]
    headers['x-signature'] = `key_id=${c.key.key_id},t=${t},${entries.map((e) => `v1=${e}`).join(',')}`
    if (c.apiKey) headers['x-api-key'] = c.apiKey
    credentialNote = `signature${c.tamper ? `(${c.tamper})` : ''}`
  }
  const options = {
    method: d.method as InjectOptions['method'],
    url,
    headers,
    ...(payload !== undefined && { payload }),
  }
  return {
    options,
    describe() {
      const shown: Record<string, unknown> = {}
      for (const [name, value] of Object.entries(headers)) {
        const text = Array.isArray(value) ? value.join(' | ') : value
        // Real keys and signatures are named, not shown; a made-up X-Signature is shown as sent.
        shown[name] =
          name === 'x-api-key' || (name === 'x-signature' && c.kind !== 'rawSignature')
            ? `<${credentialNote}: ${text.length} chars>`
            : text.length > 120
              ? `${text.slice(0, 120)}…(${text.length} chars)`
              : text
      }
      const bodyText =
        payload === undefined
          ? 'none'
          : `${Buffer.byteLength(payload)} bytes: ${JSON.stringify(Buffer.from(payload).toString('utf8').slice(0, 300))}`
      return `#${d.index} ${d.method} ${url.length > 300 ? `${url.slice(0, 300)}…` : url} [${d.tags.join(', ')}] headers=${JSON.stringify(shown)} body=${bodyText}`
    },
  }
}

// ---------------------------------------------------------------------------------------------------------
// What every reply must be.

const STACK_FRAME = /\bat (?:[\w$.<>[\] ]+ \()?(?:file:\/\/|node:|\/)[^\s)]*:\d+:\d+/
const SQL_TEXT = [
  /\bselect\s+[\w"*]/i,
  /\binsert\s+into\b/i,
  /\bupdate\s+"?\w+"?\s+set\b/i,
  /\bdelete\s+from\b/i,
  /syntax error/i,
  /\brelation\s+"/i,
  /violates [\w\s]*constraint/i,
  /duplicate key value/i,
  /invalid input syntax/i,
  /invalid byte sequence/i,
  /column\s+"\w+"/i,
  /\bpglite\b/i,
  /\bkysely\b/i,
  /\bSQLSTATE\b|\bpg_\w+\(/i,
]
const FILE_CONTENT = [/"devDependencies"/, /root:x:0:0/, /MASTER_KEY=/]
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/
/** Refusals before the request owns its key (docs/API.md, Idempotency): the key must not be stored. */
const NEVER_OWN = new Set([
  'unauthorized',
  'signature_required',
  'signature_invalid',
  'signature_expired',
  'malformed_request',
  'idempotency_key_required',
  'idempotency_key_invalid',
  'payload_too_large',
  'unsupported_media_type',
  'validation_failed',
  'unsupported_currency',
  'unsupported_payment_method',
  'method_not_allowed',
  'rate_limited',
])

interface Verdict {
  problems: string[]
  code?: string
  hostedPage404: boolean
}

function judge(d: Draft, sent: Sent, res: LightMyRequestResponse): Verdict {
  const problems: string[] = []
  const status = res.statusCode
  const body = res.body
  const type = String(res.headers['content-type'] ?? '')
  const requestText = `${sent.options.url} ${JSON.stringify(sent.options.headers)} ${
    sent.options.payload === undefined
      ? ''
      : Buffer.from(sent.options.payload as string | Buffer).toString('utf8')
  }`.toLowerCase()
  let code: string | undefined
  let hostedPage404 = false

  if (status >= 500) problems.push(`status ${status}`)
  if (d.expect !== undefined && status !== d.expect) problems.push(`expected ${d.expect}, got ${status}`)
  if (d.forbid !== undefined && status === d.forbid) problems.push(`must not be ${d.forbid}`)

  const requestId = res.headers['x-request-id']
  if (typeof requestId !== 'string' || !REQUEST_ID.test(requestId))
    problems.push(`X-Request-Id is ${JSON.stringify(requestId)}`)
  for (const name of Object.keys(res.headers))
    if (name === 'x-injected' || name === 'set-cookie') problems.push(`injected response header ${name}`)
  for (const [name, value] of Object.entries(res.headers))
    if (/[\r\n\0]/.test(String(value))) problems.push(`response header ${name} holds CR, LF or NUL`)

  const inspect = d.method !== 'HEAD' && body.length > 0
  if (status >= 400 && inspect) {
    if (type.startsWith('application/json')) {
      let parsed: unknown
      try {
        parsed = JSON.parse(body)
      } catch {
        problems.push('error body is not JSON')
      }
      const envelope = parsed as { error?: Record<string, unknown> } | undefined
      const error = envelope?.error
      if (!envelope || typeof envelope !== 'object' || Object.keys(envelope).join() !== 'error' || !error)
        problems.push('error body is not { error: … }')
      else {
        code = typeof error.code === 'string' ? error.code : undefined
        const keys = Object.keys(error).sort().join()
        const allowed = ['code,details,message,request_id', 'code,details,errors,message,request_id']
        if (!allowed.includes(keys)) problems.push(`error fields are ${keys}`)
        if (!code || !(code in ERROR_STATUS))
          problems.push(`unknown error code ${JSON.stringify(error.code)}`)
        else if (ERROR_STATUS[code as keyof typeof ERROR_STATUS] !== status)
          problems.push(`code ${code} with status ${status}`)
        if (typeof error.message !== 'string' || !error.message) problems.push('error.message is empty')
        if (res.headers['idempotent-replayed'] !== 'true' && error.request_id !== requestId)
          problems.push('error.request_id is not the X-Request-Id')
        if (error.details !== null && !isPlainObject(error.details))
          problems.push('error.details is not an object')
        if ('errors' in error) {
          if (code !== 'validation_failed') problems.push(`errors on a ${code}`)
          const errors = error.errors
          if (
            !isPlainObject(errors) ||
            !Object.values(errors).every((m) => Array.isArray(m) && m.every((x) => typeof x === 'string'))
          )
            problems.push('errors is not a map of message lists')
        }
      }
    } else if (
      status === 404 &&
      (d.method === 'GET' || d.method === 'HEAD') &&
      sent.options.url.startsWith('/pay/') &&
      /^text\/(html|plain)/.test(type)
    ) {
      // The hosted page's own not-found page, and its assets' plain 404.
      hostedPage404 = true
    } else problems.push(`error reply is ${type || 'untyped'}, not the JSON envelope`)
  }

  const isStaticAsset =
    status < 400 && (sent.options.url.startsWith('/docs') || sent.options.url.startsWith('/pay/assets/'))
  if (inspect && !isStaticAsset) {
    const frame = body.match(STACK_FRAME)
    if (frame && !requestText.includes(frame[0].toLowerCase())) problems.push(`stack trace: ${frame[0]}`)
    if (body.includes(process.cwd()) && !requestText.includes(process.cwd().toLowerCase()))
      problems.push('a file path of the server')
    for (const pattern of FILE_CONTENT) if (pattern.test(body)) problems.push(`file content: ${pattern}`)
    if (status >= 400)
      for (const pattern of SQL_TEXT) {
        const found = body.match(pattern)
        if (found && !requestText.includes(found[0].toLowerCase())) problems.push(`SQL text: ${found[0]}`)
      }
  }
  return { problems, code, hostedPage404 }
}

/** Webhook attempts fail at once: the fuzz never leaves the machine, whatever URL it configures. */
const offlineSender: Sender = {
  send: async () => ({
    ok: false,
    status: null,
    body: null,
    error: 'fuzz: deliveries are not sent',
    durationMs: 0,
    retryAfterSeconds: null,
    startedAt: new Date(),
  }),
  close: async () => {},
}

/** What the server logged as the error of a request (the first error line carrying its id). */
function serverCause(ctx: TestContext, requestId: string): string {
  for (const line of ctx.logs) {
    if (!line.includes(requestId) || !line.includes('"level":50')) continue
    const err = (JSON.parse(line) as { err?: { code?: string; message?: string } }).err
    return [err?.code, err?.message].filter(Boolean).join(' ').slice(0, 160)
  }
  return ''
}

const countBy = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)
const show = (map: Map<string | number, number>) =>
  [...map.entries()]
    .sort(([a], [b]) => (String(a) < String(b) ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')

for (const backend of backends()) {
  describe(`fuzz: ${ONLY ? `requests ${ONLY.join(',')}` : `${COUNT} hostile requests`} on every route (${backend})`, () => {
    let ctx: TestContext
    let fc: FuzzContext
    before(async () => {
      ctx = await createTestContext(backend, {}, { sender: offlineSender })
      fc = await buildTargets(ctx)
    })
    after(() => ctx.close())

    it(`answers every request with a 4xx or 2xx in the one envelope, in time (seed ${SEED})`, async (t) => {
      const statuses = new Map<number, number>()
      const perRoute = new Map<string, { total: number; ok: number; refused: number }>()
      const tags = new Map<string, number>()
      const clientErrors = new Map<string, number>()
      const problems: string[] = []
      /** One line per kind of failure: route, status, first problem. */
      const problemKinds = new Map<string, { count: number; first: number }>()
      const hung: string[] = []
      const refusedKeys: string[] = []
      let hostedPage404 = 0
      let expectations = 0
      let sentCount = 0
      const started = Date.now()

      const indices = ONLY ?? Array.from({ length: COUNT }, (_, i) => i)
      for (const index of indices) {
        const d = generate(index, fc)
        const sent = finalize(d)
        for (const tag of d.tags) countBy(tags, tag)
        let timer: NodeJS.Timeout | undefined
        let res: LightMyRequestResponse | 'hung'
        try {
          res = await Promise.race([
            injectToEnd(fc.ctx, sent.options),
            new Promise<'hung'>((resolve) => {
              timer = setTimeout(() => resolve('hung'), HANG_MS)
            }),
          ])
        } catch (error) {
          // light-my-request refused to build the request: not a server result.
          countBy(clientErrors, (error as Error).message.slice(0, 80))
          continue
        } finally {
          clearTimeout(timer)
        }
        sentCount++
        if (res === 'hung') {
          hung.push(sent.describe())
          continue
        }
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
        const route = perRoute.get(d.target.name) ?? { total: 0, ok: 0, refused: 0 }
        route.total++
        if (res.statusCode < 400) route.ok++
        else route.refused++
        perRoute.set(d.target.name, route)

        if (process.env.FUZZ_DEBUG && d.tags.join() === 'valid' && res.statusCode >= 400)
          console.log('valid refused', sent.describe(), res.statusCode, res.body.slice(0, 300))
        const verdict = judge(d, sent, res)
        if (d.expect !== undefined || d.forbid !== undefined) expectations++
        if (verdict.hostedPage404) hostedPage404++
        if (verdict.problems.length) {
          const cause = res.statusCode >= 500 ? serverCause(ctx, String(res.headers['x-request-id'])) : ''
          const kind = `${d.target.name} → ${res.statusCode}: ${verdict.problems.join('; ')}${cause && ` [server log: ${cause}]`}`
          const seen = problemKinds.get(kind) ?? { count: 0, first: d.index }
          seen.count++
          problemKinds.set(kind, seen)
          problems.push(
            `${sent.describe()}\n    → ${res.statusCode} ${res.headers['content-type']} ${res.body.slice(0, 400)}\n    problems: ${verdict.problems.join('; ')}`,
          )
        }
        if (d.uniqueKey && verdict.code && NEVER_OWN.has(verdict.code))
          refusedKeys.push(d.idempotencyKey as string)
      }
      const seconds = (Date.now() - started) / 1000

      // Refused requests left no key behind; nothing is left running.
      const stored: string[] = []
      for (let i = 0; i < refusedKeys.length; i += 500) {
        const rows = await ctx.db
          .selectFrom('idempotency_keys')
          .select('key')
          .where('key', 'in', refusedKeys.slice(i, i + 500))
          .execute()
        stored.push(...rows.map((row) => row.key))
      }
      const running = await ctx.db
        .selectFrom('idempotency_keys')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('state', '=', 'running')
        .executeTakeFirstOrThrow()
      const ledger = await ctx.services.ledger.verify()

      t.diagnostic(
        `seed ${SEED}: ${indices.length} generated, ${sentCount} answered or hung, ${seconds.toFixed(1)} s (${(sentCount / seconds).toFixed(0)} req/s)`,
      )
      t.diagnostic(`status counts: ${show(statuses)}`)
      t.diagnostic(
        `hung: ${hung.length}; client-side (light-my-request) errors: ${[...clientErrors.values()].reduce((a, b) => a + b, 0)} ${show(clientErrors)}`,
      )
      t.diagnostic(`hosted-page HTML/plain 404s (not the JSON envelope, by design): ${hostedPage404}`)
      t.diagnostic(
        `single-mutation requests with a fixed expected status (400/413/415, or not 413): ${expectations}`,
      )
      t.diagnostic(
        `refused requests with their own Idempotency-Key: ${refusedKeys.length}, of which stored: ${stored.length}; keys left running: ${running.n}`,
      )
      t.diagnostic(`ledger: ok=${ledger.ok}, ${ledger.entries} entries`)
      t.diagnostic(`mutations: ${show(tags)}`)
      for (const [name, c] of [...perRoute.entries()].sort())
        t.diagnostic(`  ${name}: ${c.total} (${c.ok} accepted, ${c.refused} refused)`)

      const report = (label: string, list: string[]) =>
        `${list.length} ${label} (replay one with FUZZ_SEED=${SEED} FUZZ_ONLY=<#>):\n${list.slice(0, 25).join('\n')}`
      assert.equal(hung.length, 0, report('hung requests', hung))
      const kinds = [...problemKinds.entries()].map(([k, v]) => `${v.count}× ${k} (first #${v.first})`)
      for (const kind of kinds) t.diagnostic(`problem: ${kind}`)
      assert.equal(problems.length, 0, `${report('bad replies', problems)}\nBy kind:\n${kinds.join('\n')}`)
      assert.deepEqual(stored, [], 'a refused request kept its Idempotency-Key')
      assert.equal(Number(running.n), 0, 'an Idempotency-Key was left running')
      assert.ok(ledger.ok, `the ledger no longer verifies: ${JSON.stringify(ledger)}`)
      assert.equal(ctx.serverErrors.length, 0)
      if (!ONLY) {
        // The generator reaches every route, and on a full-size run gets requests accepted by each: a route whose
        // every request is refused would only ever fuzz its refusals.
        for (const target of fc.targets) {
          const seen = perRoute.get(target.name)
          assert.ok(seen && seen.total > 0, `no request reached ${target.name}`)
          if (COUNT >= 1000) assert.ok(seen.ok > 0, `no request to ${target.name} was accepted`)
        }
      }
    })
  })
}

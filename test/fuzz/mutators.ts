/**
 * Requests in the making (Draft), and the mutations that break them: a valid request per target, then one to
 * three mutations.
 */

import { Entries, pairsOf, Raw, RawBytes, serialize } from './json.ts'
import type { FuzzContext, Target } from './targets.ts'
import {
  alternative,
  BAD_BYTES,
  badCursor,
  breakJson,
  chance,
  deepArray,
  deepObject,
  hostileSegment,
  hostileValue,
  int,
  longString,
  METHODS,
  NON_JSON_TYPES,
  NUMBERS,
  ODD_JSON_TYPES,
  pct,
  pick,
  queryValue,
  type Rng,
  randomText,
  SEED,
  unicodeString,
} from './values.ts'

export type Credentials =
  | { kind: 'none' }
  | { kind: 'apiKey'; value: string | string[] }
  | {
      kind: 'signature'
      key: { key_id: string; secret: string }
      tamper?: 'expired' | 'future' | 'body' | 'url' | 'idempotency' | 'method' | 'secret' | 'many'
      apiKey?: string
    }
  | { kind: 'rawSignature'; value: string | string[]; apiKey?: string }

export interface Draft {
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
/** Replaces the query's `name` parameters (and its empty pairs) with `name=value` for each of `values`, last. */
function setParam(d: Draft, name: string, ...values: string[]) {
  const pairs = d.query.split('&').filter((p) => p && !p.startsWith(`${name}=`))
  d.query = [...pairs, ...values.map((value) => `${name}=${value}`)].join('&')
}
const fieldOf = (r: Rng, d: Draft) =>
  d.target.bodyFields.length && chance(r, 0.9) ? pick(r, d.target.bodyFields) : pick(r, ['amount', 'x'])

const BODY_LIMIT = 64 * 1024

/** Page sizes out of range, malformed or oddly written, and a few good ones among them. */
const PER_PAGE_VALUES = [
  '0',
  '-1',
  '101',
  '100',
  '1',
  '1.5',
  '1e2',
  'abc',
  '',
  '99999999999999999999',
  '1e309',
  '%205',
  '5%20',
  '0x10',
  '%00',
  '٣',
  '+5',
  '05',
]

export interface Mutator {
  name: string
  weight: number
  applies(d: Draft): boolean
  apply(r: Rng, d: Draft, fc: FuzzContext): void
}

export const MUTATORS: Mutator[] = [
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
      // A real cursor under other filters is refused too.
      if (chance(r, 0.2))
        d.query = `${d.query}&${pick(r, ['status=paid', 'per_page=7', 'currency=USD', 'event=webhook.test'])}`
      setParam(d, 'cursor', chance(r, 0.15) ? pick(r, fc.cursors) : badCursor(r, fc))
    },
  },
  {
    name: 'per-page',
    weight: 2,
    applies: (d) => d.target.queryFields.includes('per_page'),
    apply: (r, d) => {
      const values: string[] = []
      for (let i = 0; i < (chance(r, 0.2) ? 2 : 1); i++) values.push(pick(r, PER_PAGE_VALUES))
      setParam(d, 'per_page', ...values)
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
        'r'.repeat(1000),
        'r'.repeat(128),
        'r'.repeat(129),
        'abc\r\nSet-Cookie: session=x',
        'abc\r\nX-Injected: 1',
        'ключ',
        '',
        ['one', 'two'],
        '<script>',
        'a b',
      ])
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

/**
 * JSON with what JSON.stringify cannot write: raw number text, duplicate and __proto__ keys, invalid UTF-8. A
 * fuzz body is built of these and written by serialize().
 */

/** Written into the JSON text as is: `1e309`, `-0`, `9007199254740993`, or something that breaks the JSON. */
export class Raw {
  constructor(readonly text: string) {}
}
/** An object as a list of pairs: keys may repeat, and `__proto__` is an own key. */
export class Entries {
  constructor(readonly pairs: [string, unknown][]) {}
}
/** A JSON string whose content is these bytes, not necessarily UTF-8. */
export class RawBytes {
  constructor(readonly bytes: number[]) {}
}

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
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
export function serialize(value: unknown): string | Buffer {
  const bytes: Buffer[] = []
  const text = toJson(value, bytes)
  if (!bytes.length) return text
  return Buffer.concat(
    text.split('\u0000').map((part, i) => (i % 2 ? (bytes[Number(part)] as Buffer) : Buffer.from(part))),
  )
}

export const pairsOf = (body: unknown): [string, unknown][] =>
  body instanceof Entries ? [...body.pairs] : isPlainObject(body) ? Object.entries(body) : []

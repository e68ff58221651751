import { randomBytes, randomFillSync } from 'node:crypto'
import { v7 } from 'uuid'

/** A new time-ordered identifier (UUIDv7), as the contract asks for every new id. */
export const newId = (): string => v7()

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/**
 * `length` characters drawn uniformly from base62. Rejection sampling keeps the distribution flat:
 * a byte is used only when it is below 248 (= 4 × 62), so `byte % 62` has no bias.
 */
export function randomBase62(length: number): string {
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62]
      if (out.length === length) break
    }
  }
  return out
}

/** 43 base62 characters carry 256 bits, i.e. at least 32 random bytes. */
export const SECRET_LENGTH = 43

/**
 * Random bytes for tokens, drawn from a buffer the CSPRNG refills 256 tokens at a time (each byte is handed
 * out once), as the uuid package does for its ids: one call into OpenSSL per token was a measurable part of a
 * payment's CPU time.
 */
const tokenPool = Buffer.alloc(4096)
let tokenPoolOffset = tokenPool.length
function pooledRandom(bytes: number): Buffer {
  if (tokenPoolOffset + bytes > tokenPool.length) {
    randomFillSync(tokenPool)
    tokenPoolOffset = 0
  }
  const out = tokenPool.subarray(tokenPoolOffset, tokenPoolOffset + bytes)
  tokenPoolOffset += bytes
  return out
}

/** An opaque 128-bit token for the hosted payment page, URL-safe. */
export const newPaymentToken = (): string => pooledRandom(16).toString('base64url')

export const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
const UUID_REGEX = new RegExp(UUID_PATTERN)
export const isUuid = (value: string): boolean => UUID_REGEX.test(value)

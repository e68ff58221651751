import { randomBytes } from 'node:crypto'
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

/** An opaque 128-bit token for the hosted payment page, URL-safe. */
export const newPaymentToken = (): string => randomBytes(16).toString('base64url')

export const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
export const isUuid = (value: string): boolean => new RegExp(UUID_PATTERN).test(value)

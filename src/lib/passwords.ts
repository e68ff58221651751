import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto'

/**
 * Password hashing with scrypt (memory-hard): `scrypt$<N>$<r>$<p>$<salt>$<hash>`, salt and hash base64url.
 * The parameters travel in the string, so raising them later leaves older hashes verifiable.
 */
export interface ScryptParams {
  N: number
  r: number
  p: number
}

/**
 * N=2^15, r=8, p=1: 32 MiB of memory and about 100 ms per hash, within OWASP's advice for scrypt
 * (N=2^15 or more at r=8, p=1 or more). The parameters are stored in each hash, so they can be raised later.
 */
export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 15, r: 8, p: 1 }
const KEY_LENGTH = 32
const SALT_LENGTH = 16

function derive(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const options: ScryptOptions = {
    N: params.N,
    r: params.r,
    p: params.p,
    // Node refuses above 32 MiB by default; allow twice what the parameters need.
    maxmem: 256 * params.N * params.r * params.p,
  }
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  )
}

export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  const salt = randomBytes(SALT_LENGTH)
  const key = await derive(password, salt, params)
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join(
    '$',
  )
}

/** Whether `password` matches `stored`; a string of another form never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || !salt || !hash) return false
  const params = { N: Number(n), r: Number(r), p: Number(p) }
  if (![params.N, params.r, params.p].every((v) => Number.isInteger(v) && v > 0)) return false
  const expected = Buffer.from(hash, 'base64url')
  const actual = await derive(password, Buffer.from(salt, 'base64url'), params)
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}

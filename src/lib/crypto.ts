import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto'

export const sha256Hex = (input: string | Buffer): string => createHash('sha256').update(input).digest('hex')

export const hmacSha256Hex = (key: string | Buffer, message: string | Buffer): string =>
  createHmac('sha256', key).update(message).digest('hex')

/** A key of its own for one purpose, derived from the master key (HKDF-SHA256), so no two uses share a key. */
export const deriveKey = (masterKey: Buffer, purpose: string): Buffer =>
  Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), `merchant-gateway:${purpose}`, 32))

/** Compares two strings in time independent of where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  if (left.length !== right.length) {
    // Still spend the comparison so the length difference is the only signal.
    timingSafeEqual(left, left)
    return false
  }
  return timingSafeEqual(left, right)
}

/** AES-256-GCM: `v1.<iv>.<tag>.<ciphertext>`, each base64url. The master key is 32 bytes. */
export function encryptSecret(masterKey: Buffer, plaintext: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv)
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return ['v1', iv, cipher.getAuthTag(), ciphertext]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.')
}

export function decryptSecret(masterKey: Buffer, sealed: string): string {
  const [version, iv, tag, ciphertext] = sealed.split('.')
  if (version !== 'v1' || !iv || !tag || ciphertext === undefined)
    throw new Error('unrecognised sealed secret format')
  const decipher = createDecipheriv('aes-256-gcm', masterKey, Buffer.from(iv, 'base64url'))
  decipher.setAuthTag(Buffer.from(tag, 'base64url'))
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString(
    'utf8',
  )
}

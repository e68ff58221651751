/** Types for sign.mjs, for TypeScript projects that copy it. */

export interface SignedRequest {
  /** Unix seconds; the server accepts it within 300 s of its clock. */
  t: number
  /** GET, POST, PUT… (upper-cased before signing). */
  method: string
  /** The path and query exactly as sent, e.g. `/integration/transactions?status=paid`. */
  path: string
  /** The Idempotency-Key header sent with the request, or empty. */
  idempotencyKey?: string
  /** The raw body bytes sent, or empty. */
  body?: string | Uint8Array
}

/** `<t>.<METHOD>.<path and query>.<Idempotency-Key or empty>.<raw body bytes>` */
export function stringToSign(input: SignedRequest): Buffer

/** hex(HMAC-SHA256(secret, stringToSign(input))) */
export function signature(secret: string, input: SignedRequest): string

/** `key_id=<key_id>,t=<unix seconds>,v1=<hex>`; `t` defaults to now. */
export function signatureHeader(
  input: Omit<SignedRequest, 't'> & { keyId: string; secret: string; t?: number },
): string

/** What every reply must be: the invariants the fuzz checks on each answer (judge). */

import type { LightMyRequestResponse } from 'fastify'
import { ERROR_STATUS } from '../../src/http/errors.ts'
import type { Sent } from './generators.ts'
import { isPlainObject } from './json.ts'
import type { Draft } from './mutators.ts'

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
export const NEVER_OWN = new Set([
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

export interface Verdict {
  problems: string[]
  code?: string
  hostedPage404: boolean
}

export function judge(d: Draft, sent: Sent, res: LightMyRequestResponse): Verdict {
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

import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance } from 'fastify'

/**
 * Bodies are validated strictly (no coercion, unknown fields refused); query and path values arrive as
 * strings, so those are coerced to the declared types.
 */
export function registerValidators(app: FastifyInstance): void {
  const ajvOptions = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false } as const
  const bodyAjv = addFormats.default(new Ajv({ ...ajvOptions, coerceTypes: false }))
  const paramAjv = addFormats.default(new Ajv({ ...ajvOptions, coerceTypes: true }))
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : paramAjv).compile(schema),
  )
}

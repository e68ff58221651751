import { type Static, type TSchema, type TSchemaOptions, type TUnsafe, Type } from 'typebox'
import { UUID_PATTERN } from '../lib/ids.ts'

/** Shared pieces of route schemas. */
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()])

export const Uuid = (description?: string) =>
  Type.String({
    format: 'uuid',
    pattern: UUID_PATTERN,
    description,
    examples: ['01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10'],
  })
export const Timestamp = (description?: string) =>
  Type.String({ format: 'date-time', description, examples: ['2026-11-22T10:15:30.123Z'] })

export const HttpUrl = (description: string) =>
  Type.String({
    format: 'uri',
    pattern: '^https?://',
    maxLength: 2048,
    description,
    examples: ['https://shop.example/payments/callback'],
  })

/** Where the status callbacks of the `noun` a request creates go, instead of the webhook URL. */
export const CallbackUrl = (noun: string) =>
  Type.Optional(Nullable(HttpUrl(`Where status callbacks for this ${noun} go (overrides the webhook URL).`)))

/** PostgreSQL text and jsonb cannot hold U+0000: refuse it at the edge (422) rather than fail in the query. */
export const NO_NUL_PATTERN = '^[^\\u0000]*$'

/** An object of at most `pairs` string pairs: keys up to 40 characters, values up to `valueLength`. */
export const StringPairs = (
  pairs: number,
  valueLength: number,
  options: { description: string; examples: Record<string, string>[] },
) =>
  Type.Record(
    Type.String({ maxLength: 40 }),
    Type.String({ maxLength: valueLength, pattern: NO_NUL_PATTERN }),
    {
      maxProperties: pairs,
      // Type.Record drops the key schema's maxLength (it becomes a `^.*$` pattern): bound the keys here.
      propertyNames: { maxLength: 40, pattern: NO_NUL_PATTERN },
      ...options,
    },
  )

/** ≤ 20 string pairs, keys ≤ 40 characters, values ≤ 500. */
export const Metadata = StringPairs(20, 500, {
  description: 'Up to 20 string pairs of your own; keys up to 40 characters, values up to 500.',
  examples: [{ order: 'A-1001' }],
})

export const StringMap = (description: string) => Type.Record(Type.String(), Type.String(), { description })

// A malformed uuid in a path names nothing: the service answers 404 rather than a validation error.
export const UuidParams = Type.Object(
  {
    uuid: Type.String({
      description: 'The resource uuid.',
      examples: ['01936b2e-7c4a-7d1e-9a3b-5f2c8e4d6a10'],
    }),
  },
  { additionalProperties: false },
)

/**
 * A module's routes plugin that first registers `schemas` with `app.addSchema`, marked as not encapsulated (what
 * fastify-plugin does): the schemas belong to the whole app, so other modules' routes and the OpenAPI document
 * can reference them.
 */
export function sharedSchemas<A extends { addSchema(schema: TSchema): unknown }, O>(
  schemas: TSchema[],
  plugin: (app: A, options: O) => Promise<void>,
): (app: A, options: O) => Promise<void> {
  const registering = async (app: A, options: O) => {
    for (const schema of schemas) app.addSchema(schema)
    await plugin(app, options)
  }
  return Object.assign(registering, { [Symbol.for('skip-override')]: true })
}

/**
 * A reference to a registered schema (`{ $ref: '<$id>' }`, a named component in the document), typed as the
 * schema itself: a route that answers with it has its handler's return checked against it.
 */
export const Ref = <T extends TSchema>(schema: T, options: TSchemaOptions = {}): TUnsafe<Static<T>> =>
  Type.Unsafe<Static<T>>(Type.Ref((schema as { $id?: string }).$id as string, options))

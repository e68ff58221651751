import { type TLiteral, type TSchemaOptions, type TUnion, type TUnsafe, Type } from 'typebox'

/**
 * `Type.Union([Type.Literal(a), Type.Literal(b), …])` of a list of values, typed as the union of the list: one
 * list gives the schema (an `anyOf` of `const`s in the OpenAPI document) and the TypeScript type. A list whose
 * length its type does not fix (one spread from another) is typed by its values alone.
 */
export function LiteralUnion<const T extends readonly string[]>(
  values: T,
  options: TSchemaOptions = {},
): number extends T['length'] ? TUnsafe<T[number]> : TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }> {
  return Type.Union(
    values.map((value) => Type.Literal(value)),
    options,
  ) as never
}

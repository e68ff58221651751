/** PostgreSQL's unique_violation, on the named constraint or index. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  const { code, constraint: name } = error as { code?: unknown; constraint?: unknown }
  return code === '23505' && name === constraint
}

/** A timestamp as the API writes it: ISO 8601 in UTC with milliseconds; null stays null. */
export function iso(date: Date): string
export function iso(date: Date | null): string | null
export function iso(date: Date | null): string | null {
  return date ? date.toISOString() : null
}

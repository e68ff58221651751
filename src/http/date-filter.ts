import { validationError } from './errors.ts'

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/

/**
 * A date filter of a list (`date_from`, `created_to`, …): a date `YYYY-MM-DD` covers its whole UTC day (from its
 * first millisecond, or to its last with `endOfDay`), or an ISO 8601 date-time with an offset. Anything else is
 * 422 on `field`.
 */
function parseDateFilter(field: string, value: string, endOfDay: boolean): Date {
  if (DATE_ONLY.test(value)) {
    const start = new Date(`${value}T00:00:00.000Z`)
    if (Number.isNaN(start.getTime()) || start.toISOString().slice(0, 10) !== value)
      throw validationError(field, 'is not a valid date')
    return endOfDay ? new Date(start.getTime() + 86_400_000 - 1) : start
  }
  const parsed = new Date(value)
  if (!DATE_TIME.test(value) || Number.isNaN(parsed.getTime())) {
    throw validationError(field, 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time')
  }
  return parsed
}

/** An inclusive range from two optional date filters; a start after the end is 422 on the start's field. */
export function parseDateRange(
  fromField: string,
  fromValue: string | undefined,
  toField: string,
  toValue: string | undefined,
): { from?: Date; to?: Date } {
  const from = fromValue !== undefined ? parseDateFilter(fromField, fromValue, false) : undefined
  const to = toValue !== undefined ? parseDateFilter(toField, toValue, true) : undefined
  if (from && to && from > to) throw validationError(fromField, `must not be after ${toField}`)
  return { from, to }
}

import { validationError } from './errors.ts'

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/

/** A `date_from`/`date_to` value: a bare date covers its whole UTC day (end inclusive for `date_to`). */
export function parseDateFilter(field: string, value: string, endOfDay: boolean): Date {
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

/** A `from`/`to` pair of date filters, checked to be in order: both inclusive, a bare `to` date to its day's end. */
export function dateRange(
  names: [from: string, to: string],
  query: Record<string, unknown>,
): { from?: Date; to?: Date } {
  const [fromName, toName] = names
  const fromText = query[fromName]
  const toText = query[toName]
  const from = typeof fromText === 'string' ? parseDateFilter(fromName, fromText, false) : undefined
  const to = typeof toText === 'string' ? parseDateFilter(toName, toText, true) : undefined
  if (from && to && from > to) throw validationError(fromName, `must not be after ${toName}`)
  return { from, to }
}

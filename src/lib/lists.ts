/** A comma-separated filter value (`?status=paid,failed`) as its distinct items in order, so equal filters compare equal. */
export const distinctSorted = (csv: string): string[] => [...new Set(csv.split(','))].sort()

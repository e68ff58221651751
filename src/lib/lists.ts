/** A comma-separated filter value (`?status=paid,failed`) as its distinct items in order, so equal filters compare equal. */
export const distinctSorted = (csv: string): string[] => [...new Set(csv.split(','))].sort()

/** Each batch of `batches` mapped with `view`, as they come: an export's rows as its views. */
export async function* mapBatches<R, V>(
  batches: AsyncIterable<R[]>,
  view: (row: R) => V,
): AsyncGenerator<V[]> {
  for await (const batch of batches) yield batch.map(view)
}

/** `rows` as the one batch of an export (an answer already whole, such as a summary). */
export async function* oneBatch<V>(rows: V[]): AsyncGenerator<V[]> {
  yield rows
}

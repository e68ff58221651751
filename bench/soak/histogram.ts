/**
 * Latencies as histograms: log-scale buckets, 2 % wide, from 0.05 ms up. One per second of the run (and one per
 * kind of request), merged for any stretch of seconds, so a percentile of any window is read to within 2 %.
 */

const BUCKET_BASE = 0.05
const BUCKET_GROWTH = 1.02
export const BUCKETS = Math.ceil(Math.log(300_000 / BUCKET_BASE) / Math.log(BUCKET_GROWTH)) + 1

export const bucketOf = (ms: number) =>
  ms <= BUCKET_BASE
    ? 0
    : Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / BUCKET_BASE) / Math.log(BUCKET_GROWTH)))

/** A bucket's upper bound: a percentile read from the histogram is at most 2 % above the true one. */
export const bucketMs = (bucket: number) => BUCKET_BASE * BUCKET_GROWTH ** bucket

/** Counts one latency into a histogram. */
export function record(histogram: Uint32Array, ms: number) {
  const bucket = bucketOf(ms)
  histogram[bucket] = (histogram[bucket] ?? 0) + 1
}

export function percentileOf(histogram: Uint32Array, p: number): number {
  let total = 0
  for (const n of histogram) total += n
  if (total === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * total)
  let seen = 0
  for (let b = 0; b < histogram.length; b++) {
    seen += histogram[b] ?? 0
    if (seen >= rank) return bucketMs(b)
  }
  return Number.NaN
}

/** The highest bucket with a latency in it: the maximum, to within 2 %. */
export function maxOf(histogram: Uint32Array): number {
  for (let b = histogram.length - 1; b >= 0; b--) if ((histogram[b] ?? 0) > 0) return bucketMs(b)
  return Number.NaN
}

export function merge(into: Uint32Array, from: Uint32Array) {
  for (let b = 0; b < from.length; b++) into[b] = (into[b] ?? 0) + (from[b] ?? 0)
}

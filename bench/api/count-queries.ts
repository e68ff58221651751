/**
 * Preloaded into the server by `bench/api/run.ts --profile` (node --import): counts the statements the
 * server sends through `pg` (BEGIN and COMMIT included) and, on SIGUSR2, writes the count so far as JSON to
 * BENCH_QUERY_COUNT_FILE, so that the runner can divide the statements of a run by its requests.
 */
import { writeFileSync } from 'node:fs'
import pg from 'pg'

const file = process.env.BENCH_QUERY_COUNT_FILE
const counts = new Map<string, number>()
let total = 0

/** The statement's shape: its first words, without values (Kysely sends parameters apart). */
const shape = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 60)

const original = pg.Client.prototype.query
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0]
  const text = typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '?')
  total++
  counts.set(shape(text), (counts.get(shape(text)) ?? 0) + 1)
  return (original as (...a: unknown[]) => unknown).apply(this, args)
} as typeof pg.Client.prototype.query

process.on('SIGUSR2', () => {
  if (file) writeFileSync(file, JSON.stringify({ total, byStatement: Object.fromEntries(counts) }))
})

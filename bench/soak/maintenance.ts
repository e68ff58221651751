/**
 * Where the PostgreSQL runs with autovacuum off (as on some sandboxes), the soak runner does its work once a minute,
 * by its default thresholds (PostgreSQL 15's autovacuum_*): a table is vacuumed when its dead rows pass 50 + 20 % of
 * its rows or its rows inserted since its last vacuum pass 1,000 + 20 %, and analysed (in the same command when both
 * are due, as autovacuum does) when its changes since its last analysis pass 50 + 10 %; throttled as this server's
 * autovacuum is (its autovacuum_vacuum_cost_delay and _limit, or vacuum's where they are -1), and without parallel
 * workers for the indexes, which autovacuum never uses (a manual VACUUM's would take both cores for the length of a
 * table's index pass). One round at a time, one table at a time.
 */
import type pg from 'pg'
import { fmt } from '../lib.ts'

export interface Maintenance {
  /** Starts a round unless one is running; each round is logged as it ends. */
  round(): Promise<void>
  readonly running: boolean
  /** Each finished round's length, in seconds. */
  rounds: number[]
  /** Table vacuums and analyses, in all. */
  done: { vacuum: number; analyze: number }
  /** Each table's share of the rounds: how often it was vacuumed or analysed, and the seconds that took. */
  tables: Map<string, { vacuum: number; analyze: number; seconds: number }>
}

export function maintenance(
  client: pg.Client,
  throttle: { delay: string; limit: string },
  log: (line: string) => void,
  /** Seconds of the run so far, for the log. */
  elapsedS: () => number,
): Maintenance {
  const rounds: number[] = []
  const done = { vacuum: 0, analyze: 0 }
  const tables = new Map<string, { vacuum: number; analyze: number; seconds: number }>()
  let running = false
  const round = async () => {
    if (running) return
    running = true
    const t0 = performance.now()
    try {
      await client.query(`SET vacuum_cost_delay = '${throttle.delay}'`)
      await client.query(`SET vacuum_cost_limit = ${Number(throttle.limit)}`)
      const { rows } = await client.query<{
        relname: string
        vacuumDue: boolean
        analyzeDue: boolean
      }>(
        `SELECT relname,
           n_dead_tup > 50 + 0.2 * n_live_tup OR n_ins_since_vacuum > 1000 + 0.2 * n_live_tup AS "vacuumDue",
           n_mod_since_analyze > 50 + 0.1 * n_live_tup AS "analyzeDue"
         FROM pg_stat_user_tables`,
      )
      const took: string[] = []
      for (const { relname, vacuumDue, analyzeDue } of rows) {
        if (!vacuumDue && !analyzeDue) continue
        const t1 = performance.now()
        await client.query(
          vacuumDue
            ? `VACUUM (${analyzeDue ? 'ANALYZE, ' : ''}PARALLEL 0) "${relname}"`
            : `ANALYZE "${relname}"`,
        )
        const seconds = (performance.now() - t1) / 1000
        const table = tables.get(relname) ?? { vacuum: 0, analyze: 0, seconds: 0 }
        for (const counts of [done, table]) {
          if (vacuumDue) counts.vacuum++
          if (analyzeDue) counts.analyze++
        }
        table.seconds += seconds
        tables.set(relname, table)
        took.push(
          `${[vacuumDue && 'vacuum', analyzeDue && 'analyze'].filter(Boolean).join(' + ')} ${relname} ${fmt(seconds, 2)} s`,
        )
      }
      rounds.push((performance.now() - t0) / 1000)
      log(
        `maintenance at ${fmt(elapsedS() / 60, 1)} min, ${fmt(rounds.at(-1) ?? 0, 1)} s: ${took.join(', ') || 'nothing'}`,
      )
    } catch (error) {
      log(`VACUUM failed: ${error instanceof Error ? error.message : String(error)}`)
    } finally {
      running = false
    }
  }
  return {
    round,
    get running() {
      return running
    },
    rounds,
    done,
    tables,
  }
}

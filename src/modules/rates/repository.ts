import type { Executor } from '../../db/index.ts'

export const listMarketRates = (db: Executor) =>
  db.selectFrom('fx_rates').selectAll().orderBy('currency').execute()

export const upsertMarketRate = (db: Executor, currency: string, rate: string, at: Date) =>
  db
    .insertInto('fx_rates')
    .values({ currency, market_rate: rate, updated_at: at })
    .onConflict((oc) => oc.column('currency').doUpdateSet({ market_rate: rate, updated_at: at }))
    .returningAll()
    .executeTakeFirstOrThrow()

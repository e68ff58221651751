import type { Db, Executor } from '../../db/index.ts'
import { newId } from '../../lib/ids.ts'
import * as repo from './repository.ts'

/** Methods paid host-to-host: the customer transfers to requisites from the operator's pool. */
export const H2H_METHODS = ['p2p_card', 'bank_transfer'] as const
export type H2hMethod = (typeof H2H_METHODS)[number]
export const isH2hMethod = (method: string): method is H2hMethod =>
  (H2H_METHODS as readonly string[]).includes(method)

export type RequisiteService = ReturnType<typeof createRequisiteService>

export function createRequisiteService(deps: { db: Db }) {
  return {
    add: (method: H2hMethod, fields: Record<string, string>) => addRequisite(deps.db, method, fields),
    list: () => repo.listRequisites(deps.db),
    assign: (trx: Executor, method: H2hMethod, at: Date) => assignRequisite(trx, method, at),
  }
}

/** Operator: adds requisites to the pool of a host-to-host method. */
export const addRequisite = (db: Executor, method: H2hMethod, fields: Record<string, string>) =>
  repo.insertRequisite(db, { uuid: newId(), payment_method: method, fields })

/** Assigns requisites inside the caller's transaction; null when the pool for the method is empty. */
export async function assignRequisite(trx: Executor, method: H2hMethod, at: Date) {
  return (await repo.takeLeastRecentlyUsed(trx, method, at)) ?? null
}

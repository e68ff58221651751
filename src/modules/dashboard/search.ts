import type { AuthContext } from '../../http/auth.ts'
import { isAmountOf, type SearchKey, searchKey } from '../../lib/search.ts'
import { iso } from '../../lib/time.ts'
import type { PayoutService } from '../payouts/service.ts'
import type { ProviderService } from '../providers/service.ts'
import type { RefundService } from '../refunds/service.ts'
import type { TransactionService } from '../transactions/service.ts'
import type { WebhookService } from '../webhooks/service.ts'
import type { SearchResult } from './schemas.ts'

/** What a search reads: each module's own search of its objects. */
export interface SearchDeps {
  transactions: Pick<TransactionService, 'search'>
  refunds: Pick<RefundService, 'search'>
  payouts: Pick<PayoutService, 'search'>
  webhooks: Pick<WebhookService, 'findEventBrief'>
  providers: { handovers: Pick<ProviderService['handovers'], 'paymentsWithReference'> }
}

type Match = SearchResult['matched']

/** A found object as the search answers it. */
const resultOf = (
  kind: SearchResult['kind'],
  matched: Match,
  object: { uuid: string; amount: number; currency: string; status: string; created_at: Date },
  reference: string,
  path: string,
): SearchResult => ({
  kind,
  id: object.uuid,
  matched,
  reference,
  amount: object.amount,
  currency: object.currency,
  status: object.status,
  created_at: iso(object.created_at),
  path,
})

/** Why an object was found: the first of its keys the search matched, in the order a person would name them. */
function matchOf(
  key: SearchKey,
  object: { uuid: string; amount: number; currency: string },
  others: [Match, boolean][],
): Match | null {
  if (key.uuid === object.uuid) return 'id'
  for (const [match, hit] of others) if (hit) return match
  return isAmountOf(key, object.amount, object.currency) ? 'amount' : null
}

/**
 * The caller's payments, refunds, payouts and events that `q` names (docs/API.md, Search): ids first, then
 * newest first, at most `limit`, and whether more matched. Every query is the caller's merchant and mode.
 */
export async function searchDashboard(deps: SearchDeps, auth: AuthContext, q: string, limit: number) {
  const key = searchKey(q)
  // One more than asked of each kind: whether anything was left out is known without counting.
  const each = limit + 1
  const referenced = await deps.providers.handovers.paymentsWithReference(key.text, each)
  const [payments, refunds, payouts, event] = await Promise.all([
    deps.transactions.search(auth, key, referenced, each),
    deps.refunds.search(auth, key, each),
    deps.payouts.search(auth, key, each),
    key.uuid ? deps.webhooks.findEventBrief(auth, key.uuid) : null,
  ])
  const found: SearchResult[] = []
  for (const row of payments) {
    const metadata = (row.metadata ?? {}) as Record<string, string>
    const matched = matchOf(key, row, [
      ['external_id', row.external_id === key.text],
      ['provider_reference', referenced.includes(row.uuid)],
      [
        'email',
        key.email !== undefined && Object.values(metadata).some((v) => v.toLowerCase() === key.email),
      ],
    ])
    if (matched) found.push(resultOf('payment', matched, row, row.external_id, `/payments/${row.uuid}`))
  }
  for (const row of refunds) {
    const refund = { ...row, amount: row.amount_minor }
    const matched = matchOf(key, refund, [['provider_reference', row.provider_reference === key.text]])
    if (matched)
      found.push(
        resultOf('refund', matched, refund, row.transaction_external_id, `/payments/${row.transaction_uuid}`),
      )
  }
  for (const row of payouts) {
    const card = (row.destination as Record<string, string>).card_number
    const matched = matchOf(key, row, [
      ['external_id', row.external_id === key.text],
      [
        'provider_reference',
        row.provider_reference === key.text || row.transaction_hash?.toLowerCase() === key.text.toLowerCase(),
      ],
      [
        'card_last4',
        row.method === 'card' && key.lastFour !== undefined && card?.endsWith(key.lastFour) === true,
      ],
    ])
    if (matched) found.push(resultOf('payout', matched, row, row.external_id, `/payouts/${row.uuid}`))
  }
  if (event)
    found.push({
      kind: 'event',
      id: event.uuid,
      matched: 'id',
      reference: event.event,
      amount: null,
      currency: null,
      status: null,
      created_at: iso(event.occurred_at),
      path: `/developers/events?object_uuid=${event.aggregate_uuid}`,
    })
  found.sort(
    (a, b) =>
      Number(b.matched === 'id') - Number(a.matched === 'id') ||
      (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0),
  )
  return { data: found.slice(0, limit), truncated: found.length > limit }
}

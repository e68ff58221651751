/** The query parameters each list route of the merchant API takes (docs/API.md), by `METHOD /path`. */
export const QUERY_PARAMETERS: Record<string, string[]> = {
  'GET /integration/transactions': [
    'cursor',
    'per_page',
    'status',
    'payment_method',
    'currency',
    'date_from',
    'date_to',
    'search',
  ],
  'GET /integration/payouts': ['cursor', 'per_page', 'status', 'method', 'currency'],
  'GET /integration/webhook/deliveries': ['cursor', 'per_page', 'status', 'event'],
  'GET /integration/payouts/quote': ['amount', 'currency', 'method'],
}

import { useQuery } from '@tanstack/react-query'
import { useEffect, useRef } from 'react'
import { Link, useNavigate, useSearchParams } from 'react-router'
import { data } from '../api/client'
import { dashboardApi, inMode } from '../api/dashboard'
import { amount, ErrorNote, ref, STATUS, Status, Table } from '../components'
import { money, when, words } from '../format'
import { useMode } from '../layout'

/** The words for how a result matched what was typed. */
const MATCHED: Record<string, string> = {
  id: 'its id',
  external_id: 'its external id',
  provider_reference: "the provider's reference",
  amount: 'its amount',
  email: 'an email in its metadata',
  card_last4: "the card's last four digits",
}

/**
 * The search box of every page's header: what is typed goes to the results page (`/{mode}/search?q=…`), which
 * asks the service; it shows the address's query, so going back shows what was searched.
 */
export function SearchBox() {
  const mode = useMode()
  const navigate = useNavigate()
  const [params] = useSearchParams()
  const input = useRef<HTMLInputElement>(null)
  const q = params.get('q') ?? ''
  useEffect(() => {
    if (input.current && document.activeElement !== input.current) input.current.value = q
  }, [q])
  return (
    <search className="find" aria-label="Find anything">
      <form
        onSubmit={(event) => {
          event.preventDefault()
          const text = String(new FormData(event.currentTarget).get('q') ?? '').trim()
          if (text) navigate(`/${mode}/search?${new URLSearchParams({ q: text })}`)
        }}
      >
        <input
          ref={input}
          name="q"
          type="search"
          defaultValue={q}
          maxLength={200}
          aria-label="Find a payment, refund, payout or event"
          placeholder="Id, reference, amount or email"
        />
        <button type="submit" className="secondary">
          Find
        </button>
      </form>
    </search>
  )
}

/** The results of the header's search: each result links to its page. */
export function SearchResults() {
  const mode = useMode()
  const [params] = useSearchParams()
  const q = params.get('q')?.trim() ?? ''
  const results = useQuery({
    queryKey: [mode, 'search', q],
    queryFn: () =>
      data(
        dashboardApi.GET('/dashboard/api/search', { params: { query: { q, limit: 20 } }, ...inMode(mode) }),
      ),
    enabled: q.length > 0,
  })
  const rows = results.data?.data
  return (
    <>
      <h1>Search</h1>
      {q ? (
        <p role="status">
          {results.isPending
            ? `Looking for “${q}”…`
            : rows
              ? `${rows.length}${results.data?.truncated ? '+' : ''} result${rows.length === 1 ? '' : 's'} for “${q}”${results.data?.truncated ? ': the first shown, be more precise to see the rest' : ''}.`
              : ''}
        </p>
      ) : (
        <p>
          Type an id, an external id or a provider's reference, an amount (
          <span className="mono">1500.00</span>) or a customer's email in the search box above.
        </p>
      )}
      <ErrorNote error={results.error} />
      {q && rows && (
        <Table
          name="Search results"
          head={[ref('Found'), amount(), STATUS, 'What', 'Created', 'Matched by']}
          rows={rows}
          row={(r) => (
            <tr key={`${r.kind}-${r.id}`}>
              <td>
                <Link to={`/${mode}${r.path}`}>{r.reference}</Link>
              </td>
              <td className="num">{r.amount !== null && r.currency ? money(r.amount, r.currency) : ''}</td>
              <td>{r.status ? <Status status={r.status} /> : ''}</td>
              <td>
                {words(r.kind)} <span className="mono">{r.id}</span>
              </td>
              <td>{when(r.created_at)}</td>
              <td>{MATCHED[r.matched] ?? words(r.matched)}</td>
            </tr>
          )}
          empty={`Nothing of this mode matches “${q}”.`}
        />
      )}
    </>
  )
}

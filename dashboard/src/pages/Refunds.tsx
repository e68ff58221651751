import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { Link, useSearchParams } from 'react-router'
import { api, data } from '../api/client'
import { ErrorNote, ExportButton, Pager, Status, Table, useExport } from '../components'
import { money, when } from '../format'
import { useMode } from '../layout'

export function Refunds() {
  const mode = useMode()
  const csv = useExport('/integration/refunds', 'refunds')
  const [params] = useSearchParams()
  const cursor = params.get('cursor') || undefined
  const list = useQuery({
    queryKey: [mode, 'refunds', cursor],
    queryFn: () =>
      data(api(mode).GET('/integration/refunds', { params: { query: { cursor, per_page: 25 } } })),
    placeholderData: keepPreviousData,
  })
  return (
    <>
      <h1>Refunds</h1>
      <p>
        <ExportButton csv={csv} />
      </p>
      <ErrorNote error={csv.error} />
      <ErrorNote error={list.error} />
      {list.data && (
        <>
          <Table
            name="Refunds"
            head={
              <>
                <th scope="col">Created</th>
                <th scope="col" className="num">
                  Amount
                </th>
                <th scope="col">Status</th>
                <th scope="col">Reason</th>
                <th scope="col">Payment</th>
              </>
            }
            rows={list.data.data}
            row={(r) => (
              <tr key={r.uuid}>
                <td>{when(r.created_at)}</td>
                <td className="num">{money(r.amount_minor, r.currency)}</td>
                <td>
                  <Status status={r.status} />
                </td>
                <td className="clip">{r.reason ?? ''}</td>
                <td>
                  <Link to={`/${mode}/payments/${r.transaction_uuid}`}>Open payment</Link>
                </td>
              </tr>
            )}
            empty="No refunds yet."
            columns={5}
          />
          <Pager meta={list.data.meta} />
        </>
      )}
    </>
  )
}

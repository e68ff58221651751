import { api, data } from '../api/client'
import { ListHeading, Paged, RefundsTable, useExport, usePage } from '../components'
import { useMode } from '../layout'

export function Refunds() {
  const mode = useMode()
  const csv = useExport('/integration/refunds', 'refunds')
  const list = usePage([mode, 'refunds'], (paging) =>
    data(api(mode).GET('/integration/refunds', { params: { query: paging } })),
  )
  return (
    <>
      <ListHeading title="Refunds" csv={csv} />
      <Paged list={list}>
        {(rows) => <RefundsTable name="Refunds" rows={rows} linked empty="No refunds yet." />}
      </Paged>
    </>
  )
}

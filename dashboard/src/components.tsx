import { useMutation } from '@tanstack/react-query'
import type { FormEvent, ReactNode } from 'react'
import { Link, useSearchParams } from 'react-router'
import type { ApiEvent, Schemas, Transaction } from './api/client'
import { downloadCsv } from './download'
import { money, when } from './format'
import { useMode } from './layout'

/**
 * A table that may scroll sideways on a narrow screen: focusable, so a keyboard can scroll it too (WCAG 2.1.1),
 * and named, so a screen reader says what it is.
 */
export function Scroll({
  label,
  children,
  className = 'table-wrap',
}: {
  label: string
  children: ReactNode
  className?: string
}) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard.
    <section className={className} tabIndex={0} aria-label={label}>
      {children}
    </section>
  )
}

/**
 * A table of records in a Scroll: `head` is the header row's cells, `row` renders one record as a keyed `<tr>`,
 * and `empty` (spanning the `columns`) says so when there is none. Nothing is rendered in the body while
 * `rows` is not known yet.
 */
export function Table<T>({
  name,
  label = `${name} table`,
  caption,
  head,
  rows,
  row,
  empty,
  columns,
}: {
  name: string
  label?: string
  caption?: ReactNode
  head: ReactNode
  rows: readonly T[] | undefined
  row: (record: T) => ReactNode
  empty?: ReactNode
  columns?: number
}) {
  return (
    <Scroll label={label}>
      <table aria-label={name}>
        {caption !== undefined && <caption>{caption}</caption>}
        <thead>
          <tr>{head}</tr>
        </thead>
        <tbody>
          {rows?.map(row)}
          {empty !== undefined && rows?.length === 0 && (
            <tr>
              <td colSpan={columns}>{empty}</td>
            </tr>
          )}
        </tbody>
      </table>
    </Scroll>
  )
}

export function Status({ status }: { status: string }) {
  return <span className={`status status-${status}`}>{status.replaceAll('_', ' ')}</span>
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null
  return (
    <p role="alert" className="error">
      {error instanceof Error ? error.message : String(error)}
    </p>
  )
}

/**
 * Cursor paging: the API's prev/next cursors as two links to this page's address with that cursor (the
 * filters kept). An empty cursor is the first page.
 */
export function Pager({ meta }: { meta: Pick<Schemas['CursorMeta'], 'prev_cursor' | 'next_cursor'> }) {
  const [params] = useSearchParams()
  const hrefFor = (cursor: string) => {
    const next = new URLSearchParams(params)
    if (cursor) next.set('cursor', cursor)
    else next.delete('cursor')
    return `?${next}`
  }
  return (
    <nav className="pager" aria-label="Pages">
      {meta.prev_cursor !== null ? (
        <Link to={hrefFor(meta.prev_cursor)}>← Newer</Link>
      ) : (
        <span aria-disabled="true">← Newer</span>
      )}
      {meta.next_cursor ? (
        <Link to={hrefFor(meta.next_cursor)}>Older →</Link>
      ) : (
        <span aria-disabled="true">Older →</span>
      )}
    </nav>
  )
}

/**
 * A list's filters kept in the page's address (so a search can be shared and reloaded): the values, the cursor,
 * and the submit handler of the filter form.
 */
export function useListFilters<F extends string>(filters: readonly F[]) {
  const [params, setParams] = useSearchParams()
  const query: Partial<Record<F, string>> = Object.fromEntries(
    filters.map((f) => [f, params.get(f) || undefined]).filter(([, v]) => v),
  )
  const apply = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    const next = new URLSearchParams()
    for (const f of filters) {
      const value = String(form.get(f) ?? '').trim()
      if (value) next.set(f, value)
    }
    setParams(next)
  }
  return { params, query, cursor: params.get('cursor') || undefined, apply }
}

/** "Export CSV": the list's streamed export with these filters, downloaded (download.ts). */
export function useExport(path: string, name: string, query: Record<string, string | undefined> = {}) {
  const mode = useMode()
  return useMutation({ mutationFn: () => downloadCsv(mode, path, query, name) })
}

export function ExportButton({ csv }: { csv: { mutate: () => void; isPending: boolean } }) {
  return (
    <button type="button" className="secondary" onClick={() => csv.mutate()} disabled={csv.isPending}>
      {csv.isPending ? 'Exporting…' : 'Export CSV'}
    </button>
  )
}

/** The fields of a payment the tables show. */
export type PaymentRow = Pick<
  Transaction,
  'uuid' | 'created_at' | 'external_id' | 'description' | 'amount' | 'currency' | 'status' | 'payment_method'
>

/** A table of payments; each row opens the payment's page. Text is rendered as text, never as markup. */
export function PaymentsTable({
  rows,
  mode,
  caption,
}: {
  rows: PaymentRow[]
  mode: string
  caption: ReactNode
}) {
  return (
    <Table
      name="Payments"
      caption={caption}
      head={
        <>
          <th scope="col">Created</th>
          <th scope="col">External id</th>
          <th scope="col">Description</th>
          <th scope="col" className="num">
            Amount
          </th>
          <th scope="col">Status</th>
          <th scope="col">Method</th>
        </>
      }
      rows={rows}
      row={(t) => (
        <tr key={t.uuid}>
          <td>{when(t.created_at)}</td>
          <td>
            <Link to={`/${mode}/payments/${t.uuid}`}>{t.external_id}</Link>
          </td>
          <td className="clip">{t.description ?? ''}</td>
          <td className="num">{money(t.amount, t.currency)}</td>
          <td>
            <Status status={t.status} />
          </td>
          <td>{t.payment_method.replaceAll('_', ' ')}</td>
        </tr>
      )}
      empty="No payments match."
      columns={6}
    />
  )
}

/**
 * An object's status history: its creation (version 1), then every event about it in `aggregate_version`
 * order, each with its time. `prefix` is the events' object name (`transaction.`, `payout.`).
 */
export function Timeline({
  createdAt,
  events,
  prefix,
}: {
  createdAt: string
  events: Pick<ApiEvent, 'event_id' | 'event' | 'aggregate_version' | 'occurred_at'>[]
  prefix: string
}) {
  return (
    <ol className="timeline">
      <li>
        <strong>created</strong> · version 1 · <time dateTime={createdAt}>{when(createdAt)}</time>
      </li>
      {[...events]
        .sort((a, b) => a.aggregate_version - b.aggregate_version)
        .map((e) => (
          <li key={e.event_id}>
            <strong>{e.event.replace(prefix, '').replaceAll('_', ' ')}</strong> · version{' '}
            {e.aggregate_version} · <time dateTime={e.occurred_at}>{when(e.occurred_at)}</time>
          </li>
        ))}
    </ol>
  )
}

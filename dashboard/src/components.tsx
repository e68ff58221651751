import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query'
import {
  Children,
  cloneElement,
  type FormEvent,
  Fragment,
  type InputHTMLAttributes,
  isValidElement,
  type ReactNode,
  useState,
} from 'react'
import { Link, useSearchParams } from 'react-router'
import type { ApiEvent, Refund, Schemas, Transaction } from './api/client'
import { downloadCsv } from './download'
import { money, when, words } from './format'
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
 * How a column shows in a list's card on a narrow screen: the amount and the status lead its first line, the
 * reference (what people know the record by) the second; the other columns follow, each with its name.
 */
export type CardPart = 'amount' | 'status' | 'ref'

/** A column's heading: its name, or its name with how it is shown (`num`, `hidden`, its part of a card). */
export type Column = string | { name: string; num?: boolean; hidden?: boolean; card?: CardPart }

/** A column of numbers: its heading is aligned right, as its cells are. */
export const num = (name: string): Column => ({ name, num: true })

/** A list's amount column: aligned right, and first in the list's cards on a narrow screen. */
export const amount = (name = 'Amount'): Column => ({ name, num: true, card: 'amount' })

/** A list's status column, beside the amount in the list's cards on a narrow screen. */
export const STATUS: Column = { name: 'Status', card: 'status' }

/** The column people know a record by (its external id, its event), right under the amount in a card. */
export const ref = (name: string): Column => ({ name, card: 'ref' })

/** The heading of a table's last column, of buttons: named for a screen reader only. */
export const ACTIONS: Column = { name: 'Actions', hidden: true }

type CellProps = { 'data-label'?: string; 'data-card'?: CardPart; children?: ReactNode }

/**
 * A row's cells with their column's name and card part, which a narrow screen's cards show (styles.css): the
 * column's name before each value, the amount, status and reference first.
 */
function withColumns(tr: ReactNode, columns: Exclude<Column, string>[]): ReactNode {
  if (!isValidElement<{ children?: ReactNode }>(tr)) return tr
  const cells = Children.toArray(tr.props.children).map((cell, i) => {
    const column = columns[i]
    if (!column || !isValidElement<CellProps>(cell)) return cell
    return cloneElement(cell, {
      'data-label': column.hidden ? undefined : column.name,
      'data-card': column.card,
    })
  })
  return cloneElement(tr, undefined, ...cells)
}

/**
 * A table of records in a Scroll: `head` is its columns' headings (a `false` one is left out), `row` renders one
 * record as a keyed `<tr>`, and `empty` (spanning every column) says so when there is none. Nothing is rendered
 * in the body while `rows` is not known yet. On a narrow screen each row is a card (styles.css).
 */
export function Table<T>({
  name,
  label = `${name} table`,
  caption,
  head,
  rows,
  row,
  empty,
}: {
  name: string
  label?: string
  caption?: ReactNode
  head: readonly (Column | false)[]
  rows: readonly T[] | undefined
  row: (record: T) => ReactNode
  empty?: ReactNode
}) {
  const columns = head
    .filter((column) => column !== false)
    .map((column) => (typeof column === 'string' ? { name: column } : column))
  return (
    <Scroll label={label}>
      <table aria-label={name} className="list">
        {caption !== undefined && <caption>{caption}</caption>}
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.name} scope="col" className={column.num ? 'num' : undefined}>
                {column.hidden ? <span className="visually-hidden">{column.name}</span> : column.name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows?.map((record) => withColumns(row(record), columns))}
          {empty !== undefined && rows?.length === 0 && (
            <tr className="empty">
              <td colSpan={columns.length}>{empty}</td>
            </tr>
          )}
        </tbody>
      </table>
    </Scroll>
  )
}

export function Status({ status }: { status: string }) {
  return <span className={`status status-${status}`}>{words(status)}</span>
}

/** Copies `text` to the clipboard, then says so. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false)
  return (
    <button
      type="button"
      className="secondary"
      onClick={async () => {
        await navigator.clipboard.writeText(text)
        setCopied(true)
      }}
    >
      {copied ? 'Copied' : label}
    </button>
  )
}

/** The field of a current code of the user's authenticator app, for an operation that asks for it. */
export function CodeField() {
  return (
    <label>
      Authentication code
      <input
        name="totp"
        inputMode="numeric"
        autoComplete="one-time-code"
        pattern="[0-9]{6}"
        required
        size={8}
      />
    </label>
  )
}

/** The code a form's CodeField holds. */
export const codeOf = (form: HTMLFormElement) => String(new FormData(form).get('totp') ?? '')

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null
  return (
    <p role="alert" className="error">
      {error instanceof Error ? error.message : String(error)}
    </p>
  )
}

/**
 * A form that runs one mutation: its submit button (`submit`) waits while the mutation runs, and the mutation's
 * error shows under the form.
 */
export function MutationForm({
  mutation,
  submit,
  onSubmit,
  children,
}: {
  mutation: { isPending: boolean; error: unknown }
  submit: string
  onSubmit: (event: FormEvent<HTMLFormElement>) => void
  children: ReactNode
}) {
  return (
    <>
      <form className="form inline" onSubmit={onSubmit}>
        {children}
        <button type="submit" disabled={mutation.isPending}>
          {submit}
        </button>
      </form>
      <ErrorNote error={mutation.error} />
    </>
  )
}

/**
 * Cursor paging: the API's prev/next cursors as two links to this page's address with that cursor (the
 * filters kept). An empty cursor is the first page.
 */
export function Pager({ meta }: { meta: PagerMeta }) {
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

type PagerMeta = Pick<Schemas['CursorMeta'], 'prev_cursor' | 'next_cursor'>

/** How many records a list page asks for at a time. */
const PAGE_SIZE = 25

/**
 * One page of a list: `fetch` asks for it with the page's paging (the cursor in the page's address). The page
 * shown stays on screen while the next one loads.
 */
export function usePage<T>(
  key: readonly unknown[],
  fetch: (paging: { cursor: string | undefined; per_page: number }) => Promise<T>,
) {
  const [params] = useSearchParams()
  const cursor = params.get('cursor') || undefined
  return useQuery({
    queryKey: [...key, cursor],
    queryFn: () => fetch({ cursor, per_page: PAGE_SIZE }),
    placeholderData: keepPreviousData,
  })
}

/**
 * A list page's records once they are known (what `children` makes of them), then the pager; before that,
 * the error (the list's own unless another is given) if there is one.
 */
export function Paged<T>({
  list,
  error = list.error,
  children,
}: {
  list: { data?: { data: T[]; meta: PagerMeta }; error: unknown }
  error?: unknown
  children: (rows: T[]) => ReactNode
}) {
  return (
    <>
      <ErrorNote error={error} />
      {list.data && (
        <>
          {children(list.data.data)}
          <Pager meta={list.data.meta} />
        </>
      )}
    </>
  )
}

/**
 * A list's filter form, a search landmark named `label`: the fields (FilterSelect, FilterInput), Apply, and the
 * export of what the filters select when the list has one. Made anew when the address changes, so the fields
 * show the address's filters.
 */
export function Filters({
  label,
  onSubmit,
  csv,
  children,
}: {
  label: string
  onSubmit: (event: FormEvent<HTMLFormElement>) => void
  csv?: Parameters<typeof ExportButton>[0]['csv']
  children: ReactNode
}) {
  const [params] = useSearchParams()
  return (
    <search aria-label={label}>
      <form className="filters" onSubmit={onSubmit} key={params.toString()}>
        {children}
        <button type="submit">Apply</button>
        {csv && <ExportButton csv={csv} />}
      </form>
    </search>
  )
}

/** A filter that picks one of `values` (or any), shown as `text` makes them; it starts at the address's value. */
export function FilterSelect({
  label,
  name,
  values,
  text = (value) => value,
}: {
  label: string
  name: string
  values: readonly string[]
  text?: (value: string) => string
}) {
  const [params] = useSearchParams()
  return (
    <label>
      {label}
      <select name={name} defaultValue={params.get(name) ?? ''}>
        <option value="">Any</option>
        {values.map((value) => (
          <option key={value} value={value}>
            {text(value)}
          </option>
        ))}
      </select>
    </label>
  )
}

/** A filter typed in (text, a date…); it starts at the address's value. */
export function FilterInput({
  label,
  name,
  ...input
}: { label: string; name: string } & InputHTMLAttributes<HTMLInputElement>) {
  const [params] = useSearchParams()
  return (
    <label>
      {label}
      <input name={name} defaultValue={params.get(name) ?? ''} {...input} />
    </label>
  )
}

/** Two date filters, From and To: the range `from` and `to` name. */
export function FilterDates({ from, to }: { from: string; to: string }) {
  return (
    <>
      <FilterInput label="From" name={from} type="date" />
      <FilterInput label="To" name={to} type="date" />
    </>
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

/** A list page's heading, its Export CSV button, and the export's error when it fails. */
export function ListHeading({
  title,
  csv,
}: {
  title: string
  csv: Parameters<typeof ExportButton>[0]['csv'] & { error: unknown }
}) {
  return (
    <>
      <h1>{title}</h1>
      <p>
        <ExportButton csv={csv} />
      </p>
      <ErrorNote error={csv.error} />
    </>
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
      head={['Created', ref('External id'), 'Description', amount(), STATUS, 'Method']}
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
          <td>{words(t.payment_method)}</td>
        </tr>
      )}
      empty="No payments match."
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
            <strong>{words(e.event.replace(prefix, ''))}</strong> · version {e.aggregate_version} ·{' '}
            <time dateTime={e.occurred_at}>{when(e.occurred_at)}</time>
          </li>
        ))}
    </ol>
  )
}

/**
 * A table of refunds. The list of all refunds (`linked`) names each one's payment by its external id, linked to
 * it, with the payment's amount, and keeps long reasons narrow; a payment's own refunds need neither.
 */
export function RefundsTable({
  rows,
  name,
  label,
  linked = false,
  empty,
}: {
  rows: Refund[]
  name: string
  label?: string
  linked?: boolean
  empty?: ReactNode
}) {
  const mode = useMode()
  return (
    <Table
      name={name}
      label={label}
      head={[
        'Created',
        amount(),
        STATUS,
        linked && ref('Payment'),
        linked && num('Payment amount'),
        'Reason',
      ]}
      rows={rows}
      row={(r) => (
        <tr key={r.uuid}>
          <td>{when(r.created_at)}</td>
          <td className="num">{money(r.amount_minor, r.currency)}</td>
          <td>
            <Status status={r.status} />
          </td>
          {linked && (
            <td>
              <Link to={`/${mode}/payments/${r.transaction_uuid}`}>{r.transaction_external_id}</Link>
            </td>
          )}
          {linked && <td className="num">{money(r.transaction_amount_minor, r.currency)}</td>}
          <td className={linked ? 'clip' : undefined}>{r.reason ?? ''}</td>
        </tr>
      )}
      empty={empty}
    />
  )
}

const RECORDS = {
  payments: { list: 'Payments', one: 'Payment' },
  payouts: { list: 'Payouts', one: 'Payout' },
} as const

/** The top of a payment's or a payout's page: the way back to the list, then what it is, its amount and status. */
export function RecordHead({
  list,
  record,
  amount,
}: {
  list: keyof typeof RECORDS
  record: { external_id: string; status: string }
  amount: string
}) {
  const mode = useMode()
  return (
    <>
      <p className="crumbs">
        <Link to={`/${mode}/${list}`}>{RECORDS[list].list}</Link> / {record.external_id}
      </p>
      <h1>
        {RECORDS[list].one} {amount} <Status status={record.status} />
      </h1>
    </>
  )
}

/** A term and its detail; the detail's class, if any (`mono`). Left out where it is false or null. */
export type Pair = readonly [term: string, detail: ReactNode, className?: string] | false | null

/** A card of terms and their details under its own heading (`id` names it), then any `children` pairs. */
export function Details({
  id,
  title,
  pairs,
  children,
}: {
  id: string
  title: ReactNode
  pairs: readonly Pair[]
  children?: ReactNode
}) {
  return (
    <section className="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <dl className="pairs">
        {pairs.map(
          (pair) =>
            pair && (
              <Fragment key={pair[0]}>
                <dt>{pair[0]}</dt>
                <dd className={pair[2]}>{pair[1]}</dd>
              </Fragment>
            ),
        )}
        {children}
      </dl>
    </section>
  )
}

import type { ReactNode } from 'react'
import { Link } from 'react-router'
import { money, when } from './format'

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

/** Cursor paging: the API's prev/next cursors as two links. */
export function Pager({
  prev,
  next,
  hrefFor,
}: {
  prev: string | null | undefined
  next: string | null | undefined
  hrefFor: (cursor: string) => string
}) {
  return (
    <nav className="pager" aria-label="Pages">
      {prev ? <Link to={hrefFor(prev)}>← Newer</Link> : <span aria-disabled="true">← Newer</span>}
      {next ? <Link to={hrefFor(next)}>Older →</Link> : <span aria-disabled="true">Older →</span>}
    </nav>
  )
}

export interface PaymentRow {
  uuid: string
  created_at: string
  external_id: string
  description: string | null
  amount: number
  currency: string
  status: string
  payment_method: string
}

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
    <Scroll label="Payments table">
      <table aria-label="Payments">
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Created</th>
            <th scope="col">External id</th>
            <th scope="col">Description</th>
            <th scope="col" className="num">
              Amount
            </th>
            <th scope="col">Status</th>
            <th scope="col">Method</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((t) => (
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
          ))}
          {rows.length === 0 && (
            <tr>
              <td colSpan={6}>No payments match.</td>
            </tr>
          )}
        </tbody>
      </table>
    </Scroll>
  )
}

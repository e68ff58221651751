import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useEffect, useState } from 'react'
import { Link, useNavigate } from 'react-router'
import { ApiError, api, data, type Schemas } from '../api/client'
import { dashboardApi } from '../api/dashboard'
import { CodeField, codeOf, ErrorNote } from '../components'
import { money, payoutFigures, toMinor } from '../format'
import { useMode } from '../layout'
import { useCan } from '../session'

type Quote = Schemas['PayoutQuoteResponse']
/** What the form asks, before the quote: the payout's request without its quote. */
type Draft = Pick<
  Schemas['CreatePayoutRequest'],
  'method' | 'amount' | 'currency' | 'destination' | 'external_id'
>
type Method = Draft['method']

/** The destinations a payout can go to, as the form offers them. */
const METHODS: readonly (readonly [Method, string])[] = [
  ['usdt_wallet', 'USDT wallet'],
  ['card', 'Card'],
]

/** Seconds left until an instant, ticking once a second. */
function useSecondsLeft(until: string | null): number {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    if (!until) return
    setNow(Date.now())
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [until])
  return until ? Math.max(0, Math.ceil((new Date(until).getTime() - now) / 1000)) : 0
}

/**
 * A new payout: the destination and amount, then a quote whose rate is held for a time shown as a countdown,
 * then the confirmation (with the authenticator code when the merchant requires a second factor). The
 * Idempotency-Key is made with the quote and kept for retries of that confirmation.
 */
export function NewPayout() {
  const mode = useMode()
  const navigate = useNavigate()
  const queryClient = useQueryClient()
  const canPayout = useCan('payout')
  const [method, setMethod] = useState<Method>('usdt_wallet')
  const [draft, setDraft] = useState<Draft | null>(null)
  const [quote, setQuote] = useState<(Quote & { key: string }) | null>(null)
  const [fieldError, setFieldError] = useState<string | null>(null)
  // The currency follows the balance shown until the user types one: what was typed survives the balances' load.
  const [typedCurrency, setTypedCurrency] = useState<string | null>(null)
  const security = useQuery({
    queryKey: ['merchant-security'],
    queryFn: () => data(dashboardApi.GET('/dashboard/api/merchant/security')),
  })
  const balances = useQuery({
    queryKey: [mode, 'balances'],
    queryFn: () => data(api(mode).GET('/integration/balances')),
  })
  // Payouts are paid from the USDT balance (docs/API.md, Payouts): that is the one the form shows.
  const balance = balances.data?.data.find((b) => b.currency === 'USDT') ?? balances.data?.data[0]
  const left = useSecondsLeft(quote?.expires_at ?? null)
  const getQuote = useMutation({
    mutationFn: (d: Draft) =>
      data(
        api(mode).GET('/integration/payouts/quote', {
          params: { query: { amount: d.amount, currency: d.currency, method: d.method } },
        }),
      ),
    onSuccess: (q) => setQuote({ ...q, key: crypto.randomUUID() }),
  })
  const create = useMutation({
    mutationFn: ({ d, q, code }: { d: Draft; q: Quote & { key: string }; code: string | null }) =>
      data(
        api(mode).POST('/integration/payouts', {
          body: { ...d, quote_id: q.quote_id },
          params: { header: { 'idempotency-key': q.key } },
          headers: code ? { 'x-dashboard-totp': code } : {},
        }),
      ),
    onSuccess: (payout) => {
      queryClient.invalidateQueries({ queryKey: [mode] })
      navigate(`/${mode}/payouts/${payout.uuid}`)
    },
  })
  if (!canPayout) return <p>Only an owner or an admin sends payouts.</p>

  function review(event: FormEvent<HTMLFormElement>) {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    const currency = String(form.get('currency')).trim().toUpperCase()
    const amount = toMinor(String(form.get('amount')), currency)
    if (amount === null || amount <= 0)
      return setFieldError(`Enter an amount in ${currency || 'the currency'}, like 100.00.`)
    setFieldError(null)
    const destination: Record<string, string> =
      method === 'usdt_wallet'
        ? { network: String(form.get('network')), address: String(form.get('address')).trim() }
        : {
            card_number: String(form.get('card_number')),
            holder_name: String(form.get('holder_name')).trim(),
          }
    const d = { method, amount, currency, destination, external_id: String(form.get('external_id')).trim() }
    setDraft(d)
    create.reset()
    getQuote.mutate(d)
  }

  const expired = quote !== null && left === 0
  const needsCode = security.data?.require_totp === true
  const createError = create.error instanceof ApiError ? create.error : null

  return (
    <>
      <p className="crumbs">
        <Link to={`/${mode}/payouts`}>Payouts</Link> / New
      </p>
      <h1>New payout</h1>
      {!quote && (
        <form className="card form" onSubmit={review}>
          <p className="balance-note">
            Available balance: <strong>{balance ? money(balance.available, balance.currency) : '…'}</strong>
          </p>
          <fieldset>
            <legend>Destination</legend>
            {METHODS.map(([value, label]) => (
              <label key={value}>
                <span>
                  <input
                    type="radio"
                    name="method"
                    checked={method === value}
                    onChange={() => setMethod(value)}
                  />{' '}
                  {label}
                </span>
              </label>
            ))}
          </fieldset>
          {method === 'usdt_wallet' ? (
            <>
              <label>
                Network
                <select name="network" defaultValue="TRC20">
                  <option>TRC20</option>
                  <option>ERC20</option>
                </select>
              </label>
              <label>
                Wallet address
                <input name="address" required autoComplete="off" spellCheck={false} />
              </label>
            </>
          ) : (
            <>
              <label>
                Card number
                <input name="card_number" required inputMode="numeric" autoComplete="off" />
              </label>
              <label>
                Name on the card
                <input name="holder_name" required autoComplete="off" />
              </label>
            </>
          )}
          <label>
            Amount
            <input
              name="amount"
              inputMode="decimal"
              required
              aria-describedby={fieldError ? 'payout-amount-error' : undefined}
            />
          </label>
          <label>
            Currency
            <input
              name="currency"
              value={typedCurrency ?? balance?.currency ?? 'USDT'}
              onChange={(event) => setTypedCurrency(event.target.value)}
              required
              maxLength={8}
            />
          </label>
          <label>
            Your reference (external id)
            <input name="external_id" required defaultValue={`payout-${Date.now().toString(36)}`} />
          </label>
          {fieldError && (
            <p id="payout-amount-error" role="alert" className="error">
              {fieldError}
            </p>
          )}
          <ErrorNote error={getQuote.error} />
          <button type="submit" disabled={getQuote.isPending}>
            Get a quote
          </button>
        </form>
      )}
      {quote && draft && (
        <section className="card" aria-labelledby="quote-title">
          <h2 id="quote-title">Quote</h2>
          <dl className="pairs">
            <dt>Recipient gets</dt>
            <dd>{payoutFigures(quote).recipient}</dd>
            <dt>Rate</dt>
            <dd>
              1 USDT = {quote.fx_rate} {quote.currency}
            </dd>
            <dt>Fee</dt>
            <dd>{payoutFigures(quote).fee}</dd>
            <dt>Total debited from your balance</dt>
            <dd>{payoutFigures(quote).total}</dd>
          </dl>
          <p className={expired ? 'error' : ''} role="timer" aria-live="off">
            {expired ? 'This quote has expired: get a new one.' : `The rate is held for ${left} s.`}
          </p>
          {createError?.code === 'quote_expired' || createError?.status === 409 ? (
            <p role="alert" className="error">
              {createError.message}
            </p>
          ) : (
            <ErrorNote error={create.error} />
          )}
          <form
            className="form"
            onSubmit={(e) => {
              e.preventDefault()
              const code = needsCode ? codeOf(e.currentTarget) : null
              create.mutate({ d: draft, q: quote, code })
            }}
          >
            {needsCode && <CodeField />}
            <div className="buttons">
              <button type="submit" disabled={create.isPending}>
                {create.isPending ? 'Sending…' : 'Confirm payout'}
              </button>
              <button
                type="button"
                className="secondary"
                onClick={() => {
                  setQuote(null)
                  getQuote.mutate(draft)
                }}
              >
                New quote
              </button>
              <button type="button" className="secondary" onClick={() => setQuote(null)}>
                Back
              </button>
            </div>
          </form>
        </section>
      )}
    </>
  )
}

import { useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import {
  Bar,
  BarChart,
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts'
import { api, data } from '../api/client'
import { type DashboardSchemas, dashboardApi, inMode } from '../api/dashboard'
import { ErrorNote, PaymentsTable } from '../components'
import { change, inSettlement, money, percent, rounded } from '../format'
import { useMode } from '../layout'

/** The `count` UTC days ending `skip` days before today, oldest first, as YYYY-MM-DD. */
function days(count: number, skip = 0): string[] {
  const out: string[] = []
  const today = new Date()
  for (let i = count - 1 + skip; i >= skip; i--)
    out.push(
      new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - i))
        .toISOString()
        .slice(0, 10),
    )
  return out
}

type StatsRow = DashboardSchemas['PaymentStats']['data'][number]

/** A period's figures of one currency: succeeded volume, paid and finished (paid or failed) payments. */
function totalsOf(rows: StatsRow[], period: string[], currency: string | null) {
  const inPeriod = new Set(period)
  return rows
    .filter((r) => inPeriod.has(r.day) && (currency === null || r.currency === currency))
    .reduce(
      (t, r) => ({
        volume: t.volume + r.volume,
        succeeded: t.succeeded + r.succeeded,
        finished: t.finished + r.succeeded + r.failed,
      }),
      { volume: 0, succeeded: 0, finished: 0 },
    )
}

/** The succeeded rate of a period's totals, in percent, or null with nothing finished. */
const rateOf = (t: { succeeded: number; finished: number }) =>
  t.finished ? (t.succeeded / t.finished) * 100 : null

/** The longest period the stats answer: 30 days, so 7 days compare with the 7 before, 30 with nothing yet. */
const STATS_DAYS = 30

export function Home() {
  const mode = useMode()
  const [span, setSpan] = useState<7 | 30>(7)
  const balances = useQuery({
    queryKey: [mode, 'balances'],
    queryFn: () => data(api(mode).GET('/integration/balances')),
  })
  const stats = useQuery({
    queryKey: [mode, 'stats', STATS_DAYS],
    queryFn: () =>
      data(
        dashboardApi.GET('/dashboard/api/stats', {
          params: { query: { days: STATS_DAYS } },
          ...inMode(mode),
        }),
      ),
  })
  const rates = useQuery({
    queryKey: [mode, 'rates'],
    queryFn: () => data(api(mode).GET('/integration/rates')),
  })
  const latest = useQuery({
    queryKey: [mode, 'transactions', 'latest'],
    queryFn: () => data(api(mode).GET('/integration/transactions', { params: { query: { per_page: 5 } } })),
  })

  const rows = stats.data?.data ?? []
  const period = days(span)
  const previous = span * 2 <= STATS_DAYS ? days(span, span) : null
  const settlement = rates.data?.settlement_currency ?? null
  /** A currency's volume in the settlement currency, at today's pay-in rate (an estimate: rates move). */
  const settled = (volume: number, currency: string) => {
    if (!settlement) return 0
    const rate = rates.data?.data.find((r) => r.currency === currency)?.pay_in_rate ?? '0'
    return inSettlement(volume, currency, settlement, rate)
  }
  const inPeriod = new Set(period)
  const currencies = [...new Set(rows.filter((r) => inPeriod.has(r.day)).map((r) => r.currency))]
  // The main currency is the one with the most volume in the period, compared in the settlement currency.
  const byVolume = currencies
    .map((c) => ({ currency: c, settled: settled(totalsOf(rows, period, c).volume, c) }))
    .sort((a, b) => b.settled - a.settled)
  const [currency, setCurrency] = useState<string | null>(null)
  const shown = currency && currencies.includes(currency) ? currency : (byVolume[0]?.currency ?? null)
  const series = period.map((day) => {
    const r = rows.find((x) => x.day === day && x.currency === shown)
    return {
      day: day.slice(5),
      volume: r ? r.volume : 0,
      rate:
        r && r.succeeded + r.failed ? Math.round((r.succeeded / (r.succeeded + r.failed)) * 1000) / 10 : null,
    }
  })
  const totals = totalsOf(rows, period, shown)
  const before = previous ? totalsOf(rows, previous, shown) : null
  const allCurrencies = (dayList: string[]) =>
    [...new Set(rows.map((r) => r.currency))].reduce(
      (sum, c) => sum + settled(totalsOf(rows, dayList, c).volume, c),
      0,
    )
  const rateNow = rateOf(totals)
  const rateBefore = before ? rateOf(before) : null

  return (
    <>
      <h1>Home</h1>
      <section aria-labelledby="balances-title">
        <h2 id="balances-title">Balances</h2>
        <ErrorNote error={balances.error} />
        <div className="cards">
          {balances.data?.data.map((b) => (
            <div className="card balance" key={b.currency} data-currency={b.currency}>
              <h3>{b.currency}</h3>
              <dl>
                <dt>Available</dt>
                <dd data-testid={`available-${b.currency}`}>{money(b.available, b.currency)}</dd>
                <dt>Pending</dt>
                <dd>{money(b.pending, b.currency)}</dd>
                <dt>Reserved</dt>
                <dd>{money(b.reserved, b.currency)}</dd>
              </dl>
            </div>
          ))}
          {balances.data?.data.length === 0 && <p>No balance yet.</p>}
        </div>
      </section>
      <section aria-labelledby="volume-title">
        <div className="section-head">
          <h2 id="volume-title">Payments over the last {span} days</h2>
          <div className="controls">
            <label>
              Period
              <select value={span} onChange={(e) => setSpan(Number(e.target.value) as 7 | 30)}>
                <option value={7}>7 days</option>
                <option value={30}>30 days</option>
              </select>
            </label>
            {currencies.length > 1 && (
              <label>
                Currency
                <select value={shown ?? ''} onChange={(e) => setCurrency(e.target.value)}>
                  {byVolume.map(({ currency: c }) => (
                    <option key={c}>{c}</option>
                  ))}
                </select>
              </label>
            )}
          </div>
        </div>
        <ErrorNote error={stats.error} />
        {shown ? (
          <>
            <dl className="figures">
              <div className="card">
                <dt>Volume ({shown})</dt>
                <dd className="figure">{money(totals.volume, shown)}</dd>
                {before && (
                  <dd className="summary">
                    {before.volume
                      ? `${change(totals.volume, before.volume)} on the previous ${span} days (${money(before.volume, shown)})`
                      : `none in the previous ${span} days`}
                  </dd>
                )}
              </div>
              <div className="card">
                <dt>Success rate ({shown})</dt>
                <dd className="figure">{percent(totals.succeeded, totals.finished)}</dd>
                {before && (
                  <dd className="summary">
                    {rateNow !== null && rateBefore !== null
                      ? `${rateNow >= rateBefore ? '+' : '−'}${Math.abs(rateNow - rateBefore).toFixed(1)} points on the previous ${span} days (${percent(before.succeeded, before.finished)})`
                      : `no finished payment in the previous ${span} days`}
                  </dd>
                )}
              </div>
              {settlement && (
                <div className="card">
                  <dt>All currencies, in {settlement}</dt>
                  <dd className="figure">
                    about {money(rounded(allCurrencies(period), settlement), settlement)}
                  </dd>
                  <dd className="summary">
                    {before && allCurrencies(previous ?? [])
                      ? `${change(allCurrencies(period), allCurrencies(previous ?? []))} on the previous ${span} days, `
                      : ''}
                    at today's rates
                  </dd>
                </div>
              )}
            </dl>
            {!before && <p className="summary">No comparison: the service gives the last 30 days only.</p>}
            <div className="charts">
              <figure>
                <figcaption>Succeeded volume per day ({shown})</figcaption>
                <ResponsiveContainer width="100%" height={220}>
                  <BarChart data={series} accessibilityLayer>
                    <CartesianGrid strokeDasharray="3 3" />
                    <XAxis dataKey="day" />
                    <YAxis tickFormatter={(v: number) => money(v, shown).split(' ')[0] ?? ''} width={90} />
                    <Tooltip formatter={(v) => money(Number(v), shown)} />
                    <Bar dataKey="volume" name="Volume" fill="#2f5fd0" isAnimationActive={false} />
                  </BarChart>
                </ResponsiveContainer>
              </figure>
              <figure>
                <figcaption>Success rate per day (paid of finished payments)</figcaption>
                <ResponsiveContainer width="100%" height={220}>
                  <LineChart data={series} accessibilityLayer>
                    <CartesianGrid strokeDasharray="3 3" />
                    <XAxis dataKey="day" />
                    <YAxis domain={[0, 100]} unit=" %" width={60} />
                    <Tooltip formatter={(v) => `${v} %`} />
                    <Legend />
                    <Line
                      dataKey="rate"
                      name="Success rate"
                      stroke="#137333"
                      connectNulls
                      isAnimationActive={false}
                    />
                  </LineChart>
                </ResponsiveContainer>
              </figure>
            </div>
          </>
        ) : (
          stats.isSuccess && <p>No payments in this period.</p>
        )}
      </section>
      <section aria-labelledby="latest-title">
        <h2 id="latest-title">Latest payments</h2>
        <ErrorNote error={latest.error} />
        {latest.data && (
          <PaymentsTable rows={latest.data.data} mode={mode} caption="The five newest payments" />
        )}
      </section>
    </>
  )
}

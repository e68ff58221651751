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
import { dashboardApi, inMode } from '../api/dashboard'
import { ErrorNote, PaymentsTable } from '../components'
import { money, percent } from '../format'
import { useMode } from '../layout'

function days(count: number): string[] {
  const out: string[] = []
  const today = new Date()
  for (let i = count - 1; i >= 0; i--)
    out.push(
      new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - i))
        .toISOString()
        .slice(0, 10),
    )
  return out
}

export function Home() {
  const mode = useMode()
  const [span, setSpan] = useState<7 | 30>(7)
  const balances = useQuery({
    queryKey: [mode, 'balances'],
    queryFn: () => data(api(mode).GET('/integration/balances')),
  })
  const stats = useQuery({
    queryKey: [mode, 'stats', span],
    queryFn: () =>
      data(dashboardApi.GET('/dashboard/api/stats', { params: { query: { days: span } }, ...inMode(mode) })),
  })
  const latest = useQuery({
    queryKey: [mode, 'transactions', 'latest'],
    queryFn: () => data(api(mode).GET('/integration/transactions', { params: { query: { per_page: 5 } } })),
  })

  const rows = stats.data?.data ?? []
  const currencies = [...new Set(rows.map((r) => r.currency))]
  const [currency, setCurrency] = useState<string | null>(null)
  const shown = currency ?? currencies[0] ?? null
  const series = days(span).map((day) => {
    const r = rows.find((x) => x.day === day && x.currency === shown)
    return {
      day: day.slice(5),
      volume: r ? r.volume : 0,
      rate:
        r && r.succeeded + r.failed ? Math.round((r.succeeded / (r.succeeded + r.failed)) * 1000) / 10 : null,
    }
  })
  const totals = rows
    .filter((r) => r.currency === shown)
    .reduce(
      (t, r) => ({
        volume: t.volume + r.volume,
        succeeded: t.succeeded + r.succeeded,
        finished: t.finished + r.succeeded + r.failed,
      }),
      {
        volume: 0,
        succeeded: 0,
        finished: 0,
      },
    )

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
                  {currencies.map((c) => (
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
            <p className="summary">
              Volume {money(totals.volume, shown)} · success rate {percent(totals.succeeded, totals.finished)}
            </p>
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

import { useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { useNavigate, useSearchParams } from 'react-router'
import { ApiError, data, setCsrfToken } from '../api/client'
import { dashboardApi } from '../api/dashboard'
import { ME_KEY } from '../session'

/** Where to go after signing in: a path of this dashboard only (never another site). */
const safeNext = (next: string | null) => (next && /^\/(test|live)(\/|$)/.test(next) ? next : '/test')

export function SignIn() {
  const [params] = useSearchParams()
  const navigate = useNavigate()
  const queryClient = useQueryClient()
  const [error, setError] = useState<string | null>(null)
  const [needsCode, setNeedsCode] = useState(false)
  const [busy, setBusy] = useState(false)

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    setBusy(true)
    setError(null)
    try {
      const me = await data(
        dashboardApi.POST('/dashboard/api/session', {
          body: {
            email: String(form.get('email')),
            password: String(form.get('password')),
            ...(needsCode ? { totp_code: String(form.get('totp_code')) } : {}),
          },
        }),
      )
      setCsrfToken(me.csrf_token)
      queryClient.setQueryData(ME_KEY, me)
      navigate(safeNext(params.get('next')), { replace: true })
    } catch (err) {
      if (err instanceof ApiError && err.code === 'totp_required') {
        setNeedsCode(true)
        setError('Enter the 6-digit code from your authenticator app.')
      } else setError(err instanceof Error ? err.message : String(err))
    } finally {
      setBusy(false)
    }
  }

  return (
    <main id="main" className="auth-page">
      <h1>Sign in to the merchant dashboard</h1>
      <form onSubmit={submit} className="card form" aria-describedby={error ? 'sign-in-error' : undefined}>
        <label>
          Email
          <input name="email" type="email" autoComplete="username" required />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" required />
        </label>
        {needsCode && (
          <label>
            Authentication code
            <input
              name="totp_code"
              inputMode="numeric"
              autoComplete="one-time-code"
              pattern="[0-9]{6}"
              required
            />
          </label>
        )}
        {error && (
          <p id="sign-in-error" role="alert" className="error">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  )
}

import { type FormEvent, useState } from 'react'
import { Link, useSearchParams } from 'react-router'
import { noContent } from '../api/client'
import { dashboardApi } from '../api/dashboard'

/** The page an invitation's link opens: choose a password, once. */
export function SetPassword() {
  const [params] = useSearchParams()
  const token = params.get('token') ?? ''
  const [error, setError] = useState<string | null>(null)
  const [done, setDone] = useState(false)

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault()
    const form = new FormData(event.currentTarget)
    const password = String(form.get('password'))
    if (password !== String(form.get('confirm'))) {
      setError('The two passwords are not the same.')
      return
    }
    try {
      await noContent(dashboardApi.POST('/dashboard/api/invitations/accept', { body: { token, password } }))
      setDone(true)
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err))
    }
  }

  return (
    <main id="main" className="auth-page">
      <h1>Choose your password</h1>
      {done ? (
        <p className="card" role="status">
          Your password is set. <Link to="/sign-in">Sign in</Link>.
        </p>
      ) : (
        <form onSubmit={submit} className="card form">
          {!token && <p className="error">This link has no invitation token: use the link you were sent.</p>}
          <label>
            New password (at least 12 characters)
            <input name="password" type="password" autoComplete="new-password" minLength={12} required />
          </label>
          <label>
            The same password again
            <input name="confirm" type="password" autoComplete="new-password" minLength={12} required />
          </label>
          {error && (
            <p role="alert" className="error">
              {error}
            </p>
          )}
          <button type="submit" disabled={!token}>
            Set password
          </button>
        </form>
      )}
    </main>
  )
}

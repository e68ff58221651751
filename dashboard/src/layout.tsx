import { type KeyboardEvent, useEffect, useRef, useState } from 'react'
import { NavLink, Outlet, useLocation, useNavigate, useParams } from 'react-router'
import type { Mode } from './api/client'
import { SearchBox } from './pages/Search'
import { useCan, useMe, useSignOut } from './session'

/** The mode switch's choices, in its order. */
const MODE_LABELS: Record<Mode, string> = { live: 'Live', test: 'Test' }

/** The mode of the page: from its path (/dashboard/test/… or /dashboard/live/…). */
export function useMode(): Mode {
  const { mode } = useParams()
  return mode === 'live' ? 'live' : 'test'
}

/**
 * The same page in the other mode (a payment's page goes to the list: the payment is not in the other mode; a
 * search is made again there).
 */
function otherModePath(pathname: string, search: string, mode: Mode): string {
  const other = mode === 'test' ? 'live' : 'test'
  const rest = pathname.split('/').slice(2)
  const section = rest[0] === 'payments' || rest[0] === 'payouts' ? [rest[0]] : rest
  return `/${other}/${section.join('/')}${rest[0] === 'search' ? search : ''}`
}

/**
 * The sections' menu on a narrow screen (styles.css hides the button on a wide one, where the links show): the
 * button says whether it is open, opening it moves the focus to the first link, Escape closes it and gives the
 * focus back to the button, and following a link closes it.
 */
function useMenu() {
  const [open, setOpen] = useState(false)
  const button = useRef<HTMLButtonElement>(null)
  const list = useRef<HTMLUListElement>(null)
  const { pathname } = useLocation()
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new page closes the menu.
  useEffect(() => setOpen(false), [pathname])
  useEffect(() => {
    if (open) list.current?.querySelector('a')?.focus()
  }, [open])
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key !== 'Escape' || !open) return
    setOpen(false)
    button.current?.focus()
  }
  return { open, toggle: () => setOpen(!open), button, list, onKeyDown }
}

export function Layout() {
  const me = useMe()
  const mode = useMode()
  const location = useLocation()
  const navigate = useNavigate()
  const signOut = useSignOut()
  const canManage = useCan('manage_users')
  const canAudit = useCan('read_audit_log')
  const canDevelop = useCan('developer_tools')
  const menu = useMenu()
  const link = (to: string, label: string, end = false) => (
    <li>
      <NavLink to={`/${mode}${to}`} end={end}>
        {label}
      </NavLink>
    </li>
  )
  return (
    <div className={`shell mode-${mode}`}>
      {mode === 'test' && (
        <div className="test-banner" role="status">
          Test mode: test data only, no real money moves.
        </div>
      )}
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <button
          type="button"
          className="menu-button secondary"
          aria-expanded={menu.open}
          aria-controls="sections"
          ref={menu.button}
          onClick={menu.toggle}
        >
          Menu
        </button>
        <span className="brand">Merchant dashboard</span>
        <SearchBox />
        <fieldset className="mode-switch">
          <legend className="visually-hidden">Mode</legend>
          {(Object.keys(MODE_LABELS) as Mode[]).map((m) => (
            <label key={m} className={m === mode ? 'on' : ''}>
              <input
                type="radio"
                name="mode"
                value={m}
                checked={m === mode}
                onChange={() =>
                  navigate(
                    m === mode ? location.pathname : otherModePath(location.pathname, location.search, mode),
                  )
                }
              />
              {MODE_LABELS[m]}
            </label>
          ))}
        </fieldset>
        <span className="who">
          {me.user.email} <span className="role">({me.user.role})</span>
        </span>
        <button
          type="button"
          className="link-button"
          onClick={async () => {
            await signOut()
            navigate('/sign-in')
          }}
        >
          Sign out
        </button>
      </header>
      <nav
        aria-label="Sections"
        id="sections"
        className={menu.open ? 'sections open' : 'sections'}
        onKeyDown={menu.onKeyDown}
      >
        <ul ref={menu.list}>
          {link('', 'Home', true)}
          {link('/payments', 'Payments')}
          {link('/refunds', 'Refunds')}
          {link('/balances', 'Balances')}
          {link('/payouts', 'Payouts')}
          {canDevelop && link('/developers/webhooks', 'Webhooks')}
          {canDevelop && link('/developers/api-keys', 'API keys')}
          {link('/developers/events', 'Events')}
          {canManage && link('/settings/people', 'People')}
          {canAudit && link('/settings/audit-log', 'Audit log')}
          {link('/settings/security', 'Security')}
          {link('/settings/profile', 'Profile')}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {me.totp_enrolment_required && !location.pathname.endsWith('/settings/security') ? (
          <section className="card" role="alert">
            <h1>Set up two-factor sign-in</h1>
            <p>
              Your merchant requires an authenticator app for every sign-in. Set it up on the{' '}
              <NavLink to={`/${mode}/settings/security`}>security page</NavLink> to use the dashboard.
            </p>
          </section>
        ) : (
          <Outlet />
        )}
      </main>
    </div>
  )
}
